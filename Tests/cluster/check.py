"""Invariants of a cluster brought up by `scripts/cluster up 3`, under faults.

Sessions are made through the nginx front, so they spread over the instances, and each
one's event stream is followed through the front. Every scenario states what must hold,
prints its figure and counts a failure when it breaks; the exit status is the number of
failures (0: all held). Run by Tests/cluster/run.sh; by hand:

    scripts/cluster up 3 && python3 Tests/cluster/check.py --dir /tmp/ptr-cluster

(the cluster is changed: an instance is killed at the end, PostgreSQL restarted).
Standard library only.
"""

import argparse
import http.client
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
import urllib.parse

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "Tests", "support"))
import client  # noqa: E402
from client import SSEParser  # noqa: E402
# Seconds from a publish to its news on every session: a bound that tells news delivered from
# news lost or stuck behind a poll (the slowest delay is the figure, a fraction of a second).
NEWS_WITHIN = 10.0
GONE_BODY = {"error": "session_not_found", "message": "The instance holding this session is gone; start a new session."}


class Failures:
    def __init__(self):
        self.passed = 0
        self.failed = 0

    def check(self, holds, description, figure=""):
        line = f"{description}: {figure}" if figure else description
        if holds:
            self.passed += 1
            print(f"  ok   {line}", flush=True)
        else:
            self.failed += 1
            print(f"  FAIL {line}", file=sys.stderr, flush=True)
        return holds


class Cluster:
    """What `scripts/cluster` wrote in its folder: ports, pids, PostgreSQL's folder."""

    def __init__(self, folder):
        self.folder = folder
        settings = dict(line.strip().split("=", 1) for line in open(os.path.join(folder, "cluster.env")) if "=" in line)
        self.count = int(settings["COUNT"])
        self.base_port = int(settings["BASE_PORT"])
        self.front_port = int(settings["FRONT_PORT"])
        self.names = [f"i{k}" for k in range(1, self.count + 1)]
        self.tls = ssl.create_default_context(cafile=os.path.join(folder, "nginx", "cert.pem"))
        self.postgres = os.path.join(folder, "postgres")
        self.postgres_port = int(open(os.path.join(self.postgres, "port")).read())

    def port(self, name):
        return self.base_port + self.names.index(name)

    def pid(self, name):
        return int(open(os.path.join(self.folder, "instances", f"{name}.pid")).read())

    def front(self, timeout=10, source="127.0.0.1"):
        return http.client.HTTPSConnection("127.0.0.1", self.front_port, context=self.tls, timeout=timeout,
                                           source_address=(source, 0))

    def instance(self, name, timeout=10):
        return http.client.HTTPConnection("127.0.0.1", self.port(name), timeout=timeout)

    def psql(self, sql):
        binary = "/usr/lib/postgresql/15/bin/psql"
        if not os.path.exists(binary):
            binary = shutil.which("psql")
        return subprocess.run(
            [binary, "-h", "127.0.0.1", "-p", str(self.postgres_port), "-U", "ptr", "-d", "ptr", "-tAq", "-c", sql],
            check=True, capture_output=True, text=True, timeout=20).stdout

    def postgres_script(self, command):
        subprocess.run(["bash", os.path.join(ROOT, "scripts", "postgres"), command, self.postgres],
                       check=True, stdout=subprocess.DEVNULL, timeout=60)


def request(connection, method, path, body=None):
    """(status, decoded JSON or None, seconds taken) on a fresh or kept-alive connection."""
    started = time.monotonic()
    reply = client.request(connection, method, path, body)
    decoded = None if isinstance(reply.json, bytes) else reply.json
    return reply.status, decoded, time.monotonic() - started


def once(connection_factory, method, path, body=None):
    connection = connection_factory()
    try:
        return request(connection, method, path, body)
    finally:
        connection.close()


changed = threading.Condition()


def item_path(feed, item_id):
    return f"/api/feeds/{feed}/items/{urllib.parse.quote(item_id, safe='')}"


def change_key(entry):
    """What a `changes` entry is about: its op and the id of its item."""
    return entry["op"], entry["item"]["id"] if entry["op"] == "update" else entry["id"]


class Stream(threading.Thread):
    """One session's event stream, read through the front, with the time each `news` head
    and each `changes` entry came."""

    def __init__(self, cluster, session, feed="main"):
        super().__init__(daemon=True)
        self.cluster = cluster
        self.session = session
        self.feed = feed
        self.instance = session.split(".", 1)[0]
        self.events = []  # (monotonic time, name, data)
        self.news = []  # (monotonic time, head)
        self.status = None
        self.ended = False
        self.socket = None

    def run(self):
        connection = self.cluster.front(timeout=None)
        try:
            connection.request("GET", f"/api/sessions/{self.session}/events", headers={"Accept": "text/event-stream"})
            response = connection.getresponse()
            self.socket = connection.sock
            with changed:
                self.status = response.status
                changed.notify_all()
            events = SSEParser()
            while line := response.readline():
                for event in events.feed(line.decode()):
                    if "event" in event:
                        self.received(event["event"], json.loads(event.get("data") or "null"))
        except (OSError, http.client.HTTPException, ValueError):
            pass
        finally:
            with changed:
                self.ended = True
                changed.notify_all()

    def received(self, name, data):
        now = time.monotonic()
        with changed:
            self.events.append((now, name, data))
            if name == "news":
                self.news.append((now, data["head"]))
            changed.notify_all()

    def heads(self):
        with changed:
            return [head for _, head in self.news]

    def last_head(self):
        with changed:
            return self.news[-1][1] if self.news else None

    def changes(self):
        """Every entry of every `changes` event so far, in the order they came, each with the
        time it came: (monotonic time, entry)."""
        with changed:
            return [(at, entry) for at, name, data in self.events if name == "changes" for entry in data["changes"]]

    def reached(self, head):
        """When the stream first heard of `head` or later, or None."""
        with changed:
            return next((at for at, seen in self.news if seen >= head), None)

    def close(self):
        if self.socket is not None:
            try:
                self.socket.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def wait_until(predicate, seconds):
    deadline = time.monotonic() + seconds
    with changed:
        while not (holds := predicate()):
            left = deadline - time.monotonic()
            if left <= 0:
                break
            changed.wait(min(left, 0.1))
    return holds


def poll(predicate, seconds, every=0.1):
    """Asks `predicate` until it holds or the time is up; answers whether it held."""
    deadline = time.monotonic() + seconds
    while True:
        if predicate():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(every)


class Checker:
    def __init__(self, cluster, publishes, sessions_each):
        self.cluster = cluster
        self.failures = Failures()
        self.check = self.failures.check
        self.publishes = publishes
        self.sessions_each = sessions_each
        self.streams = []
        self.head = None  # the feed's head as the checker knows it
        self.serial = 0
        # Items every session of main shows (its first page), newest first, that no check has
        # changed yet: each check takes its own, so each item changes once in a run and a
        # session must get exactly one entry for it.
        self.unchanged = []
        self.changed = {"main": set()}  # ids each feed's checks edited or removed
        self.removed = 0  # items removed from main: its head counts them, its pages do not

    # MARK: - Helpers

    def open_session(self, feed=None):
        """A session of `feed` (`main` when None, made without naming it) through the front and
        followed, showing a first page (a page hears of news once it shows one). Returns its
        stream, or None."""
        status, body, _ = once(self.cluster.front, "POST", "/api/sessions",
                               {"config": {"news": "badge"}, **({"feed": feed} if feed else {})})
        if status != 201 or body.get("feed") != (feed or "main"):
            self.check(False, f"a session of {feed or 'main'} is made through the front", f"status {status}, {body}")
            return None
        stream = Stream(self.cluster, body["id"], feed or "main")
        stream.start()
        if not wait_until(lambda: any(name == "state" for _, name, _ in stream.events), 30):
            self.check(False, f"the stream of {stream.session} opens through the front", f"status {stream.status}")
            return None
        status, _, _ = once(self.cluster.front, "POST", f"/api/sessions/{stream.session}/load-more")
        first_page = lambda: next((d for _, name, d in stream.events if name == "items" and d.get("head") is not None), None)
        if status != 202 or not wait_until(lambda: first_page() is not None, 30):
            self.check(False, f"{stream.session} shows a first page", f"load-more status {status}")
            return None
        stream.first_page = first_page()
        stream.shown = stream.first_page["head"]
        return stream

    def publish(self, name, item_id=None, connection_factory=None, feed=None):
        """Publishes one item to `feed` (`main` when None, through /api/items) on instance `name`
        (or through `connection_factory`); returns (status, body, seconds taken, monotonic time
        it was sent, its id)."""
        self.serial += 1
        item = {"id": item_id or f"cluster-{self.serial}-{os.getpid()}", "title": f"Cluster check {self.serial}"}
        factory = connection_factory or (lambda: self.cluster.instance(name, timeout=20))
        sent = time.monotonic()
        try:
            status, body, seconds = once(factory, "POST", f"/api/feeds/{feed}/items" if feed else "/api/items", item)
        except (OSError, http.client.HTTPException) as error:
            status, body, seconds = f"no answer ({error})", None, time.monotonic() - sent
        return status, body, seconds, sent, item["id"]

    def arrival(self, head, sent, within, what, streams=None):
        """Every stream (of `main` unless `streams` are given) hears of `head`: the slowest
        delay, checked against `within`."""
        streams = self.streams if streams is None else streams
        wait_until(lambda: all(stream.reached(head) is not None for stream in streams), max(within, 1) * 3)
        missing = [stream.session for stream in streams if stream.reached(head) is None]
        delays = [stream.reached(head) - sent for stream in streams if stream.reached(head) is not None]
        slowest = max(delays, default=float("inf"))
        self.check(not missing and slowest <= within, f"{what} reaches news on all {len(streams)} sessions within {within:g} s",
                   f"slowest {slowest * 1000:.0f} ms" + (f"; never on {missing}" if missing else ""))

    def exactly_once(self, first, last, what, streams=None, pause=1):
        """Every stream (of `main` unless `streams` are given) heard of each head from `first` to
        `last` exactly once, in order, and nothing else since `first`: one step per publish; and
        never a head twice or going back since it opened."""
        time.sleep(pause)  # a late duplicate would come within this
        streams = self.streams if streams is None else streams
        expected = list(range(first, last + 1))
        wrong = {}
        for stream in streams:
            every = stream.heads()
            heads = [head for head in every if head >= first]
            forward = all(later > earlier for earlier, later in zip(every, every[1:]))
            if heads != expected or not forward or stream.ended:
                wrong[stream.session] = every[-len(expected) - 3:] + (["stream ended"] if stream.ended else [])
        self.check(not wrong, f"{what}: every session heard heads {first}…{last} once each, in order",
                   f"{len(streams)} sessions" + (f"; wrong: {wrong}" if wrong else ""))

    def take(self):
        """An item every session of main shows and no check has changed yet."""
        return self.unchanged.pop(0)

    def send_change(self, name, item, patch=None, feed="main"):
        """One try at editing `item` of `feed` on instance `name` with the JSON merge patch
        `patch`, or at removing it when `patch` is None, under `If-Match` of the version it
        was shown at: a try that was taken but not answered is never made twice. Returns
        (status or "no answer (…)", decoded body)."""
        headers = {"If-Match": f'"{item["version"]}"'}
        try:
            reply = client.request(f"http://127.0.0.1:{self.cluster.port(name)}", "PATCH" if patch is not None else "DELETE",
                                   item_path(feed, item["id"]), patch, headers=headers, timeout=20)
        except (OSError, http.client.HTTPException) as error:
            return f"no answer ({error})", None
        return reply.status, None if isinstance(reply.json, bytes) else reply.json

    def change(self, name, item, patch=None, feed="main", retry_for=0, refused=()):
        """Edits (`patch`) or removes `item` of `feed` on instance `name`, trying again after a
        503 or no answer for `retry_for` seconds, as a client does; `refused` are the answers
        of earlier tries (503s during an outage). Answers what each session that shows the
        item must get, a dict with `op`, `id`, `position`, `version` (None for a removal: a
        204 does not tell it), `title` of an edit, `feed` and `at`, the monotonic time it was
        acknowledged; None when it was not made."""
        op = "update" if patch is not None else "remove"
        what = f"{'an edit' if patch is not None else 'a removal'} of {item['id']} in {feed} on {name}"
        tries = list(refused)
        deadline = time.monotonic() + retry_for
        while True:
            status, body = self.send_change(name, item, patch, feed)
            at = time.monotonic()
            if status == 503 or not isinstance(status, int):
                tries.append(status)
                if at < deadline:
                    time.sleep(0.2)
                    continue
            break
        done = {"op": op, "id": item["id"], "position": item["position"], "version": None, "feed": feed, "at": at}
        if op == "update" and status == 200:
            done.update(version=body["version"], title=body["title"])
            self.check(body["position"] == item["position"] and body["title"] == patch["title"],
                       f"{what} is answered 200 with the item changed in place",
                       f"version {body['version']}, position {body['position']}" + (f", after {tries}" if tries else ""))
        elif op == "remove" and status == 204:
            self.check(True, f"{what} is answered 204", f"after {tries}" if tries else "")
        elif tries and status in (412, 404):
            # An earlier try was taken. Only a try left without an answer may have been: one
            # refused with 503 must have changed nothing.
            if op == "update":
                now, stored, _ = once(lambda: self.cluster.instance(name, timeout=20), "GET", item_path(feed, item["id"]))
                taken = now == 200 and stored["title"] == patch["title"]
                if taken:
                    done.update(version=stored["version"], title=stored["title"])
            else:
                taken = status == 404
            unanswered = [attempt for attempt in tries if not isinstance(attempt, int)]
            self.check(taken and unanswered, f"{what} was taken by an earlier try left without an answer, none refused with 503",
                       f"status {status} after {tries}")
            if not taken:
                return None
        else:
            self.check(False, f"{what} is answered {200 if op == 'update' else 204}", f"status {status}, {body} after {tries}")
            return None
        self.changed.setdefault(feed, set()).add(item["id"])
        if op == "remove" and feed == "main":
            self.removed += 1
        return done

    def delivered(self, expected, streams, what, within=NEWS_WITHIN, since=0.0, pause=1):
        """Every stream got each of the `expected` changes (from `change`) exactly once, as it
        was made, within `within` seconds of its acknowledgment (or of `since` when later: the
        end of an outage); its `changes` entries are in version order; and it got no entry
        for an item its feed's checks did not change (so nothing of another feed)."""
        expected = [change for change in expected if change is not None]
        keys = {(change["op"], change["id"]) for change in expected}
        got = lambda stream: {change_key(entry) for _, entry in stream.changes()}
        wait_until(lambda: all(keys <= got(stream) for stream in streams), max(within, 1) * 3)
        time.sleep(pause)  # a late duplicate would come within this
        delays = []
        missing = {}
        wrong = {}
        for stream in streams:
            entries = stream.changes()
            problems = []
            for change in expected:
                key = (change["op"], change["id"])
                hits = [(at, entry) for at, entry in entries if change_key(entry) == key]
                if not hits:
                    missing.setdefault(stream.session, []).append(key)
                    continue
                if len(hits) > 1:
                    problems.append(f"{key} {len(hits)} times")
                at, entry = hits[0]
                delays.append(max(0.0, at - max(change["at"], since)))  # a session on the instance may hear before the answer
                made = entry["item"] if change["op"] == "update" else entry
                if (made["position"] != change["position"] or change["version"] not in (None, made["version"])
                        or made.get("title") != change.get("title")):
                    problems.append(f"{key} came as {entry}")
            versions = [(entry["item"] if entry["op"] == "update" else entry)["version"] for _, entry in entries]
            if any(later <= earlier for earlier, later in zip(versions, versions[1:])):
                problems.append(f"versions out of order: {versions}")
            if strays := [change_key(entry) for _, entry in entries if change_key(entry)[1] not in self.changed.get(stream.feed, set())]:
                problems.append(f"not its feed's: {strays}")
            if stream.ended:
                problems.append("stream ended")
            if problems:
                wrong[stream.session] = problems
        slowest = max(delays, default=float("inf"))
        where = ", ".join(f"{name}: {count}" for name, count in sorted(
            {stream.instance: sum(other.instance == stream.instance for other in streams) for stream in streams}.items()))
        self.check(not missing and slowest <= within,
                   f"{what}: each reaches all {len(streams)} sessions that show its item ({where}) within {within:g} s",
                   f"slowest {slowest * 1000:.0f} ms" + (f"; missing {missing}" if missing else ""))
        self.check(not wrong, f"{what}: every session got each change once, as made, in version order, and nothing else",
                   f"changes: {len(expected)}, sessions: {len(streams)}" + (f"; wrong: {wrong}" if wrong else ""))

    def ready(self, name):
        try:
            status, body, _ = once(lambda: self.cluster.instance(name, timeout=3), "GET", "/readyz")
            return status, body
        except OSError as error:
            return None, str(error)

    # MARK: - Scenarios

    def spread(self):
        print("== sessions through the front")
        names = self.cluster.names
        for _ in range(self.sessions_each * len(names) * 3):
            counts = {name: sum(stream.instance == name for stream in self.streams) for name in names}
            if min(counts.values()) >= self.sessions_each:
                break
            stream = self.open_session()
            if stream is None:
                break
            self.streams.append(stream)
        counts = {name: sum(stream.instance == name for stream in self.streams) for name in names}
        self.check(min(counts.values()) >= self.sessions_each,
                   f"sessions made through the front land on every instance (by their id's prefix), {self.sessions_each} at least each",
                   ", ".join(f"{name}: {count}" for name, count in counts.items()))
        shown = {stream.shown for stream in self.streams}
        self.check(len(shown) == 1, "every session shows the same head after its first page", f"{sorted(shown)}")
        self.head = max(shown)
        self.unchanged = list(self.streams[0].first_page["items"])
        # Items removed before this run (a cluster checked again) count in the head too.
        self.removed = self.head - len(self.page_all(names[0]))

    def front_rules(self):
        print("== the front")
        other = lambda: self.cluster.front(source="127.0.0.2")
        status, body, _, _, _ = self.publish(None, connection_factory=other)
        self.check(status == 403 and (body or {}).get("error") == "publishing_disabled",
                   "a publish through the front from another address is refused", f"status {status}, {body}")
        for path in ("/api/items/", "/api/items/.", "/api/items//"):
            status, body, _ = once(other, "POST", path, {"id": "sneaked", "title": "Sneaked in"})
            self.check(status in (403, 404) and (body or {}).get("error") != None,
                       f"a publish to {path} through the front from another address is refused too", f"status {status}, {body}")
        status, _, _ = once(other, "GET", "/metrics")
        self.check(status == 403, "the metrics through the front from another address are refused", f"status {status}")
        status, _, _ = once(other, "GET", "/api/items?limit=1")
        self.check(status == 200, "reading the feed through the front from another address is not", f"status {status}")
        status, body, _ = once(self.cluster.front, "GET", "/api/sessions/i9.0f3a")
        self.check(status == 404 and (body or {}).get("error") == "session_not_found",
                   "a session of an instance the front does not know is unknown", f"status {status}, {body}")

    def pooled_connections(self, rounds=150):
        """A client whose requests say `Proxy-Connection: close` (nginx passes the field on and
        pools its connections to the instances) must not make other users' requests fail:
        each instance answers such a request with `Connection: close`, so nginx does not send
        the next user's request down a connection the instance will not read."""
        print("== the front's pooled connections")
        failures = []
        done = threading.Event()

        def attacker():
            connection = self.cluster.front(source="127.0.0.3")
            sent = 0
            while not done.is_set() and sent < rounds:
                try:
                    connection.request("GET", "/api/items?limit=1", headers={"Proxy-Connection": "close"})
                    connection.getresponse().read()
                except (OSError, http.client.HTTPException):
                    connection.close()
                    connection = self.cluster.front(source="127.0.0.3")
                sent += 1
            connection.close()

        thread = threading.Thread(target=attacker, daemon=True)
        thread.start()
        victim = self.cluster.front(source="127.0.0.1")
        for index in range(rounds):
            path = "/api/items?limit=2" if index % 2 else "/api/feeds/main"
            try:
                status, body, _ = request(victim, "GET", path)
            except (OSError, http.client.HTTPException) as error:
                victim.close()
                victim = self.cluster.front(source="127.0.0.1")
                status, body = str(error), None
            if status != 200:
                failures.append((path, status, (body or {}).get("error") if isinstance(body, dict) else None))
        done.set()
        thread.join(timeout=30)
        victim.close()
        self.check(not failures, f"{rounds} reads of one client beside another whose requests say Proxy-Connection: close are all answered 200",
                   f"{len(failures)} failed" + (f": {failures[:3]}" if failures else ""))

    def fan_out(self):
        print("== a: a publish on one instance reaches the sessions of all")
        first = self.head + 1
        status, _, _, sent, _ = self.publish("i1")
        self.check(status == 201, "a publish on i1 is answered 201", f"status {status}")
        self.head += 1
        self.arrival(self.head, sent, NEWS_WITHIN, "a publish on i1")
        self.exactly_once(first, self.head, "after a publish")

    def feeds(self):
        print("== f: publishes on two feeds through different instances")
        feed = f"team.cluster-{os.getpid()}"
        names = self.cluster.names
        others = []
        for _ in range(4 * len(names)):
            if {stream.instance for stream in others} == set(names):
                break
            stream = self.open_session(feed)
            if stream is None:
                return
            others.append(stream)
        self.check({stream.instance for stream in others} == set(names), f"sessions of {feed} land on every instance",
                   ", ".join(sorted(stream.instance for stream in others)))
        shown = {stream.shown for stream in others}
        self.check(shown == {0}, f"every session of the new feed {feed} shows its head 0", f"{sorted(shown)}")
        began = time.monotonic()
        mine = {"main": set(), feed: set()}
        steps = [(names[1 % len(names)], feed), (names[2 % len(names)], None), (names[0], feed)]
        head = {None: self.head, feed: 0}
        first = {None: self.head + 1, feed: 1}
        for name, to in steps:
            status, _, _, sent, item_id = self.publish(name, feed=to)
            self.check(status == 201, f"a publish to {to or 'main'} on {name} is answered 201", f"status {status}")
            head[to] += 1
            mine[to or "main"].add(item_id)
            listeners = others if to else self.streams
            self.arrival(head[to], sent, NEWS_WITHIN, f"the publish to {to or 'main'} on {name}", listeners)
        self.head = head[None]
        self.exactly_once(first[None], head[None], "main's sessions after publishes on two feeds")
        self.exactly_once(first[feed], head[feed], f"{feed}'s sessions after publishes on two feeds", others, pause=0)
        foreign = {}
        for stream, own in [(stream, "main") for stream in self.streams] + [(stream, feed) for stream in others]:
            with changed:
                told = [(data.get("newest") or {}).get("id") for at, name, data in stream.events if name == "news" and at >= began]
            if wrong := [item_id for item_id in told if item_id not in mine[own]]:
                foreign[stream.session] = wrong
        self.check(not foreign, "every news a session got since names an item of its own feed, none of the other",
                   f"{len(self.streams)} sessions of main, {len(others)} of {feed}" + (f"; wrong: {foreign}" if foreign else ""))
        for stream in others:
            stream.close()

    def changes_fan_out(self):
        print("== g: an edit and a removal on one instance reach the sessions that show the items")
        name = self.cluster.names[0]
        edited, removed, copied = self.take(), self.take(), self.take()
        # Another feed holds the ids main's sessions show at the positions main holds them, so
        # that a change sent by id or by position alone, whatever its feed, would reach its
        # sessions too. A batch takes its positions oldest first: the times order it.
        window = {item["position"]: item for item in self.unchanged + [edited, removed, copied]}
        feed = f"team.changes-{os.getpid()}"
        batch = [{"id": window[position]["id"] if position in window else f"before-{position}", "title": f"Copy {position}",
                  "published": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(1_700_000_000 + position))}
                 for position in range(1, max(window) + 1)]
        stored = {}
        for start in range(0, len(batch), 500):  # a request body has a limit; a cluster run by hand may be long
            status, body, _ = once(lambda: self.cluster.instance(name, timeout=20), "POST", f"/api/feeds/{feed}/items",
                                   {"items": batch[start:start + 500]})
            if status != 201:
                break
            stored.update((item["id"], item) for item in body["items"])
        alike = all(stored.get(item["id"], {}).get("position") == item["position"] for item in window.values())
        if not self.check(alike, f"{feed} holds main's shown ids at main's positions", f"status {status}, {len(stored)} items"):
            return
        others = []
        for _ in range(4 * len(self.cluster.names)):
            if {stream.instance for stream in others} == set(self.cluster.names):
                break
            stream = self.open_session(feed)
            if stream is None:
                return
            others.append(stream)
        shows = all({edited["id"], removed["id"], copied["id"]} <= {item["id"] for item in stream.first_page["items"]} for stream in others)
        self.check({stream.instance for stream in others} == set(self.cluster.names) and shows,
                   f"sessions of {feed} on every instance show the copies", ", ".join(sorted(stream.instance for stream in others)))

        made = [self.change(name, edited, {"title": f"Edited on {name}"}),
                self.change(name, removed)]
        copy = self.change(name, stored[copied["id"]], {"title": f"Copy edited on {name}"}, feed=feed)
        self.delivered(made, self.streams, f"an edit and a removal in main on {name}")
        self.delivered([copy], others, f"an edit in {feed} of an id main shows too", pause=0)
        for stream in others:
            stream.close()

    def notifications_dropped(self):
        print("== b: every LISTEN connection terminated, then a publish")
        first = self.head + 1
        ended = self.cluster.psql(
            "SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'refresh-server news') AS ended")
        terminated = int(ended.strip() or 0)
        self.check(terminated >= self.cluster.count, "one LISTEN connection per instance was terminated", f"{terminated} terminated")
        # Changes made while the listeners are away: each instance reads them from the version
        # it saw last once it listens again.
        made = [self.change("i2", self.take(), {"title": "Edited while the listeners were away"}),
                self.change("i3", self.take())]
        status, _, _, sent, _ = self.publish("i1")
        self.check(status == 201, "the publish after is answered 201", f"status {status}")
        self.head += 1
        # The listeners reconnect with a backoff from 100 ms and read the head they missed.
        self.arrival(self.head, sent, 10, "the publish after the connections dropped")
        self.delivered(made, self.streams, "an edit and a removal after the connections dropped")
        back = poll(lambda: all(self.ready(name)[0] == 200 for name in self.cluster.names), 20)
        self.check(back, "every instance is ready again (listening)", "")
        self.exactly_once(first, self.head, "after the LISTEN connections dropped")

    def postgres_restarted(self):
        print("== c: PostgreSQL stopped for 5 s, then started")
        first = self.head + 1
        # Acknowledged just before PostgreSQL goes: whether its notice went out or not, every
        # session gets it once.
        before = self.change("i3", self.take(), {"title": "Edited just before the restart"})
        stopped = time.monotonic()
        self.cluster.postgres_script("stop")
        # A removal tried beside the publish: each waits a few seconds for the store before
        # its 503, and the outage should not last the sum.
        doomed = self.take()
        removal = {}
        beside = threading.Thread(target=lambda: removal.update(answer=self.send_change("i2", doomed), at=time.monotonic()))
        asked = time.monotonic()
        beside.start()
        status, body, seconds, _, item_id = self.publish("i1")
        beside.join()
        self.check(status == 503, "a publish while PostgreSQL is down is answered 503",
                   f"status {status} ({(body or {}).get('error')}) in {seconds:.1f} s")
        tried, body = removal["answer"]
        self.check(tried == 503, "a removal while PostgreSQL is down is answered 503",
                   f"status {tried} ({(body or {}).get('error') if isinstance(body, dict) else body}) in {removal['at'] - asked:.1f} s")
        unready = {name: self.ready(name) for name in self.cluster.names}
        self.check(all(status == 503 for status, _ in unready.values()), "/readyz is 503 on every instance during the outage",
                   ", ".join(f"{name}: {status} {(body or {}).get('error') if isinstance(body, dict) else body}"
                             for name, (status, body) in unready.items()))
        time.sleep(max(0, 5 - (time.monotonic() - stopped)))
        self.cluster.postgres_script("start")
        restarted = time.monotonic()
        # The client's side of "not lost": it publishes the same item again until it is taken.
        attempts = 0
        deadline = restarted + 30
        while time.monotonic() < deadline:
            attempts += 1
            status, _, _, sent, _ = self.publish("i1", item_id=item_id)
            if status == 201:
                break
            time.sleep(0.2)
        self.check(status == 201, "the publish refused during the outage is taken when tried again after the restart",
                   f"201 after {time.monotonic() - restarted:.1f} s, {attempts} attempts")
        self.head += 1
        # Made at once, while the instances may still be finding PostgreSQL again: the removal
        # refused during the outage, tried again as a client does, and an edit.
        made = [self.change("i2", doomed, retry_for=30, refused=[tried]),
                self.change("i1", self.take(), {"title": "Edited just after the restart"}, retry_for=30)]
        self.arrival(self.head, sent, 10, "the publish retried after the restart")
        self.delivered([before] + made, self.streams, "an edit just before the restart and changes just after it", since=restarted)
        all_ready = lambda: all(self.ready(name)[0] == 200 for name in self.cluster.names)
        back = poll(all_ready, 20)
        self.check(back, "/readyz is 200 on every instance within 20 s of the restart", f"after {time.monotonic() - restarted:.1f} s")
        status, _, _, sent, _ = self.publish("i2")
        self.check(status == 201, "a publish after the restart is answered 201", f"status {status}")
        self.head += 1
        self.arrival(self.head, sent, NEWS_WITHIN, "the publish after the restart")
        self.exactly_once(first, self.head, "across the restart")

    def many_publishes(self):
        count = self.publishes
        threads_each = 4
        print(f"== e: {count} publishes at once, spread over the instances")
        first = self.head + 1
        names = self.cluster.names
        workers = [(name, index) for name in names for index in range(threads_each)]
        ids = [f"burst-{os.getpid()}-{n}" for n in range(count)]
        shares = [ids[i::len(workers)] for i in range(len(workers))]
        refused = []
        deadline = time.monotonic() + 120

        def work(name, share):
            connection = self.cluster.instance(name, timeout=30)
            for item_id in share:
                # A 503 (store busy) is tried again with the same id: what a client does.
                for _ in range(20):
                    if time.monotonic() > deadline:
                        refused.append((item_id, "out of time"))
                        return
                    try:
                        status, _, _ = request(connection, "POST", "/api/items", {"id": item_id, "title": f"Burst {item_id}"})
                    except (OSError, http.client.HTTPException) as error:
                        connection.close()
                        connection = self.cluster.instance(name, timeout=30)
                        status = str(error)
                    if status == 201:
                        break
                    time.sleep(0.1)
                else:
                    refused.append((item_id, status))
            connection.close()

        started = time.monotonic()
        threads = [threading.Thread(target=work, args=(name, share)) for (name, _), share in zip(workers, shares)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        seconds = time.monotonic() - started
        self.check(not refused, f"{count} publishes from {len(threads)} connections over {len(names)} instances are all answered 201",
                   f"{seconds:.1f} s, {count / seconds:.0f} per s" + (f"; refused {refused[:5]}" if refused else ""))
        self.head += count

        streams = self.streams
        settled = wait_until(lambda: all(stream.last_head() == self.head for stream in streams), 60)
        self.check(settled, f"every session's last news head is the feed's head {self.head}",
                   "" if settled else f"{ {stream.session: stream.last_head() for stream in streams if stream.last_head() != self.head} }")
        time.sleep(1)
        backwards = {}
        for stream in streams:
            heads = stream.heads()
            if any(b <= a for a, b in zip(heads, heads[1:])):
                backwards[stream.session] = heads
        told = [len([head for head in stream.heads() if head >= first]) for stream in streams]
        self.check(not backwards, "news heads only go forward on every session (no head twice, none back)",
                   f"{min(told)}…{max(told)} news per session for {count} publishes (news coalesces)"
                   + (f"; wrong on {list(backwards)}" if backwards else ""))
        last = {name: {stream.last_head() for stream in streams if stream.instance == name} for name in names}
        self.check(all(heads == {self.head} for heads in last.values()), "each instance's sessions end at the same head",
                   ", ".join(f"{name}: {sorted(heads)}" for name, heads in last.items()))

        pages = {}
        for name in names:
            pages[name] = self.page_all(name)
        reference = pages[names[0]]
        self.check(all(page == reference for page in pages.values()),
                   "every instance pages the same items in the same order",
                   ", ".join(f"{name}: {len(page)} items" for name, page in pages.items()))
        self.check(len(reference) == len(set(reference)), "no item is paged twice", f"{len(reference)} items, {len(set(reference))} distinct")
        burst = [item_id for item_id in reference if item_id.startswith(f"burst-{os.getpid()}-")]
        self.check(sorted(burst) == sorted(ids), f"all {count} published items are in the feed once", f"{len(burst)} found")
        self.check(len(reference) + self.removed == self.head, "the feed's head is its number of items and of those removed",
                   f"head {self.head}, {len(reference)} items, {self.removed} removed")

    def page_all(self, name):
        """Every item id, newest first, paged on `name`'s own port."""
        ids = []
        before = None
        connection = self.cluster.instance(name, timeout=20)
        for _ in range(self.head // 200 + 20):
            path = "/api/items?limit=200" + (f"&before={before}" if before else "")
            status, body, _ = request(connection, "GET", path)
            if status != 200:
                self.check(False, f"{name} pages the feed", f"status {status} for {path}")
                break
            ids.extend(item["id"] for item in body["items"])
            if not body["hasMore"] or not body["items"]:
                break
            before = body["items"][-1]["id"]
        connection.close()
        return ids

    def instance_killed(self):
        victim = self.cluster.names[-1]
        print(f"== d: kill -9 of {victim}")
        # A page on the victim that shows the feed as it is now, to be resumed elsewhere.
        page = None
        for _ in range(4 * self.cluster.count):
            stream = self.open_session()
            if stream is None or stream.instance == victim:
                page = stream
                break
            self.streams.append(stream)
        held = [stream for stream in self.streams if stream.instance == victim] + ([page] if page else [])
        others = [stream for stream in self.streams if stream.instance != victim]
        os.kill(self.cluster.pid(victim), signal.SIGKILL)
        killed = time.monotonic()

        def gone(stream, suffix=""):
            try:
                status, body, _ = once(self.cluster.front, "GET", f"/api/sessions/{stream.session}{suffix}")
            except (OSError, http.client.HTTPException):
                return False
            return status == 404 and body == GONE_BODY

        all_gone = poll(lambda: all(gone(stream) for stream in held), 10)
        self.check(all_gone, f"requests for {victim}'s {len(held)} sessions through the front get 404 session_not_found (JSON)",
                   f"after {time.monotonic() - killed:.2f} s")
        self.check(all(gone(stream, "/events") for stream in held), f"their event streams through the front get the same 404", "")
        ended = wait_until(lambda: all(stream.ended for stream in held), 30)
        self.check(ended, f"the open streams of {victim}'s sessions end", "")

        landed = []
        for _ in range(6):
            status, body, _ = once(self.cluster.front, "POST", "/api/sessions", {})
            landed.append(body["id"].split(".", 1)[0] if status == 201 else f"status {status}")
        self.check(all(name in self.cluster.names and name != victim for name in landed),
                   "new sessions through the front land on the live instances", ", ".join(landed))

        first = self.head + 1
        statuses = []
        published = []
        for _ in range(3):
            status, _, _, sent, item_id = self.publish(None, connection_factory=self.cluster.front)
            statuses.append(status)
            if status == 201:
                self.head += 1
                published.append(item_id)
                wait_until(lambda: all(stream.reached(self.head) is not None for stream in others), 30)
        self.check(statuses == [201] * 3, "publishing through the front keeps working", f"{statuses}")
        self.streams = [stream for stream in self.streams if stream.instance != victim]
        self.exactly_once(first, self.head, f"with {victim} gone")
        if page is not None:
            self.resumed(page, published)
        else:
            self.check(False, f"a session lands on {victim} to be resumed elsewhere", "none did")

    def resumed(self, page, published):
        """What the page does when its instance is gone: a new session through the front that
        resumes from what it shows. The items published meanwhile come as news and a refresh
        brings exactly them: nothing lost, nothing twice."""
        shows = {"head": page.shown, "oldest": page.first_page["items"][-1]["id"]}
        status, body, _ = once(self.cluster.front, "POST", "/api/sessions", {"config": {"news": "badge"}, "resume": shows})
        if not self.check(status == 201 and body.get("resumed") is True,
                          f"the page of a session on {page.instance} resumes on a live instance through the front",
                          f"status {status}, {body.get('id', '') if body else ''} resumed={body.get('resumed') if body else None}"):
            return
        stream = Stream(self.cluster, body["id"])
        stream.start()
        wait_until(lambda: stream.reached(self.head) is not None, 30)
        news = next((data for _, name, data in stream.events if name == "news"), None)
        self.check(news is not None and news["count"] == len(published) and news["head"] == self.head,
                   "its news counts exactly the items published since it last read",
                   f"{news and {key: news[key] for key in ('count', 'head')}}, {len(published)} published")
        status, _, _ = once(self.cluster.front, "POST", f"/api/sessions/{stream.session}/refresh")
        refreshed = lambda: next((data for _, name, data in stream.events if name == "items" and data.get("op") == "prepend"), None)
        wait_until(lambda: refreshed() is not None, 30)
        brought = [item["id"] for item in (refreshed() or {}).get("items", [])]
        self.check(status == 202 and sorted(brought) == sorted(published),
                   "a refresh of the resumed session brings exactly those items",
                   f"{len(brought)} brought, {len(set(brought) & set(published))} of the {len(published)} published")
        stream.close()

    def run(self):
        started = time.monotonic()
        try:
            self.spread()
            if self.failures.failed:
                return
            self.front_rules()
            self.pooled_connections()
            self.fan_out()
            self.feeds()
            self.changes_fan_out()
            self.notifications_dropped()
            self.postgres_restarted()
            self.many_publishes()
            self.instance_killed()
        finally:
            for stream in self.streams:
                stream.close()
            print(f"cluster checks took {time.monotonic() - started:.0f} s")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dir", default=os.environ.get("PTR_CLUSTER_DIR", "/tmp/ptr-cluster"), help="the cluster's folder")
    parser.add_argument("--publishes", type=int, default=2000, help="publishes at once in scenario e")
    parser.add_argument("--sessions-each", type=int, default=3, help="sessions held by each instance, at least")
    arguments = parser.parse_args()
    checker = Checker(Cluster(arguments.dir), arguments.publishes, arguments.sessions_each)
    checker.run()
    print(f"cluster invariants: {checker.failures.passed} passed, {checker.failures.failed} failed")
    sys.exit(1 if checker.failures.failed or not checker.failures.passed else 0)


if __name__ == "__main__":
    main()
