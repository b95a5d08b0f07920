"""The connection to PostgreSQL cut at the worst moment: a proxy between the server and
PostgreSQL (Tests/support/pgproxy.py) drops the connection right after forwarding a transaction's
`COMMIT` (it commits, and its answer is lost) or right before (it rolls back), or forwards
it and then lets nothing more through while the connection stays open (it commits, and no
answer ever comes), in turn with COMMITs it lets through. Publishers publish with their own ids and without any; a publish
answered 503 is retried with the ids its answer names, as a client should.

Invariants: every publish is answered 201 or 503; no publish answered 201 is missing and
none answered 503 is stored, looked up directly in PostgreSQL right after the 503 and before
any retry (the server asks PostgreSQL what became of a COMMIT whose answer it lost instead
of guessing); retrying with the answered ids stores each item once (one row
per logical publish, ids given by the server included); positions stay dense."""
import json
import os
import re
import subprocess
import threading
import time

from lib import Server, check, figure, finish, pick, postgres, request_json
from pgproxy import CommitCutter

PUBLISHES = pick(24, 600)  # per publisher
PUBLISHERS = pick(2, 4)
# A silenced COMMIT costs its publisher the operation deadline (5 s): a few of them, not a
# share that would grow with the full profile's thousands.
PATTERN = ["after", "pass", "before", "pass"] * pick(3, 30) + ["silent", "pass"]


def psql(url, sql):
    return subprocess.run(["psql", url, "-tAq", "-c", sql], text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          env={**os.environ, "PGCONNECT_TIMEOUT": "5"}).stdout.split()


with postgres() as (given, _, _):
    began = time.monotonic()
    # A database of its own, so that what it finds stored is what this run stored.
    database = f"ptr_chaos_commit_{os.getpid()}_{int(time.time())}"
    psql(given, f"CREATE DATABASE {database}")
    url = re.sub(r"/[^/?]+(\?.*)?$", f"/{database}", given)
    user, password, host, port = re.match(r"postgres(?:ql)?://([^@:]+)(:[^@]*)?@([^:/]+):(\d+)/", url).groups()
    cutter = CommitCutter(host, int(port))
    proxied = f"postgres://{user}{password or ''}@127.0.0.1:{cutter.port}/{database}?sslmode=disable"
    server = Server("--no-demo", database=proxied).start()
    deadline = time.monotonic() + 20
    while request_json(server, "GET", "/readyz")[0] != 200 and time.monotonic() < deadline:
        time.sleep(0.1)
    check("the server is ready through the proxy", request_json(server, "GET", "/readyz")[0] == 200)
    cutter.cut(PATTERN)

    lock = threading.Lock()
    answered_201 = {}  # id -> the publish that was acknowledged
    refused_but_stored = set()  # ids a 503 was about, found stored right after it
    statuses = {}
    retries = [0]
    slowest = [0.0]
    logical = []  # one entry per publish a client meant to make: its ids once known

    def publisher(number):
        for n in range(PUBLISHES):
            given = n % 2 == 0
            body = {"title": f"publisher {number} item {n}"}
            if given:
                body["id"] = f"ambiguous-{number}-{n}"
            while True:
                started = time.monotonic()
                try:
                    status, answer = request_json(server, "POST", "/api/items", body, timeout=30)
                except OSError as error:
                    status, answer = f"no answer ({type(error).__name__})", None
                took = time.monotonic() - started
                with lock:
                    statuses[status] = statuses.get(status, 0) + 1
                    slowest[0] = max(slowest[0], took)
                if status == 201:
                    ids = [item["id"] for item in answer["items"]]
                    with lock:
                        for item_id in ids:
                            answered_201[item_id] = True
                        logical.append(ids)
                    break
                if status != 503:
                    break
                ids = answer.get("ids") or ([body["id"]] if "id" in body else [])
                # Looked up at once, directly in PostgreSQL, before the retry could store it.
                quoted = ",".join("'" + i.replace("'", "''") + "'" for i in ids)
                stored_now = psql(url, f"SELECT id FROM item WHERE id IN ({quoted})") if ids else []
                with lock:
                    retries[0] += 1
                    refused_but_stored.update(stored_now)
                # A client retries with the ids the 503 named, so a retry is an upsert.
                body["id"] = ids[0] if ids else body.get("id")
                time.sleep(0.05)

    threads = [threading.Thread(target=publisher, args=(n,)) for n in range(PUBLISHERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    counts = dict(cutter.counts)
    cutter.cut([])

    # What each answer said, against what PostgreSQL holds, read directly (not through the proxy).
    stored = set(psql(url, "SELECT id FROM item"))
    positions = [int(p) for p in psql(url, "SELECT position FROM item ORDER BY position")]
    head = int(psql(url, "SELECT position FROM feed_head")[0])
    acknowledged_missing = [i for i in answered_201 if i not in stored]
    refused_stored = sorted(refused_but_stored)
    check("every publish is answered 201 or 503", set(statuses) <= {201, 503}, statuses)
    check("COMMITs were cut after being forwarded", counts["after"] >= pick(5, 50), counts)
    check("COMMITs were cut before being forwarded", counts["before"] >= pick(5, 50), counts)
    check("COMMITs were forwarded and their answers never came", counts["silent"] >= pick(2, 10), counts)
    check("no publish answered 201 is missing", not acknowledged_missing, acknowledged_missing[:5])
    check("no publish answered 503 is stored", not refused_stored, refused_stored[:5])
    check("retrying with the answered ids stores each publish once", len(stored) == len(logical) == PUBLISHERS * PUBLISHES,
          f"{len(stored)} rows for {len(logical)} publishes")
    check("positions are dense 1…head", positions == list(range(1, head + 1)), f"{len(positions)} positions, head {head}")
    check("the server is alive at the end", server.alive())
    lines = "".join(server.log_lines)
    server.stop()
    cutter.close()
    psql(given, f"DROP DATABASE IF EXISTS {database}")

    figure("publishes", PUBLISHERS * PUBLISHES)
    figure("COMMITs cut after forwarding / before / silenced / passed",
           f"{counts['after']} / {counts['before']} / {counts['silent']} / {counts['pass']}")
    figure("answered 201 and not stored", len(acknowledged_missing))
    figure("answered 503 and stored", len(refused_stored))
    figure("503 answers retried", retries[0])
    figure("publish statuses", json.dumps({str(k): v for k, v in statuses.items()}))
    figure("slowest answer", slowest[0], "s")
    figure("COMMITs whose answer was lost, asked about (log lines)", lines.count("answer to a COMMIT was lost"))
    figure("duration", time.monotonic() - began, "s")
finish()
