"""`kill -9` in the middle of a publishing loop, again and again, on SQLite (a file) and on
PostgreSQL: several publishers, spread over three feeds (`main` through POST /api/items, two
named feeds through POST /api/feeds/{feed}/items), publish ids of their own; a publisher
whose request fails (the server is gone) retries the same id once the server is back, as a
client that did not get its 201 should.

Invariants, after every restart and for every feed: every item acknowledged with 201 is in
its own feed (paging through its listing) and in no other; none is doubled (ids unique in
the listing); the database holds no feed but these; the feed's positions are dense and
strictly increasing, 1…n with n its number of items, and the head the store keeps for it
is n (read from the database: the API shows order, not positions); publishing resumes (a
new publish answers 201)."""
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
FEEDS = ("main", "team.eng", "user:42")  # publisher n publishes to FEEDS[n % 3]


def items_path(feed):
    """`main` through the path every client used before feeds, the others by name."""
    return "/api/items" if feed == "main" else f"/api/feeds/{feed}/items"


class Publishers:
    """Threads that publish unique ids until told to stop, each to its own feed;
    `acknowledged` holds every (feed, id) a 201 answered."""

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
        path = items_path(FEEDS[publisher % len(FEEDS)])
        for n in itertools.count():
            item_id = f"kill9-{publisher}-{n}"
            while self.running:
                self.go.wait()
                with self.lock:
                    self.attempted += 1
                    self.in_flight += 1
                try:
                    status, _, _ = request(self.server, "POST", path,
                                           {"id": item_id, "title": f"item {n} of publisher {publisher}"}, timeout=5)
                except OSError:
                    time.sleep(0.02)  # the server is down: retry the same id
                    continue
                finally:
                    with self.lock:
                        self.in_flight -= 1
                if status == 201:
                    with self.lock:
                        self.acknowledged.add((FEEDS[publisher % len(FEEDS)], item_id))
                    break
                with self.lock:
                    self.refused[status] = self.refused.get(status, 0) + 1
                time.sleep(0.02)
            if not self.running:
                return

    def snapshot(self):
        with self.lock:
            return set(self.acknowledged)

    def of(self, feed):
        return {item_id for named, item_id in self.snapshot() if named == feed}

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


def listed_ids(server, feed):
    ids, before = [], ""
    while True:
        status, page = request_json(server, "GET", f"{items_path(feed)}?limit=200{'&before=' + before if before else ''}")
        if status != 200:
            raise RuntimeError(f"listing answered {status}: {page}")
        ids += [item["id"] for item in page["items"]]
        if not page["hasMore"] or not page["items"]:
            return ids
        before = page["items"][-1]["id"]


def sqlite_positions(path):
    """{feed: (positions in order, head)}; SQLite's head is a feed's last position."""
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10) as db:
        feeds = {}
        for feed, position in db.execute("SELECT feed, position FROM item ORDER BY feed, position"):
            feeds.setdefault(feed, []).append(position)
        return {feed: (positions, positions[-1]) for feed, positions in feeds.items()}


def postgres_positions(url):
    """{feed: (positions in order, the head row of feed_head)}, feeds of either table."""
    def psql(sql):
        return subprocess.run(["psql", url, "-tAq", "-F", " ", "-c", sql], check=True, text=True, stdout=subprocess.PIPE,
                              env={**os.environ, "PGCONNECT_TIMEOUT": "5"}).stdout.splitlines()
    heads = dict(line.split() for line in psql("SELECT feed, position FROM feed_head") if line)
    positions = {}
    for line in psql("SELECT feed, position FROM item ORDER BY feed, position"):
        if line:
            feed, position = line.split()
            positions.setdefault(feed, []).append(int(position))
    return {feed: (positions.get(feed, []), int(heads.get(feed, 0))) for feed in set(heads) | set(positions)}


def run(store, database, positions_of):
    print(f"-- {store}", flush=True)
    server = Server("--no-demo", database=database)
    server.start()
    publishers = Publishers(server, PUBLISHERS)
    missing_total = doubled_total = gaps_total = strays_total = 0
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
        listed = {feed: listed_ids(server, feed) for feed in FEEDS}
        stored = positions_of()
        for feed in FEEDS:
            acknowledged = publishers.of(feed)
            ids = listed[feed]
            present = set(ids)
            missing = acknowledged - present
            elsewhere = {other: len(acknowledged & set(listed[other])) for other in FEEDS if other != feed}
            doubled = len(ids) - len(present)
            positions, head = stored.get(feed, ([], 0))
            dense = positions == list(range(1, len(positions) + 1)) and head == len(positions)
            missing_total += len(missing)
            doubled_total += doubled
            strays_total += sum(elsewhere.values())
            gaps_total += 0 if dense else 1
            check(f"{store} restart {restart + 1}: every acknowledged item of {feed} is there", not missing,
                  f"{len(missing)} missing, e.g. {sorted(missing)[:5]}")
            check(f"{store} restart {restart + 1}: no item of {feed} is in another feed", not any(elsewhere.values()),
                  elsewhere)
            check(f"{store} restart {restart + 1}: no item of {feed} listed twice", doubled == 0, doubled)
            check(f"{store} restart {restart + 1}: {feed}'s positions 1…n dense, head n",
                  dense and len(positions) == len(present),
                  f"{len(positions)} positions for {len(present)} ids, head {head}, first gaps "
                  f"{[p for a, p in zip(range(1, len(positions) + 1), positions) if a != p][:5]}")
        check(f"{store} restart {restart + 1}: the store holds no feed but {', '.join(FEEDS)}",
              set(stored) <= set(FEEDS), sorted(set(stored) - set(FEEDS)))
        publishers.resume()
    # Publishing resumes: the publishers' retries and new ids get 201 after the last restart.
    before = {feed: len(publishers.of(feed)) for feed in FEEDS}
    resumed = lambda: all(len(publishers.of(feed)) > before[feed] for feed in FEEDS)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not resumed():
        time.sleep(0.05)
    check(f"{store}: publishing resumes on every feed after the last restart", resumed(),
          {feed: len(publishers.of(feed)) - before[feed] for feed in FEEDS})
    publishers.stop()
    acknowledged = publishers.snapshot()
    stored_total = 0
    listed = {feed: listed_ids(server, feed) for feed in FEEDS}
    for feed, ids in listed.items():
        stored_total += len(ids)
        mine = publishers.of(feed)
        elsewhere = sum(len(mine & set(listed[other])) for other in FEEDS if other != feed)
        check(f"{store}: at the end, every acknowledged item of {feed} is there exactly once, and only there",
              mine and mine <= set(ids) and len(ids) == len(set(ids)) and not elsewhere,
              f"{len(mine)} acknowledged, {len(mine - set(ids))} missing, {elsewhere} in another feed")
        figure(f"{store} items acknowledged in {feed}", len(mine))
    status, _ = request_json(server, "GET", "/readyz")
    check(f"{store}: ready after all the kills", status == 200, status)
    server.stop()
    figure(f"{store} items acknowledged", len(acknowledged))
    figure(f"{store} items stored", stored_total)
    figure(f"{store} publish attempts", publishers.attempted)
    figure(f"{store} non-201 answers", str(publishers.refused or "none"))
    figure(f"{store} missing", missing_total)
    figure(f"{store} doubled", doubled_total)
    figure(f"{store} in another feed", strays_total)
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
