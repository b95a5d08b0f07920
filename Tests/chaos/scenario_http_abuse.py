"""Bad input of every kind the SPEC lists, and more, on the hot routes (samples, event
stream) and the router's (sessions, items, static files): malformed and smuggling-shaped
framing, oversized heads, a stalled head, invalid UTF-8, deep nesting, lone surrogates,
absurd numbers, duplicate keys, bodies over the limit, wrong methods, escaping paths.

Invariants, per case: a 4xx answer (a JSON `{"error", "message"}` body whenever the server
answers; closing without an answer is accepted only for framing the parser cannot read, and
each such case is named), never a 5xx, never a second answer smuggled out of one request;
afterwards the server is healthy (`/healthz` 200, a sample still applies) and nothing the
refused request carried changed the session or the feed (its state, its ignored samples,
the number of items)."""
import contextlib
import json
import re
import socket
import time

from lib import Server, check, figure, finish, pick, request, request_json

ROUNDS = pick(1, 5)  # how often the whole table runs against one server
# RFC 9112 §6.1 asks for 501 when a transfer coding is not understood, and the manual
# documents 505 for an event stream over HTTP/1.0 (its body must be chunked): the only 5xx
# a bad request may get. Never 500, 502, 503 or 504.
RFC_5XX = {"TE gzip, chunked": {501}, "TE xchunked": {501}, "events: HTTP/1.0": {505}}
HEAD_TIMEOUT = 2

server = Server("--request-head-timeout", str(HEAD_TIMEOUT), "--no-demo")
server.start()
HOST = f"127.0.0.1:{server.port}"


def exchange(data, timeout=5):
    """Sends bytes and reads the first answer whole (then a moment more, so a second answer
    smuggled out of the same bytes shows): (answer, closed_by_server)."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=timeout) as connection:
        try:
            connection.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            pass
        received = b""
        deadline = time.monotonic() + timeout
        closed = False
        while time.monotonic() < deadline:
            if complete(received):
                deadline = min(deadline, time.monotonic() + 0.15)
            connection.settimeout(max(0.01, deadline - time.monotonic()))
            try:
                chunk = connection.recv(65536)
            except socket.timeout:
                break
            except ConnectionResetError:
                closed = True
                break
            if not chunk:
                closed = True
                break
            received += chunk
        return received, closed


def complete(data):
    """Whether `data` holds at least one whole HTTP answer."""
    head, separator, body = data.partition(b"\r\n\r\n")
    if not separator:
        return False
    if re.search(rb"(?i)\r\ntransfer-encoding: *chunked", head):
        return b"0\r\n\r\n" in body
    length = re.search(rb"(?i)\r\ncontent-length: *(\d+)", head)
    return len(body) >= int(length.group(1)) if length else True


def answers(data):
    """Every status line in a byte stream (more than one means a request was smuggled)."""
    return [int(s) for s in re.findall(rb"HTTP/1\.[01] (\d{3})", data)]


def json_body(data):
    head, _, body = data.partition(b"\r\n\r\n")
    if b"transfer-encoding: chunked" in head.lower():
        decoded = b""
        while body:
            size_line, _, rest = body.partition(b"\r\n")
            size = int(size_line.split(b";")[0] or b"0", 16)
            if size == 0:
                break
            decoded += rest[:size]
            body = rest[size + 2:]
        body = decoded
    return json.loads(body)


# ---------------------------------------------------------------- the table of cases

def sample(seq):
    return json.dumps({"seq": seq, "t": seq * 16, "y": -30, "phase": "drag"}).encode()


ITEM = json.dumps({"title": "smuggled item"}).encode()


def post(path, body, extra=b"", content_length=True):
    head = f"POST {path} HTTP/1.1\r\nHost: {HOST}\r\nContent-Type: application/json\r\n".encode()
    if content_length:
        head += f"Content-Length: {len(body)}\r\n".encode()
    return head + extra + b"\r\n" + body


def chunked(path, chunks_bytes, extra=b""):
    return (f"POST {path} HTTP/1.1\r\nHost: {HOST}\r\nContent-Type: application/json\r\n"
            f"Transfer-Encoding: chunked\r\n").encode() + extra + b"\r\n" + chunks_bytes


def get(path, extra=b"", version=b"HTTP/1.1"):
    return b"GET " + path + b" " + version + b"\r\nHost: " + HOST.encode() + b"\r\n" + extra + b"\r\n"


def cases(session, seq):
    """(name, bytes, framing) — framing: the parser cannot read it, so closing silently is
    acceptable. `seq` is a fresh sequence number: if a refused request were applied, the
    session's state would show it."""
    S = f"/api/sessions/{session}/samples"
    E = f"/api/sessions/{session}/events"
    body = sample(seq)
    smuggled = b"GET /healthz HTTP/1.1\r\nHost: " + HOST.encode() + b"\r\n\r\n"
    nested = b"[" * 10000 + b"]" * 10000
    nested_object = b'{"a":' * 10000 + b"1" + b"}" * 10000
    big_digits = "9" * 400
    table = []
    for path, payload in ((S, body), ("/api/items", ITEM), ("/api/sessions", b'{"preset":"default"}')):
        # Framing and smuggling shapes.
        table += [
            (f"CL+TE {path}", post(path, b"0\r\n\r\n" + smuggled, b"Transfer-Encoding: chunked\r\n"), True),
            (f"TE+CL {path}", chunked(path, b"5\r\n" + payload[:5] + b"\r\n0\r\n\r\n", f"Content-Length: {len(payload)}\r\n".encode()), True),
            (f"two different Content-Lengths {path}", post(path, payload, f"Content-Length: {len(payload) + 7}\r\n".encode()), True),
            (f"Content-Length list 'n, n+1' {path}", post(path, payload, content_length=False,
                                                          extra=f"Content-Length: {len(payload)}, {len(payload) + 1}\r\n".encode()), True),
            (f"Content-Length not a number {path}", post(path, payload, b"Content-Length: 12abc\r\n", content_length=False), True),
            (f"Content-Length negative {path}", post(path, payload, b"Content-Length: -1\r\n", content_length=False), True),
            (f"Content-Length 2^70 {path}", post(path, payload, b"Content-Length: 1180591620717411303424\r\n", content_length=False), True),
            (f"TE gzip, chunked {path}", chunked(path, b"0\r\n\r\n").replace(b"chunked\r\n", b"gzip, chunked\r\n", 1), True),
            (f"TE chunked, chunked {path}", chunked(path, b"0\r\n\r\n").replace(b"chunked\r\n", b"chunked, chunked\r\n", 1), True),
            (f"TE xchunked {path}", chunked(path, b"0\r\n\r\n").replace(b"chunked\r\n", b"xchunked\r\n", 1), True),
            (f"two Transfer-Encoding fields {path}", chunked(path, b"0\r\n\r\n", b"Transfer-Encoding: identity\r\n"), True),
            (f"chunk size not hex {path}", chunked(path, b"zz\r\n" + payload + b"\r\n0\r\n\r\n"), True),
            (f"chunk size negative {path}", chunked(path, b"-5\r\n" + payload + b"\r\n0\r\n\r\n"), True),
            (f"chunk size 2^72 {path}", chunked(path, b"1000000000000000000\r\n" + payload + b"\r\n0\r\n\r\n"), True),
            (f"chunk missing CRLF {path}", chunked(path, f"{len(payload):x}\r\n".encode() + payload + b"XX0\r\n\r\n"), True),
            (f"chunk size line with bare LF {path}", chunked(path, f"{len(payload):x}\n".encode() + payload + b"\n0\n\n"), True),
            (f"obs-fold header {path}", post(path, payload, b"X-Folded: a\r\n  b\r\n"), True),
            (f"space before colon {path}", post(path, payload, b"Content-Type : application/json\r\n"), True),
            (f"bare LF line endings {path}", post(path, payload).replace(b"\r\n", b"\n"), True),
            (f"NUL in a header value {path}", post(path, payload, b"X-Null: a\x00b\r\n"), True),
            (f"no Host {path}", post(path, payload).replace(f"Host: {HOST}\r\n".encode(), b""), False),
            (f"two Hosts {path}", post(path, payload, b"Host: evil.example\r\n"), False),
            (f"Expect: 999-bogus {path}", post(path, payload, b"Expect: 999-bogus\r\n"), False),
            (f"body over the limit (Content-Length) {path}", post(path, b'{"pad":"' + b"x" * 70000 + b'"}'), False),
            (f"body over the limit (chunked) {path}",
             chunked(path, b"".join(b"4000\r\n" + b" " * 0x4000 + b"\r\n" for _ in range(5)) + b"0\r\n\r\n"), False),
            # Bodies the JSON decoder must refuse.
            (f"invalid UTF-8 in JSON {path}", post(path, b'{"title":"\xff\xfe","seq":' + str(seq).encode() + b',"y":-1}'), False),
            (f"10,000 nested arrays {path}", post(path, nested), False),
            (f"10,000 nested objects {path}", post(path, nested_object), False),
            (f"truncated JSON {path}", post(path, payload[:-1]), False),
            (f"trailing garbage {path}", post(path, payload + b"}"), False),
            (f"two JSON documents {path}", post(path, payload + payload), False),
            (f"JSON with comment {path}", post(path, b"/*x*/" + payload), False),
            (f"not JSON {path}", post(path, b"seq=1&y=2"), False),
            *([] if path == "/api/sessions" else [(f"empty body {path}", post(path, b""), False)]),
            (f"JSON string only {path}", post(path, b'"hello"'), False),
            (f"JSON null {path}", post(path, b"null"), False),
        ]
    table += [
        # Hot route: samples with bad values.
        ("sample lone surrogate in phase", post(S, f'{{"seq":{seq},"y":-1,"phase":"\\ud800"}}'.encode()), False),
        ("sample y 1e400", post(S, f'{{"seq":{seq},"y":1e400}}'.encode()), False),
        ("sample y -1e400", post(S, f'{{"seq":{seq},"y":-1e400}}'.encode()), False),
        ("sample seq 400 digits", post(S, f'{{"seq":{big_digits},"y":-1}}'.encode()), False),
        ("sample y 400 digits", post(S, f'{{"seq":{seq},"y":-{big_digits}}}'.encode()), False),
        ("sample y NaN", post(S, f'{{"seq":{seq},"y":NaN}}'.encode()), False),
        ("sample y Infinity", post(S, f'{{"seq":{seq},"y":Infinity}}'.encode()), False),
        ("sample y -Infinity", post(S, f'{{"seq":{seq},"y":-Infinity}}'.encode()), False),
        ("sample y 1e8", post(S, f'{{"seq":{seq},"y":1e8}}'.encode()), False),
        ("sample negative contentHeight", post(S, f'{{"seq":{seq},"y":-1,"contentHeight":-5,"viewportHeight":100}}'.encode()), False),
        ("sample duplicate key", post(S, f'{{"seq":{seq},"y":-10,"y":-200}}'.encode()), False),
        ("sample seq as string", post(S, f'{{"seq":"{seq}","y":-1}}'.encode()), False),
        ("sample seq fractional", post(S, f'{{"seq":{seq}.5,"y":-1}}'.encode()), False),
        ("sample seq negative", post(S, b'{"seq":-1,"y":-1}'), False),
        ("sample missing y", post(S, f'{{"seq":{seq}}}'.encode()), False),
        ("sample unknown phase", post(S, f'{{"seq":{seq},"y":-1,"phase":"fling"}}'.encode()), False),
        ("samples array of 65", post(S, json.dumps({"samples": [{"seq": seq + i, "y": -1} for i in range(65)]}).encode()), False),
        ("samples batch with one bad", post(S, json.dumps({"samples": [{"seq": seq, "y": -1}, {"seq": seq + 1, "y": "x"}]}).encode()), False),
        ("samples on an unknown session", post("/api/sessions/nope/samples", body), False),
        ("samples: invalid UTF-8 in the path", post("/api/sessions/@@/samples", body).replace(b"@@", b"\xff\xfe"), True),
        ("samples: percent-encoded NUL session", post("/api/sessions/%00/samples", body), False),
        ("samples: session id + percent NUL", post(f"/api/sessions/{session}%00/samples", body), False),
        ("samples: PUT", post(S, body).replace(b"POST", b"PUT", 1), False),
        ("samples: GET", get(S.encode()), False),
        ("samples: DELETE", get(S.encode()).replace(b"GET", b"DELETE", 1), False),
        # Hot route: the event stream.
        ("events: Last-Event-ID not a number", get(E.encode(), b"Last-Event-ID: abc\r\n"), False),
        ("events: Last-Event-ID 400 digits", get(E.encode(), b"Last-Event-ID: " + big_digits.encode() + b"\r\n"), False),
        ("events: Last-Event-ID negative", get(E.encode(), b"Last-Event-ID: -1\r\n"), False),
        ("events: unknown session", get(b"/api/sessions/nope/events"), False),
        ("events: POST", post(E, b"{}"), False),
        ("events: HTTP/1.0", get(E.encode(), version=b"HTTP/1.0"), False),
        ("events: body on GET (chunked)", get(E.encode(), b"Transfer-Encoding: chunked\r\n") + b"zz\r\n", True),
        # Router routes.
        ("sessions: unknown preset", post("/api/sessions", b'{"preset":"nope"}'), False),
        ("sessions: unknown config field", post("/api/sessions", b'{"config":{"bogus":1}}'), False),
        ("sessions: threshold 1e400", post("/api/sessions", b'{"config":{"top":{"threshold":1e400}}}'), False),
        ("sessions: threshold NaN", post("/api/sessions", b'{"config":{"top":{"threshold":NaN}}}'), False),
        ("sessions: threshold negative", post("/api/sessions", b'{"config":{"top":{"threshold":-5}}}'), False),
        ("sessions: lone surrogate label", post("/api/sessions", b'{"config":{"top":{"labels":{"pull":"\\ud800"}}}}'), False),
        ("sessions: duplicate key", post("/api/sessions", b'{"preset":"default","preset":"nope"}'), False),
        ("sessions: PUT", post("/api/sessions", b"{}").replace(b"POST", b"PUT", 1), False),
        ("items: lone surrogate title", post("/api/items", b'{"title":"a\\ud800b"}'), False),
        ("items: lone low surrogate", post("/api/items", b'{"title":"a\\udc00b"}'), False),
        ("items: title 1e400", post("/api/items", b'{"title":1e400}'), False),
        ("items: title empty", post("/api/items", b'{"title":""}'), False),
        ("items: title over 500 characters", post("/api/items", json.dumps({"title": "t" * 501}).encode()), False),
        ("items: id over 500 characters", post("/api/items", json.dumps({"title": "t", "id": "i" * 501}).encode()), False),
        ("items: NUL in the title", post("/api/items", b'{"title":"k\\u0000A"}'), False),
        ("items: NUL in the id", post("/api/items", b'{"title":"t","id":"k\\u0000A"}'), False),
        ("items: title of 100 characters, 1,100 code points",
         post("/api/items", json.dumps({"title": ("a" + "\u0301" * 10) * 100}).encode()), False),
        ("items: link without a host", post("/api/items", b'{"title":"t","link":"https://"}'), False),
        ("items: published not a time", post("/api/items", b'{"title":"t","published":"yesterday"}'), False),
        ("items: published year 99999", post("/api/items", b'{"title":"t","published":"99999-01-01T00:00:00Z"}'), False),
        ("items: link javascript:", post("/api/items", b'{"title":"t","link":"javascript:alert(1)"}'), False),
        ("items: 501 items", post("/api/items", json.dumps({"items": [{"title": f"t{i}"} for i in range(501)]}).encode()), False),
        ("items: empty items array", post("/api/items", b'{"items":[]}'), False),
        ("items: one bad item in a batch", post("/api/items", b'{"items":[{"title":"ok"},{"title":5}]}'), False),
        ("items: duplicate key", post("/api/items", b'{"title":"a","title":"b"}'), False),
        ("items: NaN token", post("/api/items", b'{"title":NaN}'), False),
        ("items: limit 0", get(b"/api/items?limit=0"), False),
        ("items: limit 400 digits", get(b"/api/items?limit=" + big_digits.encode()), False),
        ("items: limit NaN", get(b"/api/items?limit=NaN"), False),
        ("items: before unknown", get(b"/api/items?before=nope"), False),
        ("items: before and after", get(b"/api/items?before=a&after=b"), False),
        ("items: percent-encoded NUL cursor", get(b"/api/items?before=%00"), False),
        ("items: invalid UTF-8 in query", get(b"/api/items?before=\xff\xfe"), True),
        ("items: PATCH", post("/api/items", ITEM).replace(b"POST", b"PATCH", 1), False),
        ("items: DELETE", get(b"/api/items").replace(b"GET", b"DELETE", 1), False),
        ("healthz: DELETE", get(b"/healthz").replace(b"GET", b"DELETE", 1), False),
        ("session GET unknown", get(b"/api/sessions/nope"), False),
        ("session refresh unknown", post("/api/sessions/nope/refresh", b""), False),
        ("session load-more unknown", post("/api/sessions/nope/load-more", b""), False),
        # Paths that try to leave Public/.
        ("path /../", get(b"/../Package.swift"), True),
        ("path /../../etc/passwd", get(b"/../../../../etc/passwd"), True),
        ("path %2e%2e", get(b"/%2e%2e/%2e%2e/etc/passwd"), False),
        ("path ..%2f", get(b"/..%2f..%2fPackage.swift"), False),
        ("path ..%5c", get(b"/..%5c..%5cPackage.swift"), False),
        ("path double-encoded", get(b"/%252e%252e/Package.swift"), False),
        ("path percent-encoded NUL", get(b"/index.html%00.txt"), False),
        ("path raw NUL", get(b"/index\x00.html"), True),
        ("path invalid UTF-8", get(b"/\xff\xfe.html"), True),
        ("path invalid percent escape", get(b"/%zz"), False),
        ("path absolute-form other host", get(b"http://evil.example/../Package.swift"), False),
        ("path asterisk-form on GET", get(b"*"), False),
        ("path 8 KiB", get(b"/" + b"a" * 8000), False),
        # Heads.
        ("head over the limit (one field)", get(b"/healthz", b"X-Big: " + b"a" * 20000 + b"\r\n"), True),
        ("head with 3,000 fields", get(b"/healthz", b"".join(b"X-%d: 1\r\n" % i for i in range(3000))), True),
        ("request line 20 KiB", get(b"/" + b"a" * 20000), True),
        ("method not a token", get(b"/healthz").replace(b"GET", b"G(T", 1), True),
        ("HTTP/9.9", get(b"/healthz", version=b"HTTP/9.9"), True),
        ("HTTP/1.1 garbage", b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + b"\x00" * 64, True),
        ("empty request line", b"\r\n\r\n\r\n\r\n", True),
    ]
    return table


# ---------------------------------------------------------------- running the table

def items_count():
    count, before = 0, ""
    while True:
        status, page = request_json(server, "GET", f"/api/items?limit=200{'&before=' + before if before else ''}")
        if status != 200:
            return None
        count += len(page["items"])
        if not page["hasMore"] or not page["items"]:
            return count
        before = page["items"][-1]["id"]


def session_snapshot(session):
    status, data = request_json(server, "GET", f"/api/sessions/{session}")
    if status != 200:
        return None
    return {"state": data["state"], "ignored": data.get("ignoredSamples")}


def new_session():
    status, data = request_json(server, "POST", "/api/sessions", {"preset": "default"})
    assert status == 201, (status, data)
    return data["id"]


statuses = {}
refused_ok = silent_closes = bad = unhealthy = changed = smuggled_answers = 0
silent_cases = []
total = 0
seq = 1
session = new_session()
started = time.monotonic()
for round_ in range(ROUNDS):
    for name, data, framing in cases(session, seq + 1000 * (round_ + 1)):
        total += 1
        before_items = items_count()
        before_session = session_snapshot(session)
        answer, closed = exchange(data, timeout=3)
        codes = answers(answer)
        code = codes[0] if codes else None
        statuses[code if code else "closed"] = statuses.get(code if code else "closed", 0) + 1
        if len(codes) > 1:
            smuggled_answers += 1
            check(f"{name}: one answer, nothing smuggled", False, codes)
        if code is None:
            silent_closes += 1
            silent_cases.append(name)
            if not check(f"{name}: closed without answer only for unreadable framing", framing and closed,
                         f"framing={framing} closed={closed} got={answer[:80]!r}"):
                bad += 1
        elif not (400 <= code < 500 or code in RFC_5XX.get(name.split(" /")[0], ())):
            bad += 1
            check(f"{name}: a 4xx", False, answer[:300])
        else:
            try:
                error = json_body(answer)
                good = isinstance(error, dict) and isinstance(error.get("error"), str) and isinstance(error.get("message"), str)
            except (ValueError, IndexError):
                good = False
            if good:
                refused_ok += 1
            else:
                bad += 1
                check(f"{name}: {code} with a JSON error body", False, answer[:300])
        healthy = request(server, "GET", "/healthz")[0] == 200 and server.alive()
        if not healthy:
            unhealthy += 1
            check(f"{name}: healthz answers 200 afterwards", False)
            server.kill()
            server.start()
            session = new_session()
            continue
        after_session = session_snapshot(session)
        if items_count() != before_items or after_session != before_session:
            changed += 1
            check(f"{name}: nothing changed", False, f"items {before_items}→{items_count()}, session {before_session}→{after_session}")
        # A normal sample still applies on the same session (fresh seq each time).
        seq += 1
        status, data_ = request_json(server, "POST", f"/api/sessions/{session}/samples", {"seq": seq, "t": seq, "y": 0, "phase": "scroll"})
        if status != 200:
            unhealthy += 1
            check(f"{name}: a normal sample applies afterwards", False, (status, data_))

# A stalled head: the deadline closes it (or answers 408), and the server serves others meanwhile.
# The head trickles a byte every half second for up to 20 s: a deadline that each byte moved
# would never close it meanwhile; one that counts from the first byte closes it after 2 s.
with socket.create_connection(("127.0.0.1", server.port), timeout=HEAD_TIMEOUT + 5) as slow:
    slow.sendall(f"POST /api/items HTTP/1.1\r\nHost: {HOST}\r\nX-Slow: ".encode())
    began = time.monotonic()
    rest = b""
    slow.setblocking(False)
    for index in range(40):
        time.sleep(0.5)
        try:
            got = slow.recv(65536)
            rest = got if got else b"closed"
            break
        except BlockingIOError:
            pass
        except OSError:
            rest = b"closed"
            break
        try:
            slow.sendall(b"a")
        except OSError:
            rest = b"closed"
            break
        if index == 1:
            check("a slow head does not block others", request(server, "GET", "/healthz", timeout=10)[0] == 200)
    else:
        rest = b"timeout"
    waited = time.monotonic() - began
    slow.setblocking(True)
    slow.settimeout(5)
    with contextlib.suppress(OSError):
        while rest not in (b"closed", b"timeout") and not rest.endswith(b"}") and len(rest) < 4096:
            more = slow.recv(65536)
            if not more:
                break
            rest += more
    code = answers(rest)[0] if answers(rest) else None
    check("a slowloris head is cut at its deadline (closed, or 408)", rest != b"timeout" and (code in (None, 408)),
          f"{rest[:120]!r} after {waited:.1f}s")
    check("the deadline counts from the first byte (trickling does not extend it)", waited < HEAD_TIMEOUT + 8, f"{waited:.1f}s")
    total += 1
    statuses[code or "closed"] = statuses.get(code or "closed", 0) + 1

# Many stalled heads at once (a slowloris crowd) do not stop the server answering.
crowd = []
for _ in range(pick(50, 400)):
    c = socket.create_connection(("127.0.0.1", server.port))
    c.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
    crowd.append(c)
check("a crowd of stalled heads: healthz still answers", request(server, "GET", "/healthz", timeout=10)[0] == 200)
time.sleep(HEAD_TIMEOUT + 0.5)
# Each is read until the server closes it, within half a minute in all: the deadline closes
# them all after 2 s, however long the machine takes to get round to it.
crowd_deadline = time.monotonic() + 30
closed_crowd = 0
for c in crowd:
    c.settimeout(max(0.1, crowd_deadline - time.monotonic()))
    try:
        data = c.recv(65536)
        if data == b"" or answers(data) == [408]:
            closed_crowd += 1
    except (socket.timeout, ConnectionResetError):
        pass
    c.close()
check("every stalled head of the crowd is closed after the deadline", closed_crowd == len(crowd), f"{closed_crowd}/{len(crowd)}")

elapsed = time.monotonic() - started
check("every bad request got a 4xx or (unreadable framing only) a close", bad == 0, bad)
check("never a 5xx but RFC 9112's 501 and 505", not any(isinstance(s, int) and s >= 500 and s not in (501, 505) for s in statuses), statuses)
check("no request smuggled a second answer", smuggled_answers == 0)
check("healthy after every case", unhealthy == 0, unhealthy)
check("no refused request changed the session or the feed", changed == 0, changed)
check("the server never died", server.alive())
figure("cases", total)
figure("answered 4xx with a JSON error", refused_ok)
figure("closed without answer (unreadable framing)", silent_closes)
print("  closed without an answer:", ", ".join(silent_cases) or "none", flush=True)
figure("statuses seen", json.dumps({str(k): v for k, v in sorted(statuses.items(), key=lambda kv: str(kv[0]))}))
figure("duration", elapsed, "s")
server.stop()
finish()
