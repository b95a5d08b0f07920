"""`kill -9` in the middle of edits and removals, on an SQLite file, round after round. Each
round publishes items to two feeds, opens pages showing each feed's first page (sessions
made with `firstPage`, their streams read from the first event and recorded), and lets
editors PATCH, PUT and DELETE the newest items of both feeds at once (inside the pages'
windows and below them; half of them name the version they change with If-Match), each
keeping every 200 and 204 it got and when. The server is killed while they run, started
again on the same file, and the editors go on a moment before they are held.

Invariants, after every restart:
- every acknowledged edit (200) is in the store at its version or a later one: GET answers
  at least that version (its ETag too), exactly the stored item the 200 answered when the
  versions are equal, and a removal (404) only with a tombstone of a later version; every
  200 answered what was written;
- every acknowledged removal (204) stays removed: GET 404, and its tombstone in the store;
- per feed, the store's versions (items and tombstones) are unique and at most the feed's
  version; every item and tombstone keeps the position it was published at; acknowledged
  versions are unique, and an edit sent after another was acknowledged has a later version,
  across the kill too;
- every page converges: its rows as its recorded events left them (the first page, then
  `items` and `changes` in order; no change outside its window, none twice or out of
  order), then continued in a new session with `resume` (the head, oldest row and version
  its events said) and what that session's stream says (`changes`; `reset` reloads), equal
  what GET /api/feeds/{feed}/items shows for the page's positions. To know when the stream
  has told everything, one more edit of the page's oldest row is made after the page is
  back (changes come in version order, each once): the page has caught up when it has it.
  The oldest row of each round's pages is never removed, so each page can continue its
  list; every page must (`resumed`), and none may be told to reload."""
import codecs
import http.client
import json
import os
import random
import socket
import sqlite3
import subprocess
import tempfile
import threading
import time

from lib import SSEParser, Server, check, figure, finish, pick, request

ROUNDS = pick(2, 6)
EDITORS = pick(4, 8)
PAGES = pick(2, 4)  # per feed
RUN_SECONDS = pick(1.0, 3.0)  # editing before each kill
AFTER_RESTART = 0.3  # editing after each restart, before the checks hold the editors
ITEMS = 40  # published to each feed every round; a page shows the newest 20
FEEDS = ("board", "user:7")
WAIT = 30  # seconds at most for what comes at once


def items_path(feed, item_id=None):
    return f"/api/feeds/{feed}/items" + (f"/{item_id}" if item_id is not None else "")


class Ack:
    """One acknowledged change: what was sent, when, and what the server answered."""

    def __init__(self, feed, item_id, method, sent, received, item=None):
        self.feed, self.item_id, self.method = feed, item_id, method
        self.sent, self.received = sent, received
        self.item = item  # the stored item a 200 answered; None for a removal
        self.version = item["version"] if item else None  # a removal's is its tombstone's


class Editors:
    """Threads that edit and remove the current round's items of every feed until told to
    stop, each keeping what was acknowledged; `hold()` stops them before their next request
    and waits for those in flight."""

    def __init__(self, server, count):
        self.server = server
        self.targets = {}  # feed → ids the editors pick from
        self.kept = {}  # feed → the id no editor removes (the pages' oldest row)
        self.acks = []
        self.answers = {}  # "PATCH 200", "DELETE 404", "PUT no answer", …
        self.wrong = []  # 200s that did not answer what was written
        self.lock = threading.Lock()
        self.running = True
        self.go = threading.Event()
        self.in_flight = 0
        self.threads = [threading.Thread(target=self.edit, args=(n,), daemon=True) for n in range(count)]
        for thread in self.threads:
            thread.start()

    def count(self, key):
        with self.lock:
            self.answers[key] = self.answers.get(key, 0) + 1

    def edit(self, editor):
        rng = random.Random(editor)
        n = 0
        while True:
            self.go.wait()
            with self.lock:
                if not self.running:
                    return
                # Held between the wait and here: `hold()` saw nothing in flight.
                if not self.go.is_set():
                    continue
                self.in_flight += 1
                n += 1
                feed = rng.choice(FEEDS)
                item_id = rng.choice(self.targets[feed])
                kept = self.kept[feed]
            try:
                self.edit_one(rng, editor, n, feed, item_id, kept)
            finally:
                with self.lock:
                    self.in_flight -= 1

    def edit_one(self, rng, editor, n, feed, item_id, kept):
        roll = rng.random()
        method = "DELETE" if roll < 0.03 and item_id != kept else "PATCH" if roll < 0.55 else "PUT"
        headers = {}
        if editor % 2:
            # Names the version it changes, as a page that read the item first does.
            try:
                reply = request(self.server, "GET", items_path(feed, item_id), timeout=10)
            except (OSError, http.client.HTTPException):
                self.count("GET no answer")
                time.sleep(0.02)
                return
            if reply.status != 200:
                self.count(f"GET {reply.status}")
                return
            headers["If-Match"] = reply.headers["ETag"]
        title = f"{feed} {item_id} by editor {editor}, edit {n}"
        if method == "PATCH":
            headers["Content-Type"] = "application/merge-patch+json"
            body = {"title": title, "summary": rng.choice([None, f"summary {n}"])}
        elif method == "PUT":
            body = {"title": title, **rng.choice([{}, {"author": f"editor {editor}"}, {"link": f"https://example.com/{n}"}])}
        else:
            body = None
        sent = time.monotonic()
        try:
            reply = request(self.server, method, items_path(feed, item_id), body, headers, timeout=10)
        except (OSError, http.client.HTTPException):
            self.count(f"{method} no answer")  # the server is gone: done or not, nobody knows
            time.sleep(0.02)
            return
        received = time.monotonic()
        self.count(f"{method} {reply.status}")
        if reply.status == 200:
            item = reply.json
            ack = Ack(feed, item_id, method, sent, received, item)
            if not written(body, item) or reply.headers.get("ETag") != f'"{item.get("version")}"':
                with self.lock:
                    self.wrong.append((method, body, item, reply.headers.get("ETag")))
        elif reply.status == 204:
            ack = Ack(feed, item_id, method, sent, received)
        else:
            return
        with self.lock:
            self.acks.append(ack)

    def start(self, targets, kept):
        self.hold()
        with self.lock:
            self.targets, self.kept = targets, kept
        self.go.set()

    def hold(self):
        with self.lock:
            self.go.clear()
        deadline = time.monotonic() + 60  # a request in flight ends within its 10 s timeout
        while time.monotonic() < deadline:
            with self.lock:
                if self.in_flight == 0:
                    return
            time.sleep(0.01)
        raise RuntimeError("editors still in flight after a minute")

    def stop(self):
        with self.lock:
            self.running = False
        self.go.set()
        for thread in self.threads:
            thread.join(timeout=30)


def written(body, item):
    """Whether a 200's item holds what the edit wrote: the fields sent, and for a PUT no
    other optional field."""
    if not isinstance(item, dict) or item.get("title") != body["title"]:
        return False
    if "summary" in body:  # a merge patch
        return item.get("summary") == body["summary"]
    return all(item.get(field) == body.get(field) for field in ("summary", "link", "author"))


class Stream(threading.Thread):
    """A session's event stream, read from its first event (`Last-Event-ID: 0`, as the page
    does) on a thread of its own until the server goes or `close()`; its events, parsed, in
    `events`."""

    def __init__(self, server, session):
        super().__init__(daemon=True)
        self.server, self.session = server, session
        self.events = []
        self.changed = threading.Condition()
        self.connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
        self.sock = None
        self.status = None
        self.ended = False
        self.start()

    def run(self):
        parser, decoder = SSEParser(), codecs.getincrementaldecoder("utf-8")()
        try:
            self.connection.request("GET", f"/api/sessions/{self.session}/events",
                                    headers={"Accept": "text/event-stream", "Last-Event-ID": "0"})
            # Kept here: http.client lets go of its socket once a response it must close starts.
            self.sock = self.connection.sock
            response = self.connection.getresponse()
            with self.changed:
                self.status = response.status
                self.changed.notify_all()
            while chunk := response.read1(65536):
                blocks = [b for b in parser.feed(decoder.decode(chunk)) if "data" in b]
                with self.changed:
                    for block in blocks:
                        self.events.append({"id": int(block.get("id", -1)), "event": block.get("event"),
                                            "data": json.loads(block["data"])})
                    self.changed.notify_all()
        except (OSError, http.client.HTTPException, ValueError):
            pass
        finally:
            with self.changed:
                self.ended = True
                self.changed.notify_all()

    def wait(self, condition, timeout=WAIT):
        """Waits until `condition(self)` holds or the stream ends; answers whether it held."""
        deadline = time.monotonic() + timeout
        with self.changed:
            while not condition(self):
                remaining = deadline - time.monotonic()
                if self.ended or remaining <= 0:
                    return False
                self.changed.wait(remaining)
            return True

    def close(self):
        """Hangs up: a read waiting on the socket returns at once."""
        if self.sock is not None:
            try:
                self.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self.join(timeout=WAIT)
        self.connection.close()


class Page:
    """What a page shows: rows by position, the head and version they are as of, the
    window of positions, and what went wrong applying its events."""

    def __init__(self, feed, first_page):
        self.feed = feed
        self.rows = {}
        self.head = first_page["head"]
        self.version = first_page["version"]
        self.problems = []
        self.changes = 0
        self.last_change = 0
        self.take(first_page["items"])
        self.oldest_position = min(self.rows) if self.rows else None

    def take(self, items):
        for item in items:
            self.rows[item["position"]] = item

    @property
    def oldest(self):
        return self.rows[min(self.rows)]["id"] if self.rows else None

    def apply(self, event):
        data = event["data"]
        if event["event"] == "items":
            self.take(data["items"])
            self.head = max(self.head, data.get("head", self.head))
            self.version = data.get("version", self.version)
            if data["op"] == "append" and data["items"]:
                self.oldest_position = min(self.oldest_position, *(i["position"] for i in data["items"]))
        elif event["event"] == "changes":
            for change in data["changes"]:
                self.changes += 1
                position = change["item"]["position"] if change["op"] == "update" else change["position"]
                version = change["item"]["version"] if change["op"] == "update" else change["version"]
                if not self.oldest_position <= position <= self.head:
                    self.problems.append(f"a change at {position}, outside {self.oldest_position}…{self.head}")
                if version <= self.last_change:
                    self.problems.append(f"change version {version} after {self.last_change}")
                self.last_change = max(self.last_change, version)
                if change["op"] == "update":
                    if position not in self.rows:
                        self.problems.append(f"an update of {change['item']['id']}, a row it does not show")
                    self.rows[position] = change["item"]
                else:
                    self.rows.pop(position, None)
            self.version = data["version"]

    def resume(self):
        return {"head": self.head, "oldest": self.oldest, "version": self.version}


def listing(server, feed):
    """Every item of the feed, newest first, paged."""
    items, before = [], ""
    while True:
        reply = request(server, "GET", f"{items_path(feed)}?limit=100{'&before=' + before if before else ''}", timeout=WAIT)
        if reply.status != 200:
            raise RuntimeError(f"listing answered {reply.status}: {reply.body[:200]}")
        page = reply.json
        items += page["items"]
        if not page["hasMore"] or not page["items"]:
            return items
        before = page["items"][-1]["id"]


def stored(path):
    """{feed: (items {id: (position, version)}, tombstones {id: (position, version)}, the
    feed's version)}, read from the database file."""
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10) as db:
        feeds = {feed: ({}, {}, version) for feed, version in db.execute("SELECT feed, version FROM feed_state")}
        for feed, item_id, position, version in db.execute("SELECT feed, id, position, version FROM item"):
            feeds.setdefault(feed, ({}, {}, 0))[0][item_id] = (position, version)
        for feed, item_id, position, version in db.execute("SELECT feed, id, position, version FROM removal"):
            feeds.setdefault(feed, ({}, {}, 0))[1][item_id] = (position, version)
        return feeds


def publish(server, feed, round_number):
    reply = request(server, "POST", items_path(feed),
                    {"items": [{"id": f"r{round_number}-{n}", "title": f"round {round_number} item {n}"} for n in range(ITEMS)]},
                    timeout=WAIT)
    if reply.status != 201:
        raise RuntimeError(f"publish answered {reply.status}: {reply.body[:200]}")
    return reply.json["items"]


def open_page(server, feed, resume=None):
    """A new session of the feed, its answer and its stream."""
    body = {"feed": feed, "firstPage": True, **({"resume": resume} if resume else {})}
    reply = request(server, "POST", "/api/sessions", body, timeout=WAIT)
    if reply.status != 201:
        raise RuntimeError(f"a session answered {reply.status}: {reply.body[:200]}")
    answer = reply.json
    stream = Stream(server, answer["id"])
    # From the first event on, nothing may have happened yet: the stream is open once its head is in.
    if not stream.wait(lambda stream: stream.status is not None) or stream.status != 200:
        raise RuntimeError(f"the stream of {answer['id']} did not open within {WAIT} s: {stream.status}")
    return answer, stream


def check_store(label, server, editors, published, path, totals):
    acks = list(editors.acks)
    store = stored(path)
    # Edits: per item, its latest acknowledged edit; the rest are older still.
    latest, removals = {}, {}
    for ack in acks:
        key = (ack.feed, ack.item_id)
        if ack.item is None:
            removals[key] = ack
        elif key not in latest or ack.version > latest[key].version:
            latest[key] = ack
    lost, mismatched, back = [], [], []
    for (feed, item_id), ack in latest.items():
        reply = request(server, "GET", items_path(feed, item_id), timeout=WAIT)
        if reply.status == 200:
            item = reply.json
            if item["version"] < ack.version or reply.headers.get("ETag") != f'"{item["version"]}"':
                lost.append((feed, item_id, ack.version, item["version"], reply.headers.get("ETag")))
            elif item["version"] == ack.version and item != ack.item:
                mismatched.append((ack.item, item))
        else:
            tombstone = store.get(feed, ({}, {}, 0))[1].get(item_id)
            if reply.status != 404 or tombstone is None or tombstone[1] <= ack.version:
                lost.append((feed, item_id, ack.version, reply.status, tombstone))
    for (feed, item_id), ack in removals.items():
        reply = request(server, "GET", items_path(feed, item_id), timeout=WAIT)
        tombstone = store.get(feed, ({}, {}, 0))[1].get(item_id)
        if reply.status != 404 or tombstone is None:
            back.append((feed, item_id, reply.status, tombstone))
        else:
            ack.version = tombstone[1]
    totals["lost"] += len(lost) + len(mismatched)
    totals["back"] += len(back)
    check(f"{label}: every acknowledged edit is stored at its version or a later one", not lost,
          f"{len(lost)} of {len(latest)} items, e.g. {lost[:3]}")
    check(f"{label}: at an acknowledged version, the stored item is the one the 200 answered", not mismatched,
          mismatched[:2])
    check(f"{label}: every acknowledged removal stays removed, with its tombstone", not back,
          f"{len(back)} of {len(removals)}, e.g. {back[:3]}")
    check(f"{label}: every 200 answered what was written, its ETag its version", not editors.wrong, editors.wrong[:2])

    for feed in FEEDS:
        items, tombstones, version = store.get(feed, ({}, {}, 0))
        versions = [v for _, v in items.values()] + [v for _, v in tombstones.values()]
        moved = [(i, p, published[feed][i]) for i, (p, _) in {**items, **tombstones}.items() if published[feed].get(i) != p]
        check(f"{label}: {feed}'s stored versions are unique and at most the feed's version",
              len(versions) == len(set(versions)) and max(versions, default=0) <= version,
              f"{len(versions)} versions, {len(set(versions))} distinct, newest {max(versions, default=0)}, feed at {version}")
        check(f"{label}: every item of {feed} and tombstone keeps the position it was published at", not moved, moved[:3])
        check(f"{label}: no item of {feed} is both stored and removed", not set(items) & set(tombstones),
              sorted(set(items) & set(tombstones))[:3])
        mine = [ack for ack in acks if ack.feed == feed and ack.version is not None]
        acknowledged = [ack.version for ack in mine]
        check(f"{label}: {feed}'s acknowledged versions are unique", len(acknowledged) == len(set(acknowledged)),
              f"{len(acknowledged)} acknowledged, {len(set(acknowledged))} distinct")
        # Real-time order: whatever was acknowledged before an edit was sent has an older version.
        by_received = sorted(mine, key=lambda ack: ack.received)
        newest, taken, late = 0, 0, []
        for ack in sorted(mine, key=lambda ack: ack.sent):
            while taken < len(by_received) and by_received[taken].received < ack.sent:
                newest = max(newest, by_received[taken].version)
                taken += 1
            if ack.version <= newest:
                late.append((ack.item_id, ack.method, ack.version, newest))
        totals["out of order"] += len(late)
        check(f"{label}: {feed}'s versions increase with time: an edit sent after another was acknowledged is later",
              not late, f"{len(late)} of {len(mine)}, e.g. {late[:3]}")


def converge(label, server, pages, editors, totals):
    """Each page back in a new session with `resume`, then caught up with one more edit of
    its oldest row; its rows against the listing."""
    back = []
    for page, stream in pages:
        stream.close()
        answer, new_stream = open_page(server, page.feed, page.resume())
        back.append((page, answer, new_stream))
    # One more edit of each feed's kept row: the last change each page must be told.
    probes = {}
    for feed in FEEDS:
        sent = time.monotonic()
        kept = editors.kept[feed]
        reply = request(server, "PATCH", items_path(feed, kept), {"title": f"{label}: the pages are back"}, timeout=WAIT)
        check(f"{label}: an edit of {feed} after the pages are back", reply.status == 200, reply.status)
        editors.acks.append(Ack(feed, kept, "PATCH", sent, time.monotonic(), reply.json))
        probes[feed] = reply.json["version"]
    problems, told_wrong, resumed, resets, applied = [], [], 0, 0, 0
    for page, answer, stream in back:
        probe = probes[page.feed]

        def told(stream, probe=probe):
            return any(event["event"] == "reset" or (event["event"] == "changes" and event["data"]["version"] >= probe)
                       for event in stream.events)

        caught_up = stream.wait(told)
        stream.close()
        if answer.get("resumed"):
            resumed += 1
        else:
            page = Page(page.feed, answer["firstPage"])  # the list starts over
        before = page.changes
        for event in stream.events:
            if event["event"] == "reset":
                resets += 1
                answer, again = open_page(server, page.feed)  # reload
                again.close()
                page = Page(page.feed, answer["firstPage"])
            else:
                page.apply(event)
        applied += page.changes - before
        expected = [item for item in listing(server, page.feed) if page.oldest_position <= item["position"] <= page.head]
        shown = [page.rows[position] for position in sorted(page.rows, reverse=True)]
        if not caught_up:
            problems.append(f"{answer['id']}: the edit at version {probe} was not told within {WAIT} s")
        elif shown != expected:
            differ = [(a, b) for a, b in zip(shown, expected) if a != b][:1]
            problems.append(f"{answer['id']}: {len(shown)} rows, the feed {len(expected)}; first difference {differ}")
        told_wrong += [f"{answer['id']}: {problem}" for problem in page.problems]
        request(server, "DELETE", f"/api/sessions/{answer['id']}", timeout=WAIT)
    totals["pages"] += len(back)
    totals["resumed"] += resumed
    totals["resets"] += resets
    totals["changes after resume"] += applied
    check(f"{label}: every page continued its list (resumed)", resumed == len(back), f"{resumed} of {len(back)}")
    check(f"{label}: no page was told to reload", resets == 0, resets)
    check(f"{label}: no page was told a change outside its window, twice or out of order", not told_wrong,
          f"{len(told_wrong)}: {told_wrong[:3]}")
    check(f"{label}: every page converged with its feed", not problems, f"{len(problems)}: {problems[:3]}")


def run(database):
    server = Server("--no-demo", database=database)
    server.start()
    editors = Editors(server, EDITORS)
    published = {feed: {} for feed in FEEDS}
    totals = {"lost": 0, "back": 0, "out of order": 0, "pages": 0, "resumed": 0, "resets": 0,
              "changes before kill": 0, "changes after resume": 0}
    restart_seconds = []
    began = time.monotonic()
    for round_number in range(1, ROUNDS + 1):
        label = f"round {round_number}"
        targets, kept, pages = {}, {}, []
        for feed in FEEDS:
            items = publish(server, feed, round_number)
            published[feed].update({item["id"]: item["position"] for item in items})
            targets[feed] = [item["id"] for item in items]
            for _ in range(PAGES):
                answer, stream = open_page(server, feed)
                pages.append((Page(feed, answer["firstPage"]), stream))
            kept[feed] = pages[-1][0].oldest
        editors.start(targets, kept)
        time.sleep(RUN_SECONDS)
        server.kill()  # SIGKILL while edits are in flight
        killed_at = time.monotonic()
        server.start()
        restart_seconds.append(time.monotonic() - killed_at)
        time.sleep(AFTER_RESTART)
        editors.hold()
        for page, stream in pages:
            stream.close()
            for event in stream.events:
                page.apply(event)
            totals["changes before kill"] += page.changes
        check_store(label, server, editors, published, database, totals)
        converge(label, server, pages, editors, totals)
    editors.stop()
    status = request(server, "GET", "/readyz", timeout=WAIT).status
    check("ready after all the kills", status == 200, status)
    server.stop()
    answers = dict(sorted(editors.answers.items()))
    figure("edits acknowledged (200)", sum(1 for ack in editors.acks if ack.item is not None))
    figure("removals acknowledged (204)", sum(1 for ack in editors.acks if ack.item is None))
    figure("answers", ", ".join(f"{key} ×{n}" for key, n in answers.items()))
    figure("acknowledged changes lost", totals["lost"])
    figure("removed items back", totals["back"])
    figure("versions out of real-time order", totals["out of order"])
    figure("changes told to pages before the kills", totals["changes before kill"])
    figure("changes told to pages back in new sessions", totals["changes after resume"])
    figure("pages back", totals["pages"])
    figure("pages that continued their list", totals["resumed"])
    figure("resets", totals["resets"])
    figure("restarts", ROUNDS)
    figure("slowest restart to healthy", max(restart_seconds), "s")
    figure("duration", time.monotonic() - began, "s")


folder = tempfile.mkdtemp(prefix="ptr-chaos-kill9-edits.")
run(os.path.join(folder, "feed.sqlite"))
subprocess.run(["rm", "-rf", folder], check=False)
finish()
