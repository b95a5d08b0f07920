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

Start it with `CommitCutter(host, port)`, point the client at `cutter.port`, then
`cutter.cut(["after", "pass", "before"])` repeats that pattern over the COMMITs that follow.
`cutter.counts` says how many met each fate."""

import socket
import struct
import threading

SSL_REQUEST = 80877103


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
        self.counts = {"pass": 0, "before": 0, "after": 0, "silent": 0}
        self.running = True
        threading.Thread(target=self._accept, daemon=True).start()

    def cut(self, pattern):
        with self.lock:
            self.pattern, self.next = list(pattern), 0
            self.counts = {"pass": 0, "before": 0, "after": 0, "silent": 0}

    def _decide(self):
        with self.lock:
            fate = self.pattern[self.next % len(self.pattern)] if self.pattern else "pass"
            self.next += 1
            self.counts[fate] += 1
            return fate

    def close(self):
        self.running = False
        self.listener.close()

    def _accept(self):
        while self.running:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            try:
                server = socket.create_connection(self.target, timeout=10)
                server.settimeout(None)
            except OSError:
                client.close()
                continue
            muted = threading.Event()
            threading.Thread(target=self._backward, args=(server, client, muted), daemon=True).start()
            threading.Thread(target=self._forward, args=(client, server, muted), daemon=True).start()

    @staticmethod
    def _backward(server, client, muted):
        """What PostgreSQL answers goes back while the client is there, until `muted`."""
        try:
            while data := server.recv(65536):
                if not muted.is_set():
                    client.sendall(data)
        except OSError:
            pass
        finally:
            _close(client)
            _close(server)

    def _forward(self, client, server, muted):
        pending = b""
        started = False
        cut_at_sync = False
        mute_at_sync = False
        try:
            while data := client.recv(65536):
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
                            self._cut_after(client, server, out)
                            return
                        if kind == b"S":
                            muted.set()
                            server.sendall(out)
                            out, mute_at_sync = b"", False
                        continue
                    if not _is_commit(kind, message):
                        out += message
                        continue
                    fate = self._decide()
                    if fate == "before":
                        server.sendall(out)
                        _close(client)
                        _close(server)
                        return
                    out += message
                    if fate == "silent":
                        if kind == b"Q":
                            muted.set()
                        else:
                            mute_at_sync = True
                    if fate == "after":
                        if kind == b"Q":
                            self._cut_after(client, server, out)
                            return
                        cut_at_sync = True
                if out:
                    server.sendall(out)
        except OSError:
            # Either side gone: the other must see it too, or the client would wait on a
            # connection nobody forwards.
            _close(client)
            _close(server)
            return
        try:
            server.shutdown(socket.SHUT_WR)
        except OSError:
            pass

    @staticmethod
    def _cut_after(client, server, out):
        server.sendall(out)
        server.shutdown(socket.SHUT_WR)
        _close(client)


def _close(end):
    """Closes a socket at once: `close()` alone waits while another thread is in `recv()` on
    it, so the other side would not see the end."""
    for step in (lambda: end.shutdown(socket.SHUT_RDWR), end.close):
        try:
            step()
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
