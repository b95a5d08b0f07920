"""PostgreSQL taken away under two instances sharing it (no front: each is asked directly):
its connections terminated (`pg_terminate_backend`) and the server itself restarted, while
publishers publish to three feeds (`main` and two named ones) through both instances and
sessions of every feed on both listen for news.

Invariants: every publish is answered 201 or 503 (never 500, never another status); nothing
acknowledged with 201 is lost, and each item is in the feed it was published to; every
feed's positions stay dense 1…its head; while PostgreSQL is down each instance's /readyz
answers 503, and 200 again once it is back; every session hears its own feed's news exactly
once and no other feed's: its `news` heads strictly increase (no head twice, none
backwards), the last one is its feed's head, its count is exactly head − shown, and the
newest item of every `news` it got is an item of its own feed."""
import http.client
import json
import os
import subprocess
import threading
import time

from lib import Server, check, figure, finish, pick, postgres, request, request_json

SESSIONS = pick(3, 20)  # per instance
PUBLISHERS = pick(2, 6)
TERMINATIONS = pick(3, 10)
RESTARTS = pick(1, 3)
FEEDS = ("main", "team.eng", "user:42")
# A publish is answered within about 20 s by design (5 s to reach the COMMIT, 5 s for its
# answer, 10 s to ask PostgreSQL what became of a COMMIT whose answer was lost); one without
# an answer after a minute is hung, not slow.
ANSWER_WITHIN = 60
RUN = f"{os.getpid()}-{int(time.time())}"  # ids of this run's own, in a database used before


def items_path(feed):
    """`main` through the path every client used before feeds, the others by name."""
    return "/api/items" if feed == "main" else f"/api/feeds/{feed}/items"

changed = threading.Condition()


class Stream(threading.Thread):
    """A session's event stream; keeps every event and the heads of its `news`."""

    def __init__(self, server, session):
        super().__init__(daemon=True)
        self.server, self.session = server, session
        self.events, self.news = [], []
        self.ended = False

    def run(self):
        connection = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=None)
        try:
            connection.request("GET", f"/api/sessions/{self.session}/events", headers={"Accept": "text/event-stream"})
            response = connection.getresponse()
            fields = {}
            while line := response.readline():
                line = line.decode().rstrip("\r\n")
                if line:
                    if not line.startswith(":"):
                        key, _, value = line.partition(":")
                        fields[key] = value[1:] if value.startswith(" ") else value
                    continue
                if "event" in fields:
                    data = json.loads(fields.get("data") or "null")
                    with changed:
                        self.events.append((fields["event"], data))
                        if fields["event"] == "news":
                            self.news.append(data)
                        changed.notify_all()
                fields = {}
        except (OSError, http.client.HTTPException, ValueError):
            pass
        finally:
            with changed:
                self.ended = True
                changed.notify_all()


def wait_until(predicate, seconds):
    deadline = time.monotonic() + seconds
    with changed:
        while not (holds := predicate()):
            if time.monotonic() >= deadline:
                break
            changed.wait(0.1)
    return holds


def poll(predicate, seconds, every=0.1):
    deadline = time.monotonic() + seconds
    while not predicate():
        if time.monotonic() >= deadline:
            return False
        time.sleep(every)
    return True


def open_session(server, feed):
    """A session of `feed` (`main` made without naming it, as before feeds), showing its first page."""
    status, body = request_json(server, "POST", "/api/sessions",
                                {"config": {"news": "badge"}, **({} if feed == "main" else {"feed": feed})})
    assert status == 201 and body.get("feed") == feed, (status, body)
    stream = Stream(server, body["id"])
    stream.feed = feed
    stream.start()
    assert wait_until(lambda: any(name == "state" for name, _ in stream.events), 10), "the stream did not open"
    status, _ = request_json(server, "POST", f"/api/sessions/{stream.session}/load-more")
    first = lambda: next((d for name, d in stream.events if name == "items" and d.get("head") is not None), None)
    assert status == 202 and wait_until(lambda: first() is not None, 10), "no first page"
    stream.shown = first()["head"]
    return stream


class Publishers:
    def __init__(self, servers, count):
        self.servers = servers
        self.acknowledged = set()
        self.statuses = {}
        self.slowest = 0.0
        self.lock = threading.Lock()
        self.running = True
        self.threads = [threading.Thread(target=self.publish, args=(n,), daemon=True) for n in range(count)]
        for thread in self.threads:
            thread.start()

    def publish(self, publisher):
        n = 0
        while self.running:
            server = self.servers[(publisher + n) % len(self.servers)]
            feed = FEEDS[(publisher + n) % len(FEEDS)]
            item_id = f"pgfault-{RUN}-{publisher}-{n}"
            began = time.monotonic()
            try:
                status, _, _ = request(server, "POST", items_path(feed), {"id": item_id, "title": f"item {n}"}, timeout=ANSWER_WITHIN)
            except OSError as error:
                status = f"no answer ({type(error).__name__})"
            with self.lock:
                self.slowest = max(self.slowest, time.monotonic() - began)
                self.statuses[status] = self.statuses.get(status, 0) + 1
                if status == 201:
                    self.acknowledged.add((feed, item_id))
            if status == 201:
                n += 1
            else:
                time.sleep(0.1)  # retry the same id, as a client without its 201 does
            time.sleep(0.01)

    def count(self):
        with self.lock:
            return len(self.acknowledged)

    def stop(self):
        self.running = False
        for thread in self.threads:
            thread.join(timeout=ANSWER_WITHIN + 5)


def psql(url, sql):
    return subprocess.run(["psql", url, "-tAq", "-c", sql], text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          env={**os.environ, "PGCONNECT_TIMEOUT": "5"}).stdout.split()


with postgres() as (url, stop_postgres, start_postgres):
    began = time.monotonic()
    servers = [Server("--no-demo", "--instance", name, "--head-poll", "1", database=url).start() for name in ("a", "b")]
    streams = [open_session(server, FEEDS[n % len(FEEDS)]) for server in servers for n in range(SESSIONS)]
    publishers = Publishers(servers, PUBLISHERS)
    time.sleep(0.5)

    # Connections terminated under load.
    terminated = 0
    for _ in range(TERMINATIONS):
        before = publishers.count()
        terminated += sum(int(n) for n in psql(url, "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                                                     "WHERE datname = current_database() AND pid <> pg_backend_pid()"))
        check("publishing goes on after pg_terminate_backend", poll(lambda: publishers.count() > before + 2, 15),
              f"{publishers.count() - before} acknowledged since")
        time.sleep(0.3)

    # PostgreSQL stopped and started again.
    down_seconds, back_seconds = [], []
    if stop_postgres is None:
        print("  PTR_TEST_POSTGRES names an outside server: its restart is not tested", flush=True)
    for _ in range(RESTARTS if stop_postgres else 0):
        stopped_at = time.monotonic()
        stop_postgres()
        went_down = [poll(lambda s=s: request(s, "GET", "/readyz", timeout=5)[0] == 503, 30) for s in servers]
        down_seconds.append(time.monotonic() - stopped_at)
        check("/readyz answers 503 on every instance while PostgreSQL is down", all(went_down), went_down)
        status, body = request_json(servers[0], "GET", "/readyz", timeout=5)
        check("/readyz's 503 is a JSON error naming the reason", status != 503 or (
            isinstance(body, dict) and body.get("error") in ("store_unavailable", "notifications_unavailable")), body)
        time.sleep(1)
        started_at = time.monotonic()
        start_postgres()
        came_back = [poll(lambda s=s: request(s, "GET", "/readyz", timeout=5)[0] == 200, 30) for s in servers]
        back_seconds.append(time.monotonic() - started_at)
        check("/readyz answers 200 again on every instance once PostgreSQL is back", all(came_back), came_back)
        before = publishers.count()
        check("publishing resumes after PostgreSQL's restart", poll(lambda: publishers.count() > before + 2, 20))

    time.sleep(0.5)
    publishers.stop()
    stored = {tuple(row.split("|", 1)) for row in psql(url, "SELECT feed || '|' || id FROM item")}
    ids_of = {feed: {item_id for named, item_id in stored if named == feed} for feed in FEEDS}
    heads = {feed: 0 for feed in FEEDS}
    heads.update((row.split("|")[0], int(row.split("|")[1])) for row in psql(url, "SELECT feed || '|' || position FROM feed_head"))
    positions = {}
    for row in psql(url, "SELECT feed || '|' || position FROM item ORDER BY feed, position"):
        feed, position = row.split("|")
        positions.setdefault(feed, []).append(int(position))
    missing = publishers.acknowledged - stored
    check("nothing acknowledged is lost, and each item is in its own feed", not missing,
          f"{len(missing)} missing, e.g. {sorted(missing)[:5]}")
    check("every feed had items acknowledged", all(any(f == feed for f, _ in publishers.acknowledged) for feed in FEEDS),
          {feed: sum(f == feed for f, _ in publishers.acknowledged) for feed in FEEDS})
    check(f"the store holds no feed but {', '.join(FEEDS)}", set(heads) | set(positions) <= set(FEEDS),
          sorted((set(heads) | set(positions)) - set(FEEDS)))
    for feed in FEEDS:
        check(f"{feed}'s positions are dense 1…head", positions.get(feed, []) == list(range(1, heads[feed] + 1)),
              f"{len(positions.get(feed, []))} positions, head {heads[feed]}")
    statuses = publishers.statuses
    check("every publish is answered 201 or 503", set(statuses) <= {201, 503}, statuses)
    if not set(statuses) <= {201, 503}:
        for server in servers:
            print(f"  the log of instance on port {server.port}:", "".join(server.log_lines[-60:]), sep="\n", flush=True)

    # Every session hears the last head, each head once, in order, with the exact count.
    settled_began = time.monotonic()
    settled = wait_until(lambda: all(s.news and s.news[-1]["head"] == heads[s.feed] for s in streams), 15)
    settle_seconds = time.monotonic() - settled_began
    check("every session's last news is its own feed's head", settled,
          [(s.feed, s.news[-1]["head"] if s.news else None, heads[s.feed]) for s in streams
           if not s.news or s.news[-1]["head"] != heads[s.feed]][:5])
    with changed:
        backwards = [s.session for s in streams if any(b["head"] <= a["head"] for a, b in zip(s.news, s.news[1:]))]
        wrong_count = [(s.session, s.news[-1]) for s in streams if s.news and s.news[-1]["count"] != s.news[-1]["head"] - s.shown]
        foreign = [(s.session, s.feed, n["newest"]["id"]) for s in streams for n in s.news
                   if (n.get("newest") or {}).get("id") not in ids_of[s.feed]]
        ended = [s.session for s in streams if s.ended]
        per_session = [len(s.news) for s in streams]
    check("news heads strictly increase on every session (none twice, none back)", not backwards, backwards[:5])
    check("every session's last news counts exactly head − shown", not wrong_count, wrong_count[:3])
    check("every news a session got names an item of its own feed (none of another feed)", not foreign, foreign[:5])
    check("every stream stayed open through the faults", not ended, ended[:5])
    for server in servers:
        check("the instance is alive and ready at the end", server.alive() and request(server, "GET", "/readyz")[0] == 200)
        server.stop()

    figure("items acknowledged", len(publishers.acknowledged))
    figure("missing", len(missing))
    figure("publish statuses", json.dumps({str(k): v for k, v in statuses.items()}))
    figure("slowest publish answer", publishers.slowest, "s")
    figure("backends terminated", terminated)
    figure("postgres restarts", len(down_seconds))
    figure("sessions listening", len(streams))
    figure("feeds", len(FEEDS))
    figure("items per feed", json.dumps({feed: heads[feed] for feed in FEEDS}))
    figure("news events per session (min..max)", f"{min(per_session)}..{max(per_session)}")
    if down_seconds:
        figure("slowest readyz 503 after PostgreSQL stopped", max(down_seconds), "s")
        figure("slowest readyz 200 after PostgreSQL started", max(back_seconds), "s")
    figure("news settled after publishing stopped", settle_seconds, "s")
    figure("duration", time.monotonic() - began, "s")
finish()
