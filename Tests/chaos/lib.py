"""What every chaos scenario stands on: a server process it can start, kill and restart on
the same port and database; plain HTTP over sockets; an SSE reader; the process's resident
memory, CPU time and open descriptors; and the record of each figure and invariant.

A scenario is `scenario_NAME.py`: it reads `PROFILE` ("short" in CI, "full" by hand) to
pick its numbers, calls `check(...)` for every invariant (a broken one makes it exit 1 at
`finish()`), and `figure(...)` for every number RELIABILITY.md reports."""

import asyncio
import contextlib
import http.client
import json
import os
import pathlib
import re
import resource
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import zlib

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "Tests" / "support"))
from client import SSEParser, free_port, request, request_json  # noqa: E402,F401  (the scenarios import them from here)
import server  # noqa: E402
ARTIFACTS = pathlib.Path(os.environ.get("ARTIFACTS", ROOT / "artifacts")) / "chaos"
# run.sh starts a fresh file per run; a scenario run alone appends to it.
RESULTS = pathlib.Path(os.environ.get("CHAOS_RESULTS", ARTIFACTS / "results.jsonl"))
PROFILE = os.environ.get("CHAOS_PROFILE", "short")
SCENARIO = pathlib.Path(sys.argv[0]).stem.removeprefix("scenario_")


BINARY = server.default_binary()


def pick(short, full):
    """The short profile's number in CI, the full one by hand."""
    return full if PROFILE == "full" else short


# ---------------------------------------------------------------- invariants and figures

_broken = []


def check(invariant, holds, detail=""):
    """Records one invariant; a broken one is printed at once and fails the scenario."""
    holds = bool(holds)
    print(f"  {'ok  ' if holds else 'FAIL'} {invariant}{'' if holds or not detail else ': ' + str(detail)}",
          flush=True)
    _record({"kind": "invariant", "name": invariant, "holds": holds, "detail": str(detail)[:500]})
    if not holds:
        _broken.append(invariant)
    return holds


def figure(name, value, unit=""):
    """Records one measured number (RELIABILITY.md quotes them)."""
    shown = f"{value:.3g}" if isinstance(value, float) else str(value)
    print(f"  fig  {name}: {shown}{' ' + unit if unit else ''}", flush=True)
    _record({"kind": "figure", "name": name, "value": value, "unit": unit})


def finish():
    """Exits 1 when an invariant broke."""
    if _broken:
        print(f"  {SCENARIO}: {len(_broken)} invariant(s) broken", file=sys.stderr, flush=True)
        sys.exit(1)
    sys.exit(0)


def skip(reason):
    """Ends a scenario that cannot run here: says why and exits 77, which run.sh counts as
    skipped, never as passed."""
    print(f"  SKIP {SCENARIO}: {reason}", flush=True)
    _record({"kind": "skip", "name": reason, "holds": False, "detail": reason})
    sys.exit(77)


def _record(row):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    row = {"scenario": SCENARIO, "profile": PROFILE, "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           **row}
    with open(RESULTS, "a") as results:
        results.write(json.dumps(row) + "\n")


# ---------------------------------------------------------------- the server process

class Server(server.Server):
    """A server as every scenario runs it: the chaos binary, and refreshes that end as soon as
    they are done (`--min-refresh-ms 0`, which a scenario's own flags may override)."""

    def __init__(self, *flags, **options):
        super().__init__("--min-refresh-ms", "0", *flags, binary=BINARY, **options)


@contextlib.contextmanager
def postgres():
    """A PostgreSQL URL: PTR_TEST_POSTGRES when set, else a throwaway server through
    scripts/postgres, stopped afterwards. Yields (url, stop, start) so a scenario can take
    it away and bring it back; stop/start are None for a server it did not start."""
    url = os.environ.get("PTR_TEST_POSTGRES")
    if url:
        yield url, None, None
        return
    folder = tempfile.mkdtemp(prefix="ptr-chaos-postgres.")
    os.chmod(folder, 0o755)
    script = str(ROOT / "scripts" / "postgres")
    port = str(free_port())

    def start():
        return subprocess.run(["bash", script, "start", folder + "/db", port], check=True, text=True,
                              stdout=subprocess.PIPE).stdout.strip()

    def stop():
        subprocess.run(["bash", script, "stop", folder + "/db"], check=False, stdout=subprocess.DEVNULL)

    try:
        yield start(), stop, start
    finally:
        stop()
        subprocess.run(["rm", "-rf", folder], check=False)


# ---------------------------------------------------------------- HTTP

def raw(host, port, data, timeout=5, read_all=True):
    """Sends raw bytes on a fresh connection; returns what came back before the server
    closed it or `timeout` passed."""
    with socket.create_connection((host, port), timeout=timeout) as connection:
        connection.sendall(data)
        chunks = []
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                chunk = connection.recv(65536)
            except socket.timeout:
                break
            except ConnectionResetError:
                break
            if not chunk:
                break
            chunks.append(chunk)
            if not read_all:
                break
        return b"".join(chunks)


def status_of(response_bytes):
    match = re.match(rb"HTTP/1\.[01] (\d{3})", response_bytes)
    return int(match.group(1)) if match else None


# ---------------------------------------------------------------- many clients at once (asyncio)
#
# Thousands of streams and requests from one Python process: raw non-blocking sockets on
# one asyncio loop. A stream reads only when told to, so a reader that stops reading is
# simply one that is not told to; a client can take its own loopback source address, so the
# server's per-client limits count it as the separate client it stands for.

def raise_fd_limit():
    """Lets this process, and the servers it starts (they inherit it), hold as many
    descriptors as the hard limit allows. Answers that limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return hard


def client_address(index, per_address):
    """Loopback source address of client `index` when `per_address` clients share one:
    127.0.0.2, 127.0.0.3, … (all of 127/8 is loopback on Linux)."""
    n = 2 + index // per_address
    return f"127.0.{n // 256}.{n % 256}"


async def connect(host, port, source=None, rcvbuf=None, timeout=10):
    """A connected non-blocking socket; `rcvbuf` sets SO_RCVBUF before connecting, so the
    window the client offers is small from the start."""
    loop = asyncio.get_running_loop()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setblocking(False)
    try:
        if rcvbuf:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        if source:
            sock.bind((source, 0))
        await asyncio.wait_for(loop.sock_connect(sock, (host, port)), timeout)
    except BaseException:
        sock.close()
        raise
    return sock


def json_request(method, path, body=None, host="127.0.0.1", headers=None, close=False, port=None):
    """The bytes of one HTTP/1.1 request; a dict or list body goes as JSON with its
    Content-Type, as the server requires of bodies that change state."""
    fields = {"Host": f"{host}:{port}" if port else host}
    data = b""
    if body is not None:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        fields["Content-Type"] = "application/json"
        fields["Content-Length"] = str(len(data))
    elif method in ("POST", "PUT", "DELETE"):
        fields["Content-Length"] = "0"
    if close:
        fields["Connection"] = "close"
    fields.update(headers or {})
    head = f"{method} {path} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in fields.items()) + "\r\n"
    return head.encode() + data


class Response:
    """An HTTP/1.1 response parsed from bytes as they come: `feed(bytes)` until `complete`.
    Interim `1xx` answers are counted and skipped; the body is framed by Content-Length or
    chunks (or runs to the end of the connection without either)."""

    def __init__(self, head_request=False):
        self.buffer = b""
        self.status = None
        self.headers = {}
        self.body = b""
        self.interim = []
        self.complete = False
        self.head_request = head_request
        self._length = None
        self._chunked = False

    def feed(self, data):
        self.buffer += data
        while not self.complete:
            if self.status is None:
                end = self.buffer.find(b"\r\n\r\n")
                if end < 0:
                    return
                lines = self.buffer[:end].decode("latin-1").split("\r\n")
                self.buffer = self.buffer[end + 4:]
                status = int(lines[0].split(" ", 2)[1])
                headers = {}
                for line in lines[1:]:
                    name, _, value = line.partition(":")
                    headers[name.strip().lower()] = value.strip()
                if 100 <= status < 200:
                    self.interim.append(status)
                    continue
                self.status, self.headers = status, headers
                if self.head_request or status in (204, 304):
                    self.complete = True
                elif "chunked" in headers.get("transfer-encoding", "").lower():
                    self._chunked = True
                elif "content-length" in headers:
                    self._length = int(headers["content-length"])
                continue
            if self._chunked:
                line_end = self.buffer.find(b"\r\n")
                if line_end < 0:
                    return
                size = int(self.buffer[:line_end].split(b";")[0], 16)
                if size == 0:
                    if self.buffer[line_end + 2:line_end + 4] != b"\r\n":
                        return
                    self.buffer = self.buffer[line_end + 4:]
                    self.complete = True
                    return
                if len(self.buffer) < line_end + 2 + size + 2:
                    return
                self.body += self.buffer[line_end + 2:line_end + 2 + size]
                self.buffer = self.buffer[line_end + 2 + size + 2:]
                continue
            if self._length is not None:
                take = self._length - len(self.body)
                self.body += self.buffer[:take]
                self.buffer = self.buffer[take:]
                self.complete = len(self.body) == self._length
                return
            self.body += self.buffer
            self.buffer = b""
            return

    def eof(self):
        """The connection ended: a body framed by its end is complete now."""
        if self.status is not None and not self._chunked and self._length is None:
            self.complete = True

    def json(self):
        return json.loads(self.body) if self.body else None


class HTTPClient:
    """Requests on one kept-alive connection, one at a time, as a page's fetch does; after
    the server closes it the next request connects again."""

    def __init__(self, host, port, source=None, timeout=10):
        self.host, self.port, self.source, self.timeout = host, port, source, timeout
        self.sock = None

    async def request(self, method, path, body=None, headers=None):
        """(status, headers, body bytes); raises OSError or TimeoutError when the
        connection fails or ends before the answer is whole."""
        loop = asyncio.get_running_loop()
        if self.sock is None:
            self.sock = await connect(self.host, self.port, self.source, timeout=self.timeout)
        response = Response(head_request=method == "HEAD")
        try:
            await asyncio.wait_for(loop.sock_sendall(self.sock, json_request(method, path, body, self.host, headers, port=self.port)),
                                   self.timeout)
            while not response.complete:
                data = await asyncio.wait_for(loop.sock_recv(self.sock, 65536), self.timeout)
                if not data:
                    response.eof()
                    if not response.complete:
                        raise ConnectionError("the connection ended before the answer was whole")
                    break
                response.feed(data)
        except BaseException:
            self.close()
            raise
        if response.headers.get("connection", "").lower() == "close":
            self.close()
        return response.status, response.headers, response.body

    async def json(self, method, path, body=None, headers=None):
        status, _, data = await self.request(method, path, body, headers)
        try:
            return status, json.loads(data) if data else None
        except ValueError:
            return status, data

    def close(self):
        if self.sock is not None:
            self.sock.close()
            self.sock = None


class EventStream:
    """One event stream, read over a raw socket: the response head, its chunked body
    (gunzipped when it came gzip-encoded), and its events as they arrive, each with the
    `time.monotonic()` it was parsed at. Nothing is read unless `read()` runs.

    `ended` says the body ended with its terminating chunk (`0\\r\\n\\r\\n`), and for a gzip
    body that the gzip stream ended too; `eof` that the server closed the connection.

    `compact` keeps thousands of long streams small: `state` events are not listed (the
    newest is `state`, their number `states`), and an `items` event keeps its items' ids."""

    def __init__(self, host, port, session=None, path=None, last_event_id=None, gzip=False, source=None,
                 rcvbuf=None, headers=None, compact=False):
        self.host, self.port, self.source, self.rcvbuf = host, port, source, rcvbuf
        self.compact = compact
        self.state = None
        self.states = 0
        self.first_id = None
        self._reader = None
        self.path = path or f"/api/sessions/{session}/events"
        self.session = session
        self.request_headers = {"Accept": "text/event-stream", **(headers or {})}
        if last_event_id is not None:
            self.request_headers["Last-Event-ID"] = str(last_event_id)
        if gzip:
            self.request_headers["Accept-Encoding"] = "gzip"
        self.sock = None
        self.response = None
        self.status = None
        self.headers = {}
        self.events = []
        self.retry = None
        self._sse = SSEParser()
        self.comments = self._sse.comments
        self.ended = False
        self.eof = False
        self.error = None
        self.received_bytes = 0
        self._gunzip = None
        self._body_seen = 0
        self._closing = False

    @property
    def last_id(self):
        """The id of the newest event received, as `Last-Event-ID` would carry it."""
        for event in reversed(self.events):
            if "id" in event:
                last = event["id"]
                break
        else:
            last = None
        if self.state is not None and isinstance(self.state.get("id"), int):
            last = self.state["id"] if last is None else max(last, self.state["id"])
        return last

    @property
    def closed(self):
        return self.sock is None

    async def open(self, timeout=10):
        """Connects, asks, and reads until the response head is in; answers the status."""
        loop = asyncio.get_running_loop()
        self.sock = await connect(self.host, self.port, self.source, self.rcvbuf, timeout=timeout)
        await asyncio.wait_for(loop.sock_sendall(self.sock, json_request("GET", self.path, host=self.host, headers=self.request_headers, port=self.port)),
                               timeout)
        self.response = Response()
        await self.read(until=lambda stream: stream.status is not None, timeout=timeout)
        return self.status

    async def read(self, until=None, timeout=None, size=65536):
        """Reads and parses until `until(self)` holds, the connection ends, or `timeout`
        seconds pass (then quietly). Answers whether `until` held (True when none was given
        and the connection ended)."""
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.sock is not None:
            if until is not None and until(self):
                return True
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                return False
            self._reader = asyncio.current_task()
            try:
                data = await asyncio.wait_for(loop.sock_recv(self.sock, size), remaining)
            except (asyncio.TimeoutError, TimeoutError):
                return until(self) if until else False
            except asyncio.CancelledError:
                if self.sock is None or not self._closing:
                    raise
                self._closing = False
                self.sock.close()  # close() asked, while this read waited on the socket
                self.sock = None
                break
            except OSError as error:
                self.error = error
                self.close()
                break
            finally:
                self._reader = None
            if not data:
                self.eof = True
                self.response.eof()
                self._take_body()
                self.close()
                break
            self.received_bytes += len(data)
            self.response.feed(data)
            if self.status is None and self.response.status is not None:
                self.status, self.headers = self.response.status, self.response.headers
                if self.headers.get("content-encoding") == "gzip":
                    self._gunzip = zlib.decompressobj(16 + zlib.MAX_WBITS)
            self._take_body()
        return until(self) if until else True

    def _take_body(self):
        body = self.response.body
        fresh = body[self._body_seen:]
        self._body_seen = len(body)
        if len(body) > 1 << 20:
            # Keep the parser's buffer small on long streams: what was parsed is not needed.
            self.response.body = b""
            self._body_seen = 0
        if self._gunzip is not None:
            fresh = self._gunzip.decompress(fresh)
        if fresh:
            self._parse(fresh.decode("utf-8"))
        if self.response.complete:
            self.ended = self._gunzip is None or self._gunzip.eof

    def _parse(self, text):
        now = time.monotonic()
        for event in self._sse.feed(text):
            retry = event.pop("retry", None)
            if retry is not None and retry.isdigit():
                self.retry = int(retry)
            if "data" in event:
                if "id" in event and event["id"].isdigit():
                    event["id"] = int(event["id"])
                with contextlib.suppress(ValueError):
                    event["data"] = json.loads(event["data"])
                event["at"] = now
                if self.first_id is None and isinstance(event.get("id"), int):
                    self.first_id = event["id"]
                if self.compact and event.get("event") == "state":
                    self.state = event
                    self.states += 1
                    continue
                if self.compact and event.get("event") == "items" and isinstance(event["data"], dict):
                    event["data"]["items"] = [item.get("id") for item in event["data"].get("items", [])]
                if event.get("event") == "state":
                    self.state = event
                    self.states += 1
                self.events.append(event)

    def close(self, reset=False):
        """Closes the socket; `reset` makes it an abortive close (RST), as a lost network
        or a killed tab looks to the server."""
        if self.sock is None:
            return
        if reset:
            with contextlib.suppress(OSError):
                self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        if self._reader is not None and self._reader is not asyncio.current_task():
            # A read waits on the socket: it stops waiting first, then closes it (closing
            # under it would leave the loop watching a descriptor number reused elsewhere).
            self._closing = True
            self._reader.cancel()
            return
        self.sock.close()
        self.sock = None


def pull_samples(seq, t, depth=110, frames=10, release=True):
    """One pull at the top, as a page posts it: `frames` samples 16 ms apart down to `depth`
    points past the top, then (`release`) a release there, which starts a refresh when
    `depth` is past the threshold. Answers the samples and the next `seq` and `t`."""
    samples = []
    for frame in range(1, frames + 1):
        samples.append({"seq": seq, "t": t, "y": -depth * frame / frames, "phase": "drag"})
        seq, t = seq + 1, t + 16
    if release:
        samples.append({"seq": seq, "t": t, "y": -depth, "phase": "release"})
        seq, t = seq + 1, t + 16
    return samples, seq, t


def rest_sample(seq, t):
    """The list back at rest at the top, after a release: the gesture ends."""
    return {"seq": seq, "t": t, "y": 0, "phase": "scroll"}


class Monitor:
    """Samples a server's resident memory, peak memory, open descriptors and CPU time every
    `every` seconds on a thread of its own, into `rows` and, when given, a CSV file."""

    def __init__(self, server, every=1.0, csv_path=None):
        self.server, self.every, self.csv_path = server, every, csv_path
        self.rows = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.began = None

    def start(self):
        self.began = time.monotonic()
        self._thread.start()
        return self

    def sample(self):
        with contextlib.suppress(OSError, ValueError):
            row = {"t": round(time.monotonic() - self.began, 2), "rss_kib": self.server.rss_kib(),
                   "peak_rss_kib": self.server.peak_rss_kib(), "fds": self.server.open_fds(),
                   "cpu_s": round(self.server.cpu_seconds(), 2)}
            self.rows.append(row)
            return row

    def _run(self):
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.every)

    def stop(self):
        self._stop.set()
        self._thread.join(timeout=5)
        if self.csv_path and self.rows:
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            with open(self.csv_path, "w") as out:
                out.write(",".join(self.rows[0]) + "\n")
                for row in self.rows:
                    out.write(",".join(str(v) for v in row.values()) + "\n")
        return self.rows


def replayable(events):
    """The events a reader must get one by one, never coalesced: `progress`, `items`,
    `done`, `reset` (superseded `state` and `news` may be coalesced, as the SPEC allows)."""
    return [e for e in events if e.get("event") in ("progress", "items", "done", "reset")]


def action_order_problems(events):
    """What breaks the order of a stream's actions, as sentences: per action, `progress`
    fractions non-decreasing, nothing of it after its `done`, `done` once; ids strictly
    increasing over the whole stream."""
    problems = []
    last_id = -1
    fraction = {}
    finished = set()
    for event in events:
        eid = event.get("id")
        if isinstance(eid, int):
            # A snapshot may share the id of the event it stands beside; nothing else may.
            if eid < last_id or (eid == last_id and event.get("event") != "state"):
                problems.append(f"id {eid} after {last_id}")
            last_id = max(last_id, eid)
        data = event.get("data") if isinstance(event.get("data"), dict) else {}
        action = data.get("actionId")
        kind = event.get("event")
        if action is None or kind not in ("progress", "items", "done"):
            continue
        if action in finished:
            problems.append(f"{kind} of action {action} after its done (id {eid})")
        if kind == "progress":
            if data.get("fraction", 0) < fraction.get(action, 0):
                problems.append(f"progress of action {action} went back to {data.get('fraction')} (id {eid})")
            fraction[action] = data.get("fraction", 0)
        elif kind == "done":
            finished.add(action)
    return problems


def table():
    """Prints what the results file holds: per scenario, the invariants that held and every
    figure."""
    if not RESULTS.exists():
        return
    rows = {}
    for line in open(RESULTS):
        row = json.loads(line)
        rows.setdefault(row["scenario"], []).append(row)
    for scenario, entries in rows.items():
        held = [e for e in entries if e["kind"] == "invariant"]
        print(f"-- {scenario}: {sum(e['holds'] for e in held)}/{len(held)} invariants held")
        for f in (e for e in entries if e["kind"] == "figure"):
            print(f"   {f['name']}: {f['value']}{(' ' + f['unit']) if f['unit'] else ''}")


if __name__ == "__main__" and sys.argv[1:] == ["table"]:
    table()
