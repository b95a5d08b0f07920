"""What every chaos scenario stands on: a server process it can start, kill and restart on
the same port and database; plain HTTP over sockets; an SSE reader; the process's resident
memory, CPU time and open descriptors; and the record of each figure and invariant.

A scenario is `scenario_NAME.py`: it reads `PROFILE` ("short" in CI, "full" by hand) to
pick its numbers, calls `check(...)` for every invariant (a broken one makes it exit 1 at
`finish()`), and `figure(...)` for every number RELIABILITY.md reports."""

import contextlib
import http.client
import json
import os
import pathlib
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
ARTIFACTS = pathlib.Path(os.environ.get("ARTIFACTS", ROOT / "artifacts")) / "chaos"
# run.sh starts a fresh file per run; a scenario run alone appends to it.
RESULTS = pathlib.Path(os.environ.get("CHAOS_RESULTS", ARTIFACTS / "results.jsonl"))
PROFILE = os.environ.get("CHAOS_PROFILE", "short")
SCENARIO = pathlib.Path(sys.argv[0]).stem.removeprefix("scenario_")


def _default_binary():
    for build in ("release", "debug"):
        candidate = ROOT / ".build" / build / "refresh-server"
        if candidate.exists():
            return str(candidate)
    return str(ROOT / ".build" / "debug" / "refresh-server")


BINARY = os.environ.get("REFRESH_SERVER") or _default_binary()


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


def _record(row):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    row = {"scenario": SCENARIO, "profile": PROFILE, "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           **row}
    with open(RESULTS, "a") as results:
        results.write(json.dumps(row) + "\n")


# ---------------------------------------------------------------- the server process

def free_port(host="127.0.0.1"):
    with socket.socket() as probe:
        probe.bind((host, 0))
        return probe.getsockname()[1]


class Server:
    """One refresh-server process. `start()` again after `kill()` or `stop()` runs it on the
    same port and database, as a restart would. Its output is kept in `log_lines`."""

    def __init__(self, *flags, database=":memory:", port=None, host="127.0.0.1", env=None):
        self.flags = list(flags)
        self.database = database
        self.host = host
        self.port = port or free_port(host)
        self.env = env
        self.process = None
        self.log_lines = []

    @property
    def base(self):
        return f"http://{self.host}:{self.port}"

    def start(self, timeout=20):
        self.process = subprocess.Popen(
            [BINARY, "--host", self.host, "--port", str(self.port), "--public", str(ROOT / "Public"),
             "--log-level", "warning", "--database", self.database, "--min-refresh-ms", "0", *self.flags],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            env={**os.environ, **(self.env or {})})
        started = threading.Event()

        def read(process=self.process):
            for line in process.stdout:
                self.log_lines.append(line)
                if re.search(r"http://[0-9.:]+", line):
                    started.set()
            started.set()

        threading.Thread(target=read, daemon=True).start()
        started.wait(timeout)
        if self.process.poll() is not None or not self.ready(timeout=timeout):
            raise RuntimeError("the server did not start:\n" + "".join(self.log_lines[-30:]))
        return self

    def ready(self, timeout=10):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError, http.client.HTTPException):
                if request(self, "GET", "/healthz", timeout=1)[0] == 200:
                    return True
            time.sleep(0.05)
        return False

    @property
    def pid(self):
        return self.process.pid

    def alive(self):
        return self.process is not None and self.process.poll() is None

    def kill(self):
        """Ends it as a crash would."""
        if self.alive():
            self.process.kill()
        self.process.wait(timeout=10)

    def stop(self, timeout=10):
        """SIGTERM; returns the seconds it took to exit (None when it had to be killed)."""
        if not self.alive():
            return 0.0
        began = time.monotonic()
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=timeout)
            return time.monotonic() - began
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)
            return None

    def rss_kib(self):
        return _status_field(self.pid, "VmRSS")

    def peak_rss_kib(self):
        return _status_field(self.pid, "VmHWM")

    def open_fds(self):
        return len(os.listdir(f"/proc/{self.pid}/fd"))

    def cpu_seconds(self):
        fields = open(f"/proc/{self.pid}/stat").read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        if self.alive():
            self.stop()


def _status_field(pid, name):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith(name + ":"):
            return int(line.split()[1])
    return 0


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

def request(server, method, path, body=None, headers=None, timeout=10):
    """One request on a connection of its own: (status, headers dict (lower-case names),
    body bytes). A dict or list body is sent as JSON."""
    base = server.base if isinstance(server, Server) else server
    host, port = re.match(r"https?://([^:/]+):(\d+)", base).groups()
    connection = http.client.HTTPConnection(host, int(port), timeout=timeout)
    try:
        headers = dict(headers or {})
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
            headers.setdefault("Content-Type", "application/json")
        elif isinstance(body, str):
            body = body.encode()
        connection.request(method, path, body=body, headers=headers)
        response = connection.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        connection.close()


def request_json(server, method, path, body=None, headers=None, timeout=10):
    status, _, data = request(server, method, path, body, headers, timeout)
    try:
        return status, json.loads(data) if data else None
    except ValueError:
        return status, data


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


def parse_sse(text):
    """The events in an SSE text: a list of dicts with id, event, data (parsed JSON when it
    is), and retry, as the SSE specification frames them."""
    events = []
    current = {}
    for line in text.replace("\r\n", "\n").split("\n"):
        if line == "":
            if current:
                if "data" in current:
                    with contextlib.suppress(ValueError):
                        current["data"] = json.loads(current["data"])
                events.append(current)
            current = {}
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "data":
            current["data"] = current["data"] + "\n" + value if "data" in current else value
        elif name in ("id", "event", "retry"):
            current[name] = value
    return events


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
