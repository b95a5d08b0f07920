"""Third-party SSE clients as peers, through a TCP proxy that cuts their connections on
command and holds their reconnections back while the session goes on emitting events:
samples through a drag, a refresh with its progress, items and done, publishes (news).

The clients reconnect by themselves, with what they implement:
- `sseclient` (PyPI, btubbs/sseclient): its iterator catches a dropped connection, waits the
  stream's `retry:` and reconnects with `Last-Event-ID` itself. (`sseclient-py` and
  `httpx-sse` leave reconnection to the caller; `aiohttp-sse-client` reconnects only after a
  clean end of the stream, and raises on a cut one.) It reads the socket under the HTTP
  decoder, so it is asked for an uncompressed stream; the chunk-size lines it then sees are
  unknown fields, which SSE parsing ignores.
- headless Chromium's own `EventSource`.

Ground truth is a third reader on the same session, straight to the server and never cut.

Invariants, per client: every reconnection sends `Last-Event-ID` equal to the last id the
client had received; its event ids strictly increase (no duplicate); no `progress`,
`items` or `done` event of the server's sequence is missing after its first event (no gap;
only superseded `state` / `news` events may be coalesced away, as the SPEC allows); each
event it got has exactly the server's name and data for that id; it ends on the server's
last event."""
import asyncio
import json
import socket
import sys
import threading
import time

import sseclient

from lib import ROOT, Server, SSEParser, check, figure, finish, pick, request_json

sys.path.insert(0, str(ROOT / "Tests" / "browser"))

CUTS = pick(3, 12)
KEPT = ("progress", "items", "done", "reset")  # never coalesced away


class Proxy:
    """A TCP proxy on its own asyncio loop. `cut()` aborts every open connection and holds new
    ones until `release()`; each connection's request head is kept (for its Last-Event-ID)."""

    def __init__(self, upstream_port):
        self.upstream_port = upstream_port
        self.loop = asyncio.new_event_loop()
        self.open = set()
        self.heads = []  # (monotonic time, head text)
        self.released = None
        self.ready = threading.Event()
        threading.Thread(target=self._run, daemon=True).start()
        self.ready.wait(10)

    def _run(self):
        asyncio.set_event_loop(self.loop)
        self.released = asyncio.Event()
        self.released.set()
        server = self.loop.run_until_complete(asyncio.start_server(self._serve, "127.0.0.1", 0))
        self.port = server.sockets[0].getsockname()[1]
        self.ready.set()
        self.loop.run_forever()

    async def _serve(self, client_reader, client_writer):
        accepted = time.monotonic()  # when the client reconnected, even if held
        await self.released.wait()
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection("127.0.0.1", self.upstream_port)
        except OSError:
            client_writer.transport.abort()
            return
        pair = (client_writer, upstream_writer)
        self.open.add(pair)

        async def pipe(reader, writer, record):
            head = b""
            try:
                while data := await reader.read(65536):
                    if record and b"\r\n\r\n" not in head:
                        head += data
                        if b"\r\n\r\n" in head:
                            self.heads.append((accepted, head.decode("latin-1")))
                    writer.write(data)
                    await writer.drain()
            except (OSError, asyncio.CancelledError):
                pass
            finally:
                writer.transport.abort()

        await asyncio.gather(pipe(client_reader, upstream_writer, True), pipe(upstream_reader, client_writer, False))
        self.open.discard(pair)

    def cut(self):
        def do():
            self.released.clear()
            for client, upstream in list(self.open):
                client.transport.abort()
                upstream.transport.abort()
        self.loop.call_soon_threadsafe(do)

    def release(self):
        self.loop.call_soon_threadsafe(self.released.set)


class Truth(threading.Thread):
    """The server's own sequence for the session, read directly."""

    def __init__(self, server, session):
        super().__init__(daemon=True)
        self.server, self.session, self.events = server, session, []
        self._sse = SSEParser()

    def run(self):
        with socket.create_connection(("127.0.0.1", self.server.port)) as connection:
            connection.sendall(f"GET /api/sessions/{self.session}/events HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                               "Accept: text/event-stream\r\n\r\n".encode())
            buffer = b""
            head_done = False
            while data := connection.recv(65536):
                buffer += data
                if not head_done:
                    if b"\r\n\r\n" not in buffer:
                        continue
                    buffer = buffer.split(b"\r\n\r\n", 1)[1]
                    head_done = True
                # chunked: <size>\r\n<data>\r\n
                while True:
                    size_line, sep, rest = buffer.partition(b"\r\n")
                    if not sep:
                        break
                    size = int(size_line, 16)
                    if len(rest) < size + 2:
                        break
                    self._parse(rest[:size].decode())
                    buffer = rest[size + 2:]

    def _parse(self, text):
        for event in self._sse.feed(text):
            if "id" in event and "event" in event:
                self.events.append((int(event["id"]), event["event"], json.loads(event.get("data") or "null")))


class PythonClient(threading.Thread):
    def __init__(self, url):
        super().__init__(daemon=True)
        self.url, self.events, self.error = url, [], None
        self.arrivals = []  # monotonic time of each event

    def run(self):
        try:
            # Identity: the library reads the socket under requests' decoders.
            for message in sseclient.SSEClient(self.url, headers={"Accept-Encoding": "identity"}):
                if message.id and message.event and message.event != "message":
                    self.events.append((int(message.id), message.event, json.loads(message.data)))
                    self.arrivals.append(time.monotonic())
        except Exception as error:  # noqa: BLE001 - the library ended: recorded as a failure
            self.error = repr(error)


def events_of_browser(driver):
    return [(int(e["id"]), e["type"], json.loads(e["data"])) for e in driver.execute_script("return window.__events")]


def drive(server, session, seq, publish_serial):
    """Makes the session emit a burst of every kind of event; answers the next seq."""
    for y in (-10, -30, -50, -70, -85, -95):
        seq += 1
        request_json(server, "POST", f"/api/sessions/{session}/samples", {"seq": seq, "t": seq * 16, "y": y, "phase": "drag"})
    seq += 1
    request_json(server, "POST", f"/api/sessions/{session}/samples", {"seq": seq, "t": seq * 16, "y": -95, "phase": "release"})
    for n in range(2):
        request_json(server, "POST", "/api/items", {"id": f"sse-{publish_serial}-{n}", "title": f"news {publish_serial}.{n}"})
    seq += 1
    request_json(server, "POST", f"/api/sessions/{session}/samples", {"seq": seq, "t": seq * 16, "y": 0, "phase": "drag"})
    return seq


def compare(name, received, truth, last_ids_sent, last_ids_expected, error=None):
    ids = [e[0] for e in received]
    check(f"{name}: the library kept running", error is None, error)
    check(f"{name}: ids strictly increase (no duplicate)", all(b > a for a, b in zip(ids, ids[1:])),
          [(a, b) for a, b in zip(ids, ids[1:]) if b <= a][:5])
    by_id = {e[0]: e for e in truth}
    mismatched = [e for e in received if by_id.get(e[0]) != e]
    check(f"{name}: every event matches the server's (name and data) for its id", not mismatched, mismatched[:2])
    first = ids[0] if ids else 0
    got = set(ids)
    gaps = [e[:2] for e in truth if e[0] >= first and e[1] in KEPT and e[0] not in got]
    check(f"{name}: no progress / items / done missing (no gap)", not gaps, gaps[:5])
    check(f"{name}: ends on the server's last event", bool(ids) and ids[-1] == truth[-1][0], (ids[-1:], truth[-1][:2]))
    check(f"{name}: every reconnection sent Last-Event-ID = its last id", last_ids_sent == last_ids_expected,
          f"sent {last_ids_sent}, expected {last_ids_expected}")
    return len(received), len(gaps)


server = Server("--reconnect-delay-ms", "200", "--replay-buffer", "512")
server.start()
proxy = Proxy(server.port)
status, body = request_json(server, "POST", "/api/sessions", {"preset": "default", "config": {"news": "badge"}})
session = body["id"]
truth = Truth(server, session)
truth.start()
time.sleep(0.3)
request_json(server, "POST", f"/api/sessions/{session}/load-more")  # a first page: news counts from it

python_client = PythonClient(f"http://127.0.0.1:{proxy.port}/api/sessions/{session}/events")
python_client.start()

from harness import make_driver  # noqa: E402 - Tests/browser is on the path only now

driver = make_driver(400, 300)
driver.get(f"http://127.0.0.1:{proxy.port}/healthz")
driver.execute_script("""
    window.__events = []; window.__opens = [];
    const source = new EventSource(arguments[0]);
    for (const type of ["state", "progress", "items", "done", "news", "reset"]) {
        source.addEventListener(type, (e) => window.__events.push({id: e.lastEventId, type, data: e.data}));
    }
    source.addEventListener("open", () => window.__opens.push(performance.now()));
    window.__source = source;
""", f"/api/sessions/{session}/events")


def caught_up(received_getter):
    return lambda: truth.events and received_getter() and received_getter()[-1][0] == truth.events[-1][0]


def wait(predicate, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return False


wait(caught_up(lambda: python_client.events), 10)
wait(caught_up(lambda: events_of_browser(driver)), 10)
seq = 0
python_expected, browser_expected = [], []
python_times, browser_times = [], []
cut_times = []
began = time.monotonic()
for cut in range(CUTS):
    python_last = python_client.events[-1][0] if python_client.events else None
    browser_last = events_of_browser(driver)[-1][0]
    cut_at = time.monotonic()
    cut_times.append(cut_at)
    proxy.cut()
    time.sleep(0.1)
    seq = drive(server, session, seq, cut)
    wait(lambda: truth.events and any(e[1] == "done" for e in truth.events if e[0] > browser_last), 10)
    time.sleep(0.3)
    python_expected.append(str(python_last))
    browser_expected.append(str(browser_last))
    # Counted before the release: a client may catch up within a millisecond of it.
    python_events_before = len(python_client.events)
    browser_count_before = len(events_of_browser(driver))
    released = time.monotonic()
    proxy.release()
    python_ok = wait(lambda: len(python_client.events) > python_events_before, 15)
    if python_ok:
        python_times.append(python_client.arrivals[python_events_before] - released)
    browser_ok = wait(lambda: len(events_of_browser(driver)) > browser_count_before, 15)
    if browser_ok:
        browser_times.append(time.monotonic() - released)
    wait(caught_up(lambda: python_client.events), 10)
    wait(caught_up(lambda: events_of_browser(driver)), 10)
    check(f"cut {cut + 1}: both clients caught up by themselves",
          python_ok and browser_ok and caught_up(lambda: python_client.events)() and caught_up(lambda: events_of_browser(driver))(),
          f"python {python_ok}, browser {browser_ok}")

# One more burst with every client connected, so the last event is shared.
seq = drive(server, session, seq, "final")
time.sleep(0.5)
wait(caught_up(lambda: python_client.events), 10)
wait(caught_up(lambda: events_of_browser(driver)), 10)

path = f"/api/sessions/{session}/events"
# Each client reconnects once per cut; the proxy saw their heads in order, mixed: split them
# by the client's own header (requests sends its User-Agent).
python_heads = [proxy_head for proxy_head in proxy.heads if proxy_head[0] >= began and path in proxy_head[1]
                and "python-requests" in proxy_head[1]]
browser_heads = [proxy_head for proxy_head in proxy.heads if proxy_head[0] >= began and path in proxy_head[1]
                 and "python-requests" not in proxy_head[1]]


def ids_in(heads):
    return [next((line.split(":", 1)[1].strip() for line in head.split("\r\n") if line.lower().startswith("last-event-id:")), None)
            for _, head in heads]


python_count, _ = compare("sseclient", python_client.events, truth.events, ids_in(python_heads), python_expected, python_client.error)
browser_events = events_of_browser(driver)
browser_count, _ = compare("Chromium EventSource", browser_events, truth.events, ids_in(browser_heads), browser_expected)
opens = driver.execute_script("return window.__opens.length")
check("Chromium reopened its EventSource once per cut", opens == CUTS + 1, opens)
driver.quit()
server.stop()

figure("cuts", CUTS)
figure("server events", len(truth.events))
figure("sseclient events received", python_count)
figure("Chromium events received", browser_count)
figure("coalesced state/news events (server's minus Chromium's)", len(truth.events) - browser_count)
if python_times:
    figure("sseclient reconnect after release (max)", max(python_times), "s")
if browser_times:
    figure("Chromium reconnect after release (max)", max(browser_times), "s")
for name, heads_ in (("sseclient", python_heads), ("Chromium", browser_heads)):
    delays = [next((at for at, _ in heads_ if at >= cut_at), cut_at) - cut_at for cut_at in cut_times]
    figure(f"{name} reconnection attempt after the cut (max, its retry: delay)", max(delays), "s")
figure("duration", time.monotonic() - began, "s")
finish()
