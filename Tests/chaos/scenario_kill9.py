"""`kill -9` in the middle of a publishing loop, again and again, on SQLite (a file) and on
PostgreSQL: several publishers POST /api/items with ids of their own; a publisher whose
request fails (the server is gone) retries the same id once the server is back, as a client
that did not get its 201 should.

Invariants, after every restart: every item acknowledged with 201 is there (paging through
GET /api/items); none is doubled (ids unique in the listing); feed positions are dense and
strictly increasing, 1…n with n the number of items, and the head the store keeps is n
(read from the database: the API shows order, not positions); publishing resumes (a new
publish answers 201)."""
import itertools
import os
import sqlite3
import subprocess
import tempfile
import threading
import time

from lib import Server, check, figure, finish, pick, postgres, request, request_json

RESTARTS = pick(5, 20)
PUBLISHERS = pick(4, 8)
RUN_SECONDS = pick(0.8, 2.5)  # publishing time before each kill


class Publishers:
    """Threads that publish unique ids until told to stop; `acknowledged` holds every id a
    201 answered."""

    def __init__(self, server, count):
        self.server = server
        self.acknowledged = set()
        self.attempted = 0
        self.refused = {}  # status → count of non-201 answers (not connection errors)
        self.lock = threading.Lock()
        self.running = True
        self.go = threading.Event()  # cleared while a restart is checked
        self.go.set()
        self.in_flight = 0
        self.threads = [threading.Thread(target=self.publish, args=(n,), daemon=True) for n in range(count)]
        for thread in self.threads:
            thread.start()

    def publish(self, publisher):
        for n in itertools.count():
            item_id = f"kill9-{publisher}-{n}"
            while self.running:
                self.go.wait()
                with self.lock:
                    self.attempted += 1
                    self.in_flight += 1
                try:
                    status, _, _ = request(self.server, "POST", "/api/items",
                                           {"id": item_id, "title": f"item {n} of publisher {publisher}"}, timeout=5)
                except OSError:
                    time.sleep(0.02)  # the server is down: retry the same id
                    continue
                finally:
                    with self.lock:
                        self.in_flight -= 1
                if status == 201:
                    with self.lock:
                        self.acknowledged.add(item_id)
                    break
                with self.lock:
                    self.refused[status] = self.refused.get(status, 0) + 1
                time.sleep(0.02)
            if not self.running:
                return

    def snapshot(self):
        with self.lock:
            return set(self.acknowledged)

    def pause(self):
        """Holds every publisher before its next request and waits for those in flight."""
        self.go.clear()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with self.lock:
                if self.in_flight == 0:
                    return
            time.sleep(0.01)

    def resume(self):
        self.go.set()

    def stop(self):
        self.go.set()
        self.running = False
        for thread in self.threads:
            thread.join(timeout=10)


def listed_ids(server):
    ids, before = [], ""
    while True:
        status, page = request_json(server, "GET", f"/api/items?limit=200{'&before=' + before if before else ''}")
        if status != 200:
            raise RuntimeError(f"listing answered {status}: {page}")
        ids += [item["id"] for item in page["items"]]
        if not page["hasMore"] or not page["items"]:
            return ids
        before = page["items"][-1]["id"]


def sqlite_positions(path):
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10) as db:
        positions = [row[0] for row in db.execute("SELECT position FROM item ORDER BY position")]
        return positions, (positions[-1] if positions else 0)


def postgres_positions(url):
    def psql(sql):
        return subprocess.run(["psql", url, "-tAq", "-c", sql], check=True, text=True, stdout=subprocess.PIPE,
                              env={**os.environ, "PGCONNECT_TIMEOUT": "5"}).stdout.split()
    rows = psql("SELECT position FROM feed_head UNION ALL (SELECT position FROM item ORDER BY position)")
    return [int(p) for p in rows[1:]], int(rows[0])


def run(store, database, positions_of):
    print(f"-- {store}", flush=True)
    server = Server("--no-demo", database=database)
    server.start()
    publishers = Publishers(server, PUBLISHERS)
    missing_total = doubled_total = gaps_total = 0
    restart_seconds = []
    began = time.monotonic()
    for restart in range(RESTARTS):
        time.sleep(RUN_SECONDS)
        server.kill()  # SIGKILL, mid-flight: requests are in progress on every publisher
        killed_at = time.monotonic()
        server.start()
        restart_seconds.append(time.monotonic() - killed_at)
        # Retries of the requests the kill cut go first; then the feed holds still to be read.
        time.sleep(0.2)
        publishers.pause()
        acknowledged = publishers.snapshot()
        ids = listed_ids(server)
        present = set(ids)
        missing = acknowledged - present
        doubled = len(ids) - len(present)
        positions, head = positions_of()
        dense = positions == list(range(1, len(positions) + 1)) and head == len(positions)
        missing_total += len(missing)
        doubled_total += doubled
        gaps_total += 0 if dense else 1
        check(f"{store} restart {restart + 1}: every acknowledged item is there", not missing,
              f"{len(missing)} missing, e.g. {sorted(missing)[:5]}")
        check(f"{store} restart {restart + 1}: no item listed twice", doubled == 0, doubled)
        check(f"{store} restart {restart + 1}: positions 1…n dense, head n", dense and len(positions) == len(present),
              f"{len(positions)} positions for {len(present)} ids, head {head}, first gaps "
              f"{[p for a, p in zip(range(1, len(positions) + 1), positions) if a != p][:5]}")
        publishers.resume()
    # Publishing resumes: the publishers' retries and new ids get 201 after the last restart.
    before = len(publishers.snapshot())
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and len(publishers.snapshot()) < before + PUBLISHERS:
        time.sleep(0.05)
    check(f"{store}: publishing resumes after the last restart", len(publishers.snapshot()) >= before + PUBLISHERS)
    publishers.stop()
    acknowledged = publishers.snapshot()
    ids = listed_ids(server)
    check(f"{store}: at the end, every acknowledged item is there exactly once",
          acknowledged <= set(ids) and len(ids) == len(set(ids)), f"{len(acknowledged - set(ids))} missing")
    status, _ = request_json(server, "GET", "/readyz")
    check(f"{store}: ready after all the kills", status == 200, status)
    server.stop()
    figure(f"{store} items acknowledged", len(acknowledged))
    figure(f"{store} items stored", len(ids))
    figure(f"{store} publish attempts", publishers.attempted)
    figure(f"{store} non-201 answers", str(publishers.refused or "none"))
    figure(f"{store} missing", missing_total)
    figure(f"{store} doubled", doubled_total)
    figure(f"{store} position gaps", gaps_total)
    figure(f"{store} restarts", RESTARTS)
    figure(f"{store} slowest restart to healthy", max(restart_seconds), "s")
    figure(f"{store} duration", time.monotonic() - began, "s")


folder = tempfile.mkdtemp(prefix="ptr-chaos-kill9.")
sqlite_path = os.path.join(folder, "feed.sqlite")
run("sqlite", sqlite_path, lambda: sqlite_positions(sqlite_path))
with postgres() as (url, _, _):
    run("postgres", url, lambda: postgres_positions(url))
subprocess.run(["rm", "-rf", folder], check=False)
finish()
