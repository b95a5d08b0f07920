"""The cost of reading a feed with a token where access is checked: a session created, and its
stream opened (its first chunk read), with no token on a public feed and with a token of each
kind of key on a private one, against one server with every kind of key.

    python3 bench/access-cost.py [--count 1000] [--rounds 3] [--server PATH]

Per kind, `count` sessions are created on one kept-alive connection, then each session's
stream is opened on a connection of its own and closed once its first event arrives; the
server's CPU time (`/proc/PID/stat`) over each half, divided by `count`, is the figure, as is
the wall time. Rounds interleave the kinds. The verification is the token's signature check
(HS256, RS256, ES256, EdDSA) and the claims; the rest of each request is the same for all.
Prints a Markdown table and writes bench/results/DATE-access-cost.json."""

import argparse
import datetime
import http.client
import json
import os
import pathlib
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "Tests" / "support"))
from jwt_tokens import EcKey, Ed25519Key, HmacKey, RsaKey, mint  # noqa: E402
from server import Server  # noqa: E402

parser = argparse.ArgumentParser()
parser.add_argument("--count", type=int, default=1000)
parser.add_argument("--rounds", type=int, default=3)
parser.add_argument("--server", default=str(ROOT / ".build" / "release" / "refresh-server"))
arguments = parser.parse_args()

work = pathlib.Path(tempfile.mkdtemp())
keys = {"HS256": HmacKey(kid="hs"), "RS256": RsaKey(kid="rs"), "ES256": EcKey(kid="es"), "EdDSA": Ed25519Key(kid="ed")}
keys["HS256"].write_secret(work / "hs.key")
for name, kid in (("RS256", "rs"), ("ES256", "es"), ("EdDSA", "ed")):
    keys[name].write_pem(work / f"{kid}.pem")
flags = [flag for kid in ("hs.key", "rs.pem", "es.pem", "ed.pem") for flag in ("--auth-key", str(work / kid))]
server = Server("--max-sessions", "100000", "--max-sessions-per-client", "100000", "--max-streams-per-client", "100000", *flags,
                binary=arguments.server).start()
process = server.process
port = server.port
ticks = os.sysconf("SC_CLK_TCK")


def cpu():
    fields = open(f"/proc/{process.pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / ticks


def create(connection, token, feed):
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    connection.request("POST", "/api/sessions", body=json.dumps({"feed": feed}), headers=headers)
    reply = connection.getresponse()
    body = reply.read()
    assert reply.status == 201, body
    return json.loads(body)["id"]


def open_stream(session, token):
    with socket.create_connection(("127.0.0.1", port)) as stream:
        auth = f"Authorization: Bearer {token}\r\n" if token else ""
        stream.sendall(f"GET /api/sessions/{session}/events HTTP/1.1\r\nHost: 127.0.0.1\r\n{auth}\r\n".encode())
        received = b""
        while b"event: state" not in received:
            chunk = stream.recv(65536)
            assert chunk, received
            received += chunk
        assert received.startswith(b"HTTP/1.1 200"), received[:200]


def measure(kind):
    token = None if kind == "none" else mint(keys[kind], sub="bench", read=["bench:*"], lifetime=3600)
    feed = "main" if kind == "none" else "bench:cost"
    connection = http.client.HTTPConnection("127.0.0.1", port)
    started, before = time.perf_counter(), cpu()
    sessions = [create(connection, token, feed) for _ in range(arguments.count)]
    created, middle = time.perf_counter(), cpu()
    for session in sessions:
        open_stream(session, token)
    opened, after = time.perf_counter(), cpu()
    for session in sessions:
        connection.request("DELETE", f"/api/sessions/{session}")
        connection.getresponse().read()
    connection.close()
    per = 1e6 / arguments.count
    return {"createCpuUs": (middle - before) * per, "createWallUs": (created - started) * per,
            "openCpuUs": (after - middle) * per, "openWallUs": (opened - created) * per}


kinds = ["none", "HS256", "RS256", "ES256", "EdDSA"]
results = {kind: [] for kind in kinds}
try:
    measure("HS256")  # warm-up
    for round_ in range(arguments.rounds):
        for kind in (kinds if round_ % 2 == 0 else list(reversed(kinds))):
            results[kind].append(measure(kind))
finally:
    server.stop()

rows = []
base = {field: statistics.median(r[field] for r in results["none"]) for field in results["none"][0]}
for kind in kinds:
    median = {field: statistics.median(r[field] for r in results[kind]) for field in results[kind][0]}
    rows.append((kind, median))
out = [f"{arguments.count} sessions per kind, {arguments.rounds} interleaved rounds, medians; server CPU and wall time per request",
       "", "| token | create: CPU | create: wall | stream open: CPU | stream open: wall |", "| --- | ---: | ---: | ---: | ---: |"]
for kind, median in rows:
    label = "none (public feed)" if kind == "none" else f"{kind} (private feed)"
    cells = [f"{median[f]:.1f} µs ({median[f] / base[f]:.2f}×)" if kind != "none" else f"{median[f]:.1f} µs"
             for f in ("createCpuUs", "createWallUs", "openCpuUs", "openWallUs")]
    out.append(f"| {label} | " + " | ".join(cells) + " |")
print("\n".join(out))
stamp = datetime.date.today().isoformat()
(ROOT / "bench" / "results" / f"{stamp}-access-cost.json").write_text(json.dumps({"count": arguments.count, "rounds": results}, indent=2))
