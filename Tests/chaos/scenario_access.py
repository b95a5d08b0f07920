"""Private feeds under attack: a server with keys (an HMAC secret, a P-256 PEM, an Ed25519
key in a JWKS document) and an issuer; several private feeds `user:N`, each with a few items
and an owner. Good clients, one per feed, hold a session created with the owner's token and
its stream open (by header or by the `ptr_token` cookie, in turn) in live mode, so each
publish arrives as an `items` event, which is never coalesced; a publisher adds items to
every feed with each owner's token meanwhile. At the same time many bad clients, each from
its own loopback address, send random bad credentials at random routes:

- credentials: expired, `nbf` ahead, `alg: none`, HS256 signed with the P-256 public key as
  its secret (with and without that key's `kid`), an unknown `kid`, a header `alg` that is
  not its key's, a tampered payload, a truncated token, one over 8 KiB, no `exp`, another
  issuer, an audience, rights that do not parse, a signature by another Ed25519 key, garbage
  bytes; another feed's valid token; a reader's token of the right feed but another `sub`
  (on the owner's stream); a read-only token publishing; the owner's valid token in two
  `Authorization` fields, under `Basic`, in a cookie of another name or case, or in the URL;
  cookies: a bad one, a quoted bad one, a bad one before another feed's valid one;
- routes: a page of the feed, its head, a session on it, a publish to it (each sent twice,
  to the private feed and to one that never existed, and the two answers compared), the
  stream of the owner's session (`GET`, half of them asking a replay from `Last-Event-ID:
  0`, and `HEAD`, whose refusal tells its reason by its `Content-Length` alone), and
  `main`'s page and publish (invalid tokens only: `main` is public).

Invariants: every bad request gets the SPEC's answer (`401 invalid_token` with
`WWW-Authenticate: Bearer error="invalid_token"` and the message of the reason the
credential deserves, or `403 insufficient_scope` with its challenge), never 200/201/5xx,
the same status, challenge and body for an existing and a missing feed; 0 leaks (no bad
answer holds a private title or id, every refusal body is exactly `{error, message}`, no
good stream holds an item or news of another feed); each good stream gets every accepted
publish to its feed exactly once; every good publish is accepted, and nothing a refused
publish carried is stored (heads at the end are the seeds plus the accepted publishes,
missing feeds stay empty); `ptr_auth_refused_total{reason}` grew by exactly the refusals
the answers name; the server alive, its RSS bounded; no token in its log."""
import asyncio
import json
import os
import pathlib
import random
import re
import shutil
import tempfile
import time

from lib import (EventStream, HTTPClient, Monitor, Response, Server, check, client_address, connect, figure,
                 finish, pick, raise_fd_limit, request)
from jwt_tokens import EcKey, Ed25519Key, HmacKey, claims, encode, mint, tampered, unsigned, write_jwks

FEEDS = pick(4, 12)
SEEDS = 3  # items per private feed before the attack
BAD_CLIENTS = pick(16, 64)
BAD_REQUESTS = pick(600, 20000)  # requests in all, each pair to an existing and a missing feed counting two
ATTACK_SECONDS = pick(5, 60)  # the pace: the bad requests spread over this many seconds
PUBLISH_EVERY = 0.1  # seconds between the publisher's rounds over every feed
RUN_LIMIT = ATTACK_SECONDS * 3 + 20  # seconds the attack may take at most, whatever is left of its count
ISSUER = "https://login.example"
RSS_GROWTH_BOUND_KIB = 64 * 1024  # refused requests keep nothing: growth beyond this is a leak

raise_fd_limit()
SEED = int(os.environ.get("CHAOS_SEED") or random.SystemRandom().randrange(1 << 32))  # CHAOS_SEED=N draws again
random.seed(SEED)
work = pathlib.Path(tempfile.mkdtemp(prefix="ptr-chaos-access."))
hmac_key = HmacKey(kid="app")  # the server names a secret file's key by its file name
ec_key = EcKey(kid="ec-2026")
ed_key = Ed25519Key(kid="ed-1")
hmac_key.write_secret(work / "app.secret")
ec_key.write_pem(work / "ec-2026.pem")
write_jwks(work / "keys.jwks", [ed_key])
SIGNERS = [hmac_key, ec_key, ed_key]

# Debug: every refusal is logged, so the log has every chance to show a token.
server = Server("--no-demo", "--log-level", "debug", "--auth-key", str(work / "app.secret"),
                "--auth-key", str(work / "ec-2026.pem"), "--auth-key", str(work / "keys.jwks"),
                "--auth-issuer", ISSUER, "--reconnect-delay-ms", "200")
server.start()
HOST = "127.0.0.1"

feeds = [f"user:{n}" for n in range(1, FEEDS + 1)]
missing = {feed: f"user:{9000 + n}" for n, feed in enumerate(feeds, 1)}  # never published to
MARK = f"secret{random.randrange(1 << 30):x}"  # in every private title and id: a leak shows it


def token(feed, *, signer=None, sub=None, read=True, publish=True, **fields):
    """A valid token of `feed`'s owner (or of `sub`), signed by `signer` or the owner's key."""
    n = feeds.index(feed)
    signer = signer or SIGNERS[n % len(SIGNERS)]
    return mint(signer, sub=sub or f"owner-{n + 1}", read=[feed] if read else [], publish=[feed] if publish else [],
                iss=fields.pop("iss", ISSUER), lifetime=fields.pop("lifetime", 3600), **fields)


owners = {feed: token(feed) for feed in feeds}
auditor = mint(hmac_key, sub="auditor", read=["*"], iss=ISSUER, lifetime=3600)
all_tokens = set(owners.values()) | {auditor}


seed_statuses = []
for feed in feeds:
    for n in range(SEEDS):
        item = {"id": f"{MARK}-{feed}-s{n}", "title": f"{MARK} {feed} seed {n}"}
        seed_statuses.append(request(server, "POST", f"/api/feeds/{feed}/items", item,
                                     {"Authorization": "Bearer " + owners[feed]}).status)
check("every owner seeds its feed (201)", set(seed_statuses) == {201}, seed_statuses)


# ---------------------------------------------------------------- the answers the SPEC gives

MESSAGES = {  # each reason's refusal message, as the server words it ("its message says which")
    "missing": "This needs a token: Authorization: Bearer TOKEN, or the cookie ptr_token.",
    "too_large": "The token is larger than 8192 bytes.",
    "malformed": "The token is not a JWT this server reads (three base64url parts, exp required, no crit).",
    "unknown_key": "The token's kid names no key of this server.",
    "algorithm": "The token's alg is not its key's algorithm.",
    "signature": "The token's signature does not verify.",
    "expired": "The token has expired.",
    "not_yet_valid": "The token is not valid yet (nbf).",
    "issuer": "The token's iss is not the issuer this server trusts.",
    "audience": "The token's aud does not name this server.",
    "rights": "The token's ptr claim does not parse: each right is a feed name or a prefix followed by *.",
    "insufficient_scope": "The token does not give this right.",
}
REASON_OF = {message: reason for reason, message in MESSAGES.items()}


def body_length(reason):
    """The Content-Length of a refusal for `reason`: a HEAD answer has only that to tell it."""
    code = "insufficient_scope" if reason == "insufficient_scope" else "invalid_token"
    return len(json.dumps({"error": code, "message": MESSAGES[reason]}, separators=(",", ":")).encode())


def garbage():
    alphabet = [chr(c) for c in range(0x21, 0x7F)] + [" ", "\u00e9", "\u00ff", "."]
    return random.choice("abcdefgh") + "".join(random.choice(alphabet) for _ in range(random.randrange(1, 300)))


def truncated(feed):
    whole = token(feed)
    return whole[:random.randrange(1, len(whole) - 1)]


def other_feed(feed):
    return random.choice([f for f in feeds if f != feed]) if len(feeds) > 1 else "user:0"


def other_token(feed):
    other = other_feed(feed)
    return token(other) if other in feeds else mint(hmac_key, sub="x", read=[other], iss=ISSUER)


# Each case: name -> (credentials for a target feed, the reasons allowed, routes it applies to).
# Credentials are (headers as a list of pairs, the query string); INVALID cases are refused
# wherever they are sent, `main` too; the others only where a right is needed.
def bearer(text):
    return [("Authorization", "Bearer " + text)], ""


def cookie(text):
    return [("Cookie", text)], ""


INVALID = {
    "expired": (lambda f: bearer(token(f, exp=time.time() - 120)), {"expired"}),
    "nbf ahead": (lambda f: bearer(token(f, nbf=int(time.time()) + 3600)), {"not_yet_valid"}),
    "alg none": (lambda f: bearer(unsigned(claims(sub="x", read=["*"], publish=["*"], iss=ISSUER))), {"algorithm"}),
    "alg none with a kid": (lambda f: bearer(encode(hmac_key, claims(sub="x", read=["*"], iss=ISSUER), alg="none")),
                            {"algorithm"}),
    "HS256 with the public key as secret, its kid": (
        lambda f: bearer(mint(HmacKey(secret=ec_key.public_pem(), kid="ec-2026"), sub="x", read=["*"], publish=["*"], iss=ISSUER)),
        {"algorithm"}),
    "HS256 with the public key as secret, no kid": (
        lambda f: bearer(mint(HmacKey(secret=ec_key.public_pem()), sub="x", read=["*"], publish=["*"], iss=ISSUER)),
        {"signature"}),
    "unknown kid": (lambda f: bearer(token(f, signer=hmac_key, kid="retired-2025")), {"unknown_key"}),
    "HS256 header on the Ed25519 kid": (lambda f: bearer(token(f, signer=HmacKey(kid="ed-1"))), {"algorithm"}),
    "signed by another Ed25519 key": (lambda f: bearer(token(f, signer=Ed25519Key(kid="ed-1"))), {"signature"}),
    "tampered payload": (lambda f: bearer(tampered(other_token(f), ptr={"read": ["*"], "publish": ["*"]}, sub="owner")),
                         {"signature"}),
    "truncated": (lambda f: bearer(truncated(f)), {"malformed", "signature"}),
    "oversized": (lambda f: bearer(token(f, extra={"pad": "x" * random.randrange(8200, 11000)})), {"too_large"}),
    "no exp": (lambda f: bearer(token(f, lifetime=None)), {"malformed"}),
    "another issuer": (lambda f: bearer(token(f, iss="https://evil.example")), {"issuer"}),
    "an audience": (lambda f: bearer(token(f, aud="another-service")), {"audience"}),
    "rights that do not parse": (lambda f: bearer(mint(hmac_key, sub="x", read=[random.choice(["user:*:x", "**", ""])],
                                                       iss=ISSUER, lifetime=600)), {"rights"}),
    "garbage": (lambda f: bearer(garbage()), {"malformed"}),
    "owner's token twice": (lambda f: ([("Authorization", "Bearer " + owners[f])] * 2, ""), {"malformed"}),
    "owner's token and garbage": (lambda f: ([("Authorization", "Bearer " + owners[f]), ("Authorization", "Bearer " + garbage())], ""),
                                  {"malformed"}),
    "cookie: expired": (lambda f: cookie("ptr_token=" + token(f, exp=time.time() - 120)), {"expired"}),
    "cookie: quoted, tampered": (lambda f: cookie('ptr_token="' + tampered(owners[f], sub="someone") + '"'), {"signature"}),
    "cookie: two bad": (lambda f: cookie(f"theme=dark; ptr_token={garbage().replace(';', '')}; ptr_token={truncated(f)}"),
                        {"malformed", "signature"}),
}
NEEDS_RIGHT = {  # refused where a right is needed (private feeds, publishing, the owner's stream)
    "no token": (lambda f: ([], ""), {"missing"}),
    "owner's token under Basic": (lambda f: ([("Authorization", "Basic " + owners[f])], ""), {"missing"}),
    "owner's token in another cookie": (lambda f: cookie(f"xptr_token={owners[f]}; PTR_TOKEN={owners[f]}"), {"missing"}),
    "owner's token in the URL": (lambda f: ([], f"?access_token={owners[f]}&ptr_token={owners[f]}"), {"missing"}),
    "another feed's valid token": (lambda f: bearer(other_token(f)), {"insufficient_scope"}),
    "cookie: another feed's valid token": (lambda f: cookie("ptr_token=" + other_token(f)), {"insufficient_scope"}),
    "cookie: bad, then another feed's valid": (lambda f: cookie(f"ptr_token={truncated(f)}; ptr_token={other_token(f)}"),
                                              {"insufficient_scope"}),
}
PUBLISH_ONLY = {  # a valid right to read is not one to publish
    "read-only token publishing": (lambda f: bearer(token(f, publish=False)), {"insufficient_scope"}),
}
STREAM_ONLY = {  # a reader of the feed, but not the session's owner
    "another sub's reader token": (lambda f: bearer(token(f, sub="peer", publish=False)), {"insufficient_scope"}),
}
MAIN_CASES = {**INVALID, "read-only token publishing": PUBLISH_ONLY["read-only token publishing"]}


def routes_and_cases():
    """(route, case table) pairs a bad request is drawn from."""
    return [("items", {**INVALID, **NEEDS_RIGHT}), ("head", {**INVALID, **NEEDS_RIGHT}),
            ("session", {**INVALID, **NEEDS_RIGHT}), ("publish", {**INVALID, **NEEDS_RIGHT, **PUBLISH_ONLY}),
            ("stream", {**INVALID, **NEEDS_RIGHT, **STREAM_ONLY}), ("stream HEAD", {**INVALID, **NEEDS_RIGHT, **STREAM_ONLY}),
            ("main items", INVALID), ("main publish", {**INVALID, **PUBLISH_ONLY})]


# ---------------------------------------------------------------- raw requests

def http_request(method, path, headers, body=None):
    fields = [("Host", f"{HOST}:{server.port}")] + list(headers)
    data = b""
    if body is not None:
        data = json.dumps(body).encode()
        fields += [("Content-Type", "application/json"), ("Content-Length", str(len(data)))]
    elif method == "POST":
        fields.append(("Content-Length", "0"))
    head = f"{method} {path} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in fields) + "\r\n"
    return head.encode() + data


class BadClient:
    """One hostile client on its own loopback address, its requests on one kept-alive
    connection (a new one after the server closes it)."""

    def __init__(self, index):
        self.source = client_address(index, 1)
        self.sock = None

    async def exchange(self, data, stream=False, head=False):
        """(status, headers, body): the whole answer; an answer that does not end (a stream
        that was opened) is read for half a second once its head has come (which has ten
        seconds to come, as every answer has), then given up."""
        loop = asyncio.get_running_loop()
        if self.sock is None:
            self.sock = await connect(HOST, server.port, self.source)
        response = Response(head_request=head)
        started = time.monotonic()
        deadline = started + 10
        try:
            await asyncio.wait_for(loop.sock_sendall(self.sock, data), 10)
            while not response.complete:
                limit = max(started + 0.5, time.monotonic()) if stream and response.status is not None else deadline
                limit = min(limit, deadline)
                if time.monotonic() >= limit:
                    break
                try:
                    chunk = await asyncio.wait_for(loop.sock_recv(self.sock, 65536), limit - time.monotonic())
                except (asyncio.TimeoutError, TimeoutError):
                    break
                if not chunk:
                    response.eof()
                    break
                response.feed(chunk)
        except (OSError, asyncio.TimeoutError, TimeoutError) as error:
            self.close()
            return None, {}, repr(error).encode()
        if not response.complete or response.headers.get("connection", "").lower() == "close":
            self.close()
        return response.status, response.headers, response.body + response.buffer

    def close(self):
        if self.sock is not None:
            self.sock.close()
            self.sock = None


# ---------------------------------------------------------------- the run

async def main():
    began = time.monotonic()
    results = {"bad": 0, "wrong": [], "statuses": {}, "reasons": {}, "leaks": [], "unlike": [], "pairs": 0,
               "cases": {}, "routes": {}, "accepted": {feed: [] for feed in feeds}, "publish_failures": []}
    stop = asyncio.Event()

    # Good clients: a live-mode session per feed, its stream open, its first page loaded.
    streams = {}
    for n, feed in enumerate(feeds):
        auth = {"Authorization": "Bearer " + owners[feed]}
        reply = request(server, "POST", "/api/sessions", {"feed": feed, "config": {"news": "live"}}, auth)
        if reply.status != 201:
            check(f"{feed}: its owner creates a session", False, (reply.status, reply.body[:200]))
            finish()
        session = reply.json["id"]
        carrier = auth if n % 2 == 0 else {"Cookie": f"theme=dark; ptr_token={owners[feed]}"}
        stream = EventStream(HOST, server.port, session=session, headers=carrier)
        status = await stream.open()
        request(server, "POST", f"/api/sessions/{session}/load-more")
        await stream.read(until=lambda s: any(e.get("event") == "done" for e in s.events), timeout=10)
        streams[feed] = (session, stream, status, "header" if n % 2 == 0 else "cookie")
    check("every good stream opened (200), half by header, half by cookie",
          all(status == 200 for _, _, status, _ in streams.values()),
          {feed: status for feed, (_, _, status, _) in streams.items()})

    async def read_good(stream):
        while not stop.is_set() and not stream.closed:
            await stream.read(timeout=0.2)

    readers = [asyncio.create_task(read_good(stream)) for _, stream, _, _ in streams.values()]

    async def publisher():
        client = HTTPClient(HOST, server.port)
        n = 0
        while not stop.is_set() and time.monotonic() - began < RUN_LIMIT:
            for i, feed in enumerate(feeds):
                item = {"id": f"{MARK}-{feed}-p{n}", "title": f"{MARK} {feed} publish {n}"}
                headers = ({"Authorization": "Bearer " + owners[feed]} if (n + i) % 2 == 0
                           else {"Cookie": f"ptr_token={owners[feed]}"})
                try:
                    status, _, body = await client.request("POST", f"/api/feeds/{feed}/items", {"items": [item]}, headers)
                except (OSError, asyncio.TimeoutError, ConnectionError) as error:
                    status, body = None, repr(error).encode()
                if status == 201:
                    results["accepted"][feed].append(item["id"])
                else:
                    results["publish_failures"].append((feed, status, body[:200]))
            n += 1
            await asyncio.sleep(PUBLISH_EVERY)
        client.close()

    publishing = asyncio.create_task(publisher())
    table = routes_and_cases()
    budget = [BAD_REQUESTS]

    def note(case, route, status, headers, body, allowed, head=False):
        results["bad"] += 1
        results["cases"][case] = results["cases"].get(case, 0) + 1
        results["routes"][route] = results["routes"].get(route, 0) + 1
        results["statuses"][status] = results["statuses"].get(status, 0) + 1
        text = body.decode("utf-8", "replace")
        if MARK in text or any(MARK in v for v in headers.values()):
            results["leaks"].append((case, route, status, text[:200]))
        try:
            answer = json.loads(body)
        except ValueError:
            answer = None
        reason = REASON_OF.get(answer.get("message")) if isinstance(answer, dict) else None
        if head:  # no body: the reason is the allowed one whose refusal has this length
            reason = next((r for r in allowed if str(body_length(r)) == headers.get("content-length")), None)
            answer = {"error": "insufficient_scope" if reason == "insufficient_scope" else "invalid_token",
                      "message": MESSAGES[reason]} if reason and not body else None
        if reason:
            results["reasons"][reason] = results["reasons"].get(reason, 0) + 1
        code = "insufficient_scope" if allowed == {"insufficient_scope"} else "invalid_token"
        expected_status = 403 if code == "insufficient_scope" else 401
        right = (status == expected_status and isinstance(answer, dict) and set(answer) == {"error", "message"}
                 and answer["error"] == code and reason in allowed
                 and headers.get("www-authenticate") == f'Bearer error="{code}"')
        if not right:
            results["wrong"].append((case, route, status, headers.get("www-authenticate"), text[:160]))

    async def attack(index):
        client = BadClient(index)
        rng = random.Random(random.random())
        pause = ATTACK_SECONDS * BAD_CLIENTS / BAD_REQUESTS * 1.6  # 1.6 requests a round, on average
        await asyncio.sleep(rng.uniform(0, pause))
        while budget[0] > 0 and time.monotonic() - began < RUN_LIMIT:
            await asyncio.sleep(rng.uniform(0.5, 1.5) * pause)
            route, cases = rng.choice(table)
            case = rng.choice(sorted(cases))
            make, allowed = cases[case]
            feed = rng.choice(feeds)
            headers, query = make(feed)
            targets = [feed] if route in ("stream", "stream HEAD", "main items", "main publish") else [feed, missing[feed]]
            budget[0] -= len(targets)
            answers = []
            forged = {"id": f"forged-{index}-{budget[0]}", "title": f"forged by a bad client {index}"}
            for target in targets:
                if route == "items":
                    data = http_request("GET", f"/api/feeds/{target}/items{query}", headers)
                elif route == "head":
                    data = http_request("GET", f"/api/feeds/{target}{query}", headers)
                elif route == "session":
                    data = http_request("POST", f"/api/sessions{query}", headers, {"feed": target})
                elif route == "publish":
                    data = http_request("POST", f"/api/feeds/{target}/items{query}", headers, forged)
                elif route in ("stream", "stream HEAD"):
                    data = http_request("HEAD" if route == "stream HEAD" else "GET",
                                        f"/api/sessions/{streams[target][0]}/events{query}",
                                        headers + [("Accept", "text/event-stream")]
                                        + [("Last-Event-ID", "0")] * rng.randrange(2))  # asks for a replay of all
                elif route == "main items":
                    data = http_request("GET", f"/api/items{query}", headers)
                else:
                    data = http_request("POST", f"/api/items{query}", headers, forged)
                head = route == "stream HEAD"
                status, answer_headers, body = await client.exchange(data, stream=route.startswith("stream"), head=head)
                note(case, route, status, answer_headers, body, allowed, head)
                answers.append((status, answer_headers.get("www-authenticate"), body))
            if len(answers) == 2:
                results["pairs"] += 1
                if answers[0] != answers[1]:
                    results["unlike"].append((case, route, answers[0][0], answers[1][0], answers[0][2][:120], answers[1][2][:120]))
        client.close()

    metrics_before = refused_counts()
    monitor = Monitor(server, every=0.5).start()
    rss_start = server.rss_kib()
    attack_began = time.monotonic()
    await asyncio.gather(*(attack(i) for i in range(BAD_CLIENTS)))
    attack_seconds = time.monotonic() - attack_began
    stop.set()
    await publishing
    stop.clear()

    # Every good stream catches up with every accepted publish of its feed.
    def caught_up(feed, stream):
        got = {item for e in stream.events if e.get("event") == "items" and e["data"].get("op") == "prepend"
               for item in ids_of(e)}
        return set(results["accepted"][feed]) <= got

    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not all(caught_up(feed, s) for feed, (_, s, _, _) in streams.items()):
        await asyncio.sleep(0.05)
    stop.set()
    await asyncio.gather(*readers)
    rows = monitor.stop()
    metrics_after = refused_counts()
    return results, streams, metrics_before, metrics_after, rows, rss_start, attack_seconds, time.monotonic() - began


def ids_of(event):
    return [item.get("id") for item in event["data"].get("items", [])]


def refused_counts():
    text = request(server, "GET", "/metrics").body.decode()
    return {m.group(1): float(m.group(2)) for m in re.finditer(r'^ptr_auth_refused_total\{reason="([a-z_]+)"\} (\S+)$', text, re.M)}


results, streams, metrics_before, metrics_after, rows, rss_start, attack_seconds, duration = asyncio.run(main())

# ---------------------------------------------------------------- invariants

check("every bad request got the SPEC's answer (401 invalid_token or 403 insufficient_scope, its challenge, "
      "a message naming a reason its credential deserves)", not results["wrong"],
      f"{len(results['wrong'])} wrong, e.g. {results['wrong'][:3]}")
check("no bad request was answered 200, 201 or 5xx",
      not any(s in (200, 201) or (s or 500) >= 500 for s in results["statuses"]), results["statuses"])
check("an existing and a missing feed are refused alike (status, challenge, body)", not results["unlike"],
      f"{len(results['unlike'])} unlike, e.g. {results['unlike'][:3]}")
check("no bad answer holds a private feed's title or id", not results["leaks"], results["leaks"][:3])

wrong_feed, twice, lost, ended_early = [], [], [], []
good_events = 0
for feed, (_, stream, _, carrier) in streams.items():
    good_events += len(stream.events)
    prepended = [i for e in stream.events if e.get("event") == "items" and e["data"].get("op") == "prepend" for i in ids_of(e)]
    for e in stream.events:
        if e.get("event") == "items":
            wrong_feed += [(feed, i) for i in ids_of(e) if not str(i).startswith(f"{MARK}-{feed}-")]
        if e.get("event") == "news":
            newest = (e["data"].get("newest") or {}).get("id", "")
            if not newest.startswith(f"{MARK}-{feed}-"):
                wrong_feed.append((feed, "news", newest))
    twice += [(feed, i) for i in set(prepended) if prepended.count(i) > 1]
    lost += [(feed, i) for i in results["accepted"][feed] if i not in prepended]
    if stream.closed or stream.ended:
        ended_early.append((feed, carrier))
check("no good stream holds an item or news of another feed", not wrong_feed, wrong_feed[:5])
check("each good stream got every accepted publish of its feed once: none lost", not lost, f"{len(lost)} lost: {lost[:5]}")
check("... and none twice", not twice, twice[:5])
check("every good stream stayed open through the attack", not ended_early, ended_early)
check("every good publish (owner's token, by header or cookie) was accepted", not results["publish_failures"],
      results["publish_failures"][:3])

heads_wrong, forged_stored, missing_created = [], [], []
for feed in feeds:
    auth = {"Authorization": "Bearer " + auditor}
    head = request(server, "GET", f"/api/feeds/{feed}", headers=auth).json
    expected = SEEDS + len(results["accepted"][feed])
    if not isinstance(head, dict) or head.get("head") != expected:
        heads_wrong.append((feed, head, expected))
    listed = request(server, "GET", f"/api/feeds/{feed}/items?limit=100", headers=auth).json.get("items", [])
    forged_stored += [(feed, i["id"]) for i in listed if i["id"].startswith("forged")]
    other = request(server, "GET", f"/api/feeds/{missing[feed]}", headers=auth).json
    if not isinstance(other, dict) or other.get("head") != 0:
        missing_created.append((missing[feed], other))
main_head = request(server, "GET", "/api/feeds/main").json
if not isinstance(main_head, dict) or main_head.get("head") != 0:
    forged_stored.append(("main", main_head))
check("each private feed's head is its seeds plus its accepted publishes (nothing refused was stored)", not heads_wrong, heads_wrong[:3])
check("no forged item among the newest of any private feed, and main's head stays 0", not forged_stored, forged_stored[:5])
check("no feed was created by a refused publish (the missing feeds' heads stay 0)", not missing_created, missing_created[:3])

counted = {reason: metrics_after.get(reason, 0) - metrics_before.get(reason, 0) for reason in MESSAGES}
counted = {reason: int(n) for reason, n in counted.items() if n}
check("ptr_auth_refused_total grew by exactly the refusals the answers name, reason by reason",
      counted == results["reasons"], f"metrics {counted}, answers {results['reasons']}")

alive = server.alive() and request(server, "GET", "/healthz").status == 200
check("the server is alive and healthy after the attack", alive)
peak = max((row["rss_kib"] for row in rows), default=0)
check(f"its RSS stayed within {RSS_GROWTH_BOUND_KIB // 1024} MiB of where the attack began", peak - rss_start <= RSS_GROWTH_BOUND_KIB,
      f"{rss_start} -> {peak} KiB")
server.stop()
log = "".join(server.log_lines)
in_log = [t[:24] for t in all_tokens if t.split(".")[2] in log] + re.findall(r"eyJ[A-Za-z0-9_-]{8,}", log)[:3]
check("no token in the server's log (no signature of a good one, no base64 JSON of any)", not in_log, in_log[:3])

shutil.rmtree(work, ignore_errors=True)

figure("seed", SEED)
figure("private feeds", FEEDS)
figure("bad clients", BAD_CLIENTS)
figure("bad requests", results["bad"])
figure("pairs existing / missing feed compared", results["pairs"])
for status in sorted(results["statuses"], key=str):
    figure(f"answered {status}", results["statuses"][status])
for reason in sorted(counted):
    figure(f"refused {reason} (ptr_auth_refused_total)", counted[reason])
figure("cases drawn", len(results["cases"]))
for route in sorted(results["routes"]):
    figure(f"bad requests at {route}", results["routes"][route])
figure("good publishes accepted", sum(len(v) for v in results["accepted"].values()))
figure("good events received", good_events)
figure("attack", attack_seconds, "s")
figure("bad requests per second", results["bad"] / attack_seconds if attack_seconds else 0.0, "/s")
figure("RSS at the attack's start", rss_start // 1024, "MiB")
figure("peak RSS", peak // 1024, "MiB")
figure("duration", duration, "s")
finish()
