"""A TCP proxy in front of PostgreSQL that reads the frontend's messages (the wire protocol,
version 3) and drops the connection at a transaction's `COMMIT`, as a network cut at the
worst moment would.

PostgresNIO sends every statement with the extended protocol: a Parse message ('P') holding
the text `COMMIT;`, then Bind, Describe, Execute and Sync ('S'). A simple Query ('Q')
`COMMIT` is recognised too. For each `COMMIT` the policy says:

- "pass": forwarded as usual;
- "before": the connection is closed without forwarding it: the transaction rolls back;
- "after": forwarded up to and including its Sync, then the server's side is half-closed
  (it reads the `COMMIT` and commits, then sees the end of its input) and the client's is
  closed at once: the transaction is committed and the client never hears so;
- "silent": forwarded up to and including its Sync, and from then on nothing PostgreSQL
  says reaches the client, whose connection stays open: the transaction is committed and
  the client hears nothing at all, as when the peer's network goes quiet (TCP may take
  minutes to say so).

Whatever the policy, three faults can be set on every connection at once:

- `silent`: while set, every byte either way is dropped and nothing is closed, as on a
  network that stopped answering without a reset;
- `refusing`: while set, a new connection is closed as soon as it is accepted, as while
  PostgreSQL is down;
- `failing`: a statement whose text contains this is sent as one that fails (division by
  zero) with the same name and parameters, so PostgreSQL answers it with its error on a
  connection that stays up.

From Python: `CommitCutter(host, port)`, point the client at `cutter.port`, then
`cutter.cut(["after", "pass", "before"])` repeats that pattern over the COMMITs that follow;
`cutter.counts` says how many met each fate; set `cutter.silent`, `cutter.refusing` and
`cutter.failing` as they are needed.

From any other language (the Swift tests start it so), the command mode:
`python3 Tests/support/pgproxy.py --target HOST:PORT` prints the port it listens on as its
first line, then reads one command a line on its standard input and answers each with one
line, `ok`, a figure, or `error: …`:

    cut after pass before    the pattern of fates (`cut` alone: every COMMIT passes)
    silent on | silent off
    refuse on | refuse off
    fail TEXT | fail         statements containing TEXT fail (`fail` alone: none do)
    counts                   {"pass": 0, "before": 0, "after": 0, "silent": 0}, since the last `cut`

It stops when its standard input ends. It needs only the standard library."""

import argparse
import json
import socket
import struct
import sys
import threading

SSL_REQUEST = 80877103
FATES = ("pass", "before", "after", "silent")


class CommitCutter:
    def __init__(self, host, port):
        self.target = (host, port)
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(128)
        self.port = self.listener.getsockname()[1]
        self.lock = threading.Lock()
        self.pattern = []
        self.next = 0
        self.counts = dict.fromkeys(FATES, 0)
        # The faults, read by every connection's threads as they go (one assignment each).
        self.silent = False
        self.refusing = False
        self.failing = None
        self.running = True
        threading.Thread(target=self._accept, daemon=True).start()

    def cut(self, pattern):
        with self.lock:
            self.pattern, self.next = list(pattern), 0
            self.counts = dict.fromkeys(FATES, 0)

    def _decide(self):
        with self.lock:
            fate = self.pattern[self.next % len(self.pattern)] if self.pattern else "pass"
            self.next += 1
            self.counts[fate] += 1
            return fate

    def command(self, line):
        """Carries out one line of the command mode; answers the line to print."""
        word, _, rest = line.rstrip("\r\n").partition(" ")
        if word == "cut":
            fates = rest.split()
            unknown = [fate for fate in fates if fate not in FATES]
            if unknown:
                return f"error: no fate {unknown[0]!r}, only {', '.join(FATES)}"
            self.cut(fates)
        elif word in ("silent", "refuse") and rest in ("on", "off"):
            setattr(self, "silent" if word == "silent" else "refusing", rest == "on")
        elif word == "fail":
            self.failing = rest or None
        elif word == "counts" and not rest:
            with self.lock:
                return json.dumps(self.counts)
        else:
            return f"error: no command {line.strip()!r}"
        return "ok"

    def close(self):
        """Stops accepting; the thread that accepts closes the listener when it wakes."""
        self.running = False
        _hang_up(self.listener)

    def _accept(self):
        while self.running:
            try:
                client, _ = self.listener.accept()
            except OSError:
                break
            if self.refusing:
                client.close()
                continue
            try:
                server = socket.create_connection(self.target, timeout=10)
                server.settimeout(None)
            except OSError:
                client.close()
                continue
            threading.Thread(target=self._carry, args=(client, server), daemon=True).start()
        self.listener.close()

    def _carry(self, client, server):
        """One connection, a thread each way. Either ends it early by shutting both sockets
        down, which wakes the other from its `recv()`; only once both are done are the sockets
        closed: one closed while the other thread is about to use it could give its number to
        the next connection, which that thread would then read or write instead."""
        muted = threading.Event()
        backward = threading.Thread(target=self._backward, args=(server, client, muted), daemon=True)
        backward.start()
        self._forward(client, server, muted)
        backward.join()
        client.close()
        server.close()

    def _backward(self, server, client, muted):
        """What PostgreSQL answers goes back while the client is there, until `muted`, and
        not while the proxy is silent."""
        try:
            while data := server.recv(65536):
                if not muted.is_set() and not self.silent:
                    client.sendall(data)
        except OSError:
            pass
        finally:
            _hang_up(client)
            _hang_up(server)

    def _forward(self, client, server, muted):
        pending = b""
        started = False
        cut_at_sync = False
        mute_at_sync = False
        try:
            while data := client.recv(65536):
                if self.silent:
                    continue
                pending += data
                out = b""
                while True:
                    if not started:
                        if len(pending) < 8:
                            break
                        length = struct.unpack("!i", pending[:4])[0]
                        if len(pending) < length:
                            break
                        message, pending = pending[:length], pending[length:]
                        started = struct.unpack("!i", message[4:8])[0] != SSL_REQUEST
                        out += message
                        continue
                    if len(pending) < 5:
                        break
                    kind, length = pending[:1], struct.unpack("!i", pending[1:5])[0]
                    if len(pending) < 1 + length:
                        break
                    message, pending = pending[:1 + length], pending[1 + length:]
                    if cut_at_sync or mute_at_sync:
                        out += message
                        if kind == b"S" and cut_at_sync:
                            self._cut_after(client, server, out, muted)
                            return
                        if kind == b"S":
                            muted.set()
                            server.sendall(out)
                            out, mute_at_sync = b"", False
                        continue
                    if not _is_commit(kind, message):
                        out += _failing(kind, message, self.failing)
                        continue
                    fate = self._decide()
                    if fate == "before":
                        server.sendall(out)
                        _hang_up(client)
                        _hang_up(server)
                        return
                    out += message
                    if fate == "silent":
                        if kind == b"Q":
                            muted.set()
                        else:
                            mute_at_sync = True
                    if fate == "after":
                        if kind == b"Q":
                            self._cut_after(client, server, out, muted)
                            return
                        cut_at_sync = True
                if out:
                    server.sendall(out)
        except OSError:
            # Either side gone: the other must see it too, or the client would wait on a
            # connection nobody forwards.
            _hang_up(client)
            _hang_up(server)
            return
        try:
            server.shutdown(socket.SHUT_WR)
        except OSError:
            pass

    @staticmethod
    def _cut_after(client, server, out, muted):
        """The server gets `out`, the COMMIT last, and then the end of its input; the client
        hears nothing more. Muted first: PostgreSQL may answer the COMMIT before the client's
        side is closed, and that answer must not reach it."""
        muted.set()
        server.sendall(out)
        server.shutdown(socket.SHUT_WR)
        _hang_up(client)


def _hang_up(end):
    """Ends what goes through a socket at once, both ways, and wakes a thread in `recv()` or
    `accept()` on it; the socket stays open (its number taken) until the threads that use it
    are done."""
    try:
        end.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


def _is_commit(kind, message):
    body = message[5:]
    if kind == b"P":
        _, _, body = body.partition(b"\0")
    elif kind != b"Q":
        return False
    query = body.partition(b"\0")[0]
    return query.lstrip().upper().startswith(b"COMMIT")


def _failing(kind, message, fragment):
    """A Parse ('P') of a statement containing `fragment` becomes one of the same name and
    parameters that fails when executed; any other message is left as it is."""
    if fragment is None or kind != b"P":
        return message
    name, _, body = message[5:].partition(b"\0")
    query, _, body = body.partition(b"\0")
    if fragment.encode() not in query:
        return message
    # Parameters must still be used for their declared types to stand: `$n IS NULL` uses each.
    count = struct.unpack("!h", body[:2])[0] if len(body) >= 2 else 0
    uses = "".join(f" AND ${n + 1} IS NULL" for n in range(count))
    body = name + b"\0" + f"SELECT 1 / 0 WHERE true{uses}".encode() + b"\0" + body
    return b"P" + struct.pack("!i", 4 + len(body)) + body


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", required=True, help="PostgreSQL, HOST:PORT")
    arguments = parser.parse_args()
    host, _, port = arguments.target.rpartition(":")
    cutter = CommitCutter(host.strip("[]"), int(port))
    print(cutter.port, flush=True)
    for line in sys.stdin:
        print(cutter.command(line), flush=True)
    cutter.close()


if __name__ == "__main__":
    main()
