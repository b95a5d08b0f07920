"""Access on a cluster whose instances all verify tokens with one HMAC secret
(`PTR_AUTH_KEY=FILE scripts/cluster up N`): a private feed reads with a token that may read
it, through the front and on every instance, and is refused without; its sessions, made
through the front and so spread over the instances, open their streams only with their
owner's token, and hear a publish on every instance; an instance started again by a later
`scripts/cluster up`, from an environment without the key, still has it.

Run by Tests/cluster/run.sh; by hand:

    PTR_AUTH_KEY=$PWD/app.secret scripts/cluster up 2 && python3 Tests/cluster/access.py --secret app.secret

(the cluster is changed: an instance is killed and started again). Standard library only.
"""

import argparse
import base64
import hashlib
import hmac
import http.client
import json
import os
import signal
import subprocess
import sys
import time

from check import ROOT, Cluster, Failures

import client
from client import SSEParser


def mint(secret, claims):
    """An HS256 token of `claims`, valid for ten minutes unless they say otherwise."""
    b64 = lambda data: base64.urlsafe_b64encode(data).rstrip(b"=").decode()
    claims = {"exp": int(time.time()) + 600, **claims}
    signing = b64(b'{"alg":"HS256","typ":"JWT"}') + "." + b64(json.dumps(claims).encode())
    return signing + "." + b64(hmac.new(secret, signing.encode(), hashlib.sha256).digest())


def bearer(token):
    return {"Authorization": f"Bearer {token}"}


class Stream:
    """A session's event stream through the front, read in this thread."""

    def __init__(self, cluster, session, headers):
        self.session = session
        self.connection = cluster.front(timeout=10)
        self.connection.request("GET", f"/api/sessions/{session}/events", headers={"Accept": "text/event-stream", **headers})
        self.response = self.connection.getresponse()
        self.status = self.response.status
        self.parser = SSEParser()
        if self.status != 200:
            self.body = self.response.read()
            self.connection.close()

    def until(self, holds, within):
        """The first event for which `holds(name, data)`, or None after `within` seconds."""
        deadline = time.monotonic() + within
        try:
            while time.monotonic() < deadline:
                line = self.response.readline()
                if not line:
                    return None
                for event in self.parser.feed(line.decode()):
                    if "event" in event and holds(event["event"], json.loads(event.get("data") or "null")):
                        return event["event"], json.loads(event.get("data") or "null")
        except (OSError, http.client.HTTPException):
            return None
        return None

    def close(self):
        self.connection.close()


class Checker:
    def __init__(self, cluster, secret):
        self.cluster = cluster
        self.failures = Failures()
        self.check = self.failures.check
        self.feed = f"user:{os.getpid()}"
        self.alice = mint(secret, {"sub": "alice", "ptr": {"read": [self.feed], "publish": [self.feed]}})
        self.bob = mint(secret, {"sub": "bob", "ptr": {"read": [self.feed]}})
        self.carol = mint(secret, {"sub": "carol", "ptr": {"read": ["user:other"]}})
        self.serial = 0

    @staticmethod
    def exchange(connection, method, path, body, headers):
        """(status, its WWW-Authenticate, its JSON) on a connection of its own."""
        try:
            reply = client.request(connection, method, path, body, headers)
        finally:
            connection.close()
        return reply.status, reply.headers.get("WWW-Authenticate"), reply.json

    def front(self, method, path, body=None, headers=None):
        return self.exchange(self.cluster.front(), method, path, body, headers)

    def on(self, name, method, path, headers=None):
        return self.exchange(self.cluster.instance(name), method, path, None, headers)

    def publish(self, token):
        self.serial += 1
        item = {"id": f"private-{self.serial}", "title": f"Private {self.serial}"}
        status, _, _ = self.front("POST", f"/api/feeds/{self.feed}/items", item, bearer(token) if token else None)
        return status, item["id"]

    def reads(self):
        print(f"== a: {self.feed} through the front and on every instance")
        status, _ = self.publish(None)
        self.check(status == 401, "a publish without a token through the front is refused", f"status {status}")
        status, first = self.publish(self.alice)
        self.check(status == 201, "a publish with a publish right through the front is stored", f"status {status}")
        path = f"/api/feeds/{self.feed}/items"
        for name in self.cluster.names:
            status, challenge, body = self.on(name, "GET", path)
            self.check(status == 401 and challenge == 'Bearer error="invalid_token"',
                       f"{name} refuses {self.feed} without a token", f"{status} {challenge}")
            status, challenge, _ = self.on(name, "GET", path, bearer(self.carol))
            self.check(status == 403 and challenge == 'Bearer error="insufficient_scope"',
                       f"{name} refuses it to another feed's token", f"{status} {challenge}")
            status, _, body = self.on(name, "GET", path, bearer(self.bob))
            ids = [item["id"] for item in (body or {}).get("items", [])] if status == 200 else []
            self.check(ids == [first], f"{name} reads it with a reader's token", f"status {status}, ids {ids}")
            status, _, body = self.on(name, "GET", path, {"Cookie": f"ptr_token={self.bob}"})
            self.check(status == 200, f"{name} reads it with the token as the cookie ptr_token", f"status {status}")
        status, challenge, _ = self.front("GET", path)
        self.check(status == 401 and challenge == 'Bearer error="invalid_token"', "the front passes the refusal on",
                   f"{status} {challenge}")
        status, _, _ = self.front("GET", path, headers=bearer(self.bob))
        self.check(status == 200, "and the read with a token", f"status {status}")

    def sessions(self):
        print(f"== b: sessions of {self.feed} on every instance, their streams, a publish")
        status, challenge, _ = self.front("POST", "/api/sessions", {"feed": self.feed})
        self.check(status == 401 and challenge == 'Bearer error="invalid_token"', "a session without a token is refused",
                   f"{status} {challenge}")
        held = {}
        for _ in range(4 * len(self.cluster.names)):
            # Showing its first page, a session hears of what comes after it.
            asked = {"feed": self.feed, "firstPage": True, "config": {"news": "badge"}}
            status, _, body = self.front("POST", "/api/sessions", asked, bearer(self.alice))
            if status != 201:
                self.check(False, "a session with a reader's token is made through the front", f"status {status}, {body}")
                return
            held.setdefault(body["id"].split(".", 1)[0], body["id"])
            if len(held) == len(self.cluster.names):
                break
        self.check(sorted(held) == self.cluster.names, "sessions of the private feed land on every instance", f"{sorted(held)}")
        streams = []
        try:
            for name, session in sorted(held.items()):
                refused = [Stream(self.cluster, session, headers) for headers in
                           ({}, {"Cookie": f"ptr_token={self.bob}"}, bearer(self.carol))]
                self.check([stream.status for stream in refused] == [401, 403, 403],
                           f"{name}: the stream of alice's session is refused without a token, with bob's and with carol's",
                           f"{[stream.status for stream in refused]}")
                stream = Stream(self.cluster, session, {"Cookie": f"ptr_token={self.alice}"})
                streams.append(stream)
                opened = stream.status == 200 and stream.until(lambda name, _: name == "state", 30) is not None
                self.check(opened, f"{name}: it opens with alice's cookie", f"status {stream.status}")
            status, second = self.publish(self.alice)
            heard = [stream.until(lambda name, data: name == "news" and data["newest"]["id"] == second, 30) is not None
                     for stream in streams]
            self.check(status == 201 and all(heard) and len(heard) == len(held),
                       "a publish to the private feed reaches its sessions on every instance", f"{sum(heard)} of {len(heard)}")
        finally:
            for stream in streams:
                stream.close()

    def restarted(self):
        victim = self.cluster.names[-1]
        print(f"== c: {victim} killed and started again by scripts/cluster up, without the key in its environment")
        pid = self.cluster.pid(victim)
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while os.path.exists(f"/proc/{pid}") and open(f"/proc/{pid}/stat").read().split()[2] != "Z" and time.monotonic() < deadline:
            time.sleep(0.05)
        environment = {key: value for key, value in os.environ.items() if not key.startswith("PTR_AUTH")}
        environment["PTR_CLUSTER_DIR"] = self.cluster.folder
        up = subprocess.run(["bash", os.path.join(ROOT, "scripts", "cluster"), "up", str(self.cluster.count)],
                            env=environment, capture_output=True, text=True, timeout=90)
        self.check(up.returncode == 0 and self.cluster.pid(victim) != pid, f"{victim} is started again", up.stderr.strip())
        path = f"/api/feeds/{self.feed}/items"
        status, _, _ = self.on(victim, "GET", path)
        self.check(status == 401, f"{victim} still refuses {self.feed} without a token", f"status {status}")
        status, _, _ = self.on(victim, "GET", path, bearer(self.bob))
        self.check(status == 200, f"{victim} still reads it with a reader's token", f"status {status}")

    def run(self):
        self.reads()
        self.sessions()
        self.restarted()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dir", default=os.environ.get("PTR_CLUSTER_DIR", "/tmp/ptr-cluster"), help="the cluster's folder")
    parser.add_argument("--secret", required=True, help="the HMAC secret file the instances were given")
    arguments = parser.parse_args()
    secret = open(arguments.secret, "rb").read().removesuffix(b"\n")
    checker = Checker(Cluster(arguments.dir), secret)
    try:
        checker.run()
    except (OSError, http.client.HTTPException) as error:
        checker.check(False, "the checks ran to their end", f"{type(error).__name__}: {error}")
    print(f"cluster access: {checker.failures.passed} passed, {checker.failures.failed} failed")
    sys.exit(1 if checker.failures.failed or not checker.failures.passed else 0)


if __name__ == "__main__":
    main()
