"""The server process every Python suite starts: `Server(*flags)` runs `refresh-server` on a
free port of loopback with the page's folder, an in-memory store and warnings only, unless
told otherwise; `start()` waits until it answers `/healthz`. Its output is read all along (a
full pipe would stall it) and kept in `log_lines`; `start()` again after `kill()` or
`stop()` runs it on the same port and database, as a restart would."""

import contextlib
import http.client
import os
import pathlib
import re
import signal
import subprocess
import threading
import time

from client import free_port, request

ROOT = pathlib.Path(__file__).resolve().parents[2]


def default_binary():
    """`REFRESH_SERVER`, else the release build, else the debug one."""
    if os.environ.get("REFRESH_SERVER"):
        return os.environ["REFRESH_SERVER"]
    for build in ("release", "debug"):
        candidate = ROOT / ".build" / build / "refresh-server"
        if candidate.exists():
            return str(candidate)
    return str(ROOT / ".build" / "debug" / "refresh-server")


class Server:
    """One refresh-server process. `start()` again after `kill()` or `stop()` runs it on the
    same port and database, as a restart would. Its output is kept in `log_lines`."""

    def __init__(self, *flags, binary=None, database=":memory:", port=None, host="127.0.0.1", env=None):
        self.binary = binary or default_binary()
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

    def start(self, timeout=60):
        self.process = subprocess.Popen(
            [self.binary, "--host", self.host, "--port", str(self.port), "--public", str(ROOT / "Public"),
             "--log-level", "warning", "--database", self.database, *self.flags],
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
                if request(self, "GET", "/healthz", timeout=5)[0] == 200:
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
