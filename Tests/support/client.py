"""What every Python test of the server speaks with: a free port, one HTTP request, and the
server-sent events framing. The end-to-end checks, the browser, cluster and chaos suites and
the benchmarks import it from here, so a rule of the protocol is written once:

    sys.path.insert(0, str(ROOT / "Tests" / "support"))
    from client import SSEParser, free_port, request, request_json
"""

import collections
import http.client
import json
import re
import socket
import urllib.parse


def free_port(host="127.0.0.1"):
    """A TCP port nothing listens on at `host` now (the kernel's pick)."""
    with socket.socket() as probe:
        probe.bind((host, 0))
        return probe.getsockname()[1]


# ---------------------------------------------------------------- one request


class Reply(collections.namedtuple("Reply", "status headers body")):
    """An answer: its status, its headers (names compared without case, as HTTP does) and
    its body as bytes; a refusal is an answer like any other."""

    @property
    def json(self):
        """The body decoded as JSON; None when empty; the bytes themselves when they are not
        JSON (an answer from something other than the server, e.g. a front's error page)."""
        if not self.body:
            return None
        try:
            return json.loads(self.body)
        except ValueError:
            return self.body


def request(target, method, path, body=None, headers=None, timeout=10, context=None):
    """One request, answered as a `Reply`.

    `target` is a base URL (`http://127.0.0.1:8080`, `https://…` with an `ssl` `context`),
    anything with such a `base` attribute (a test's server), or an open
    `http.client.HTTPConnection` to reuse (kept alive, not closed here). A dict or list body
    goes as JSON with its `Content-Type`, as the server requires of a body that changes
    state; `str` and `bytes` go as they are."""
    headers = dict(headers or {})
    if isinstance(body, (dict, list)):
        body = json.dumps(body).encode()
        headers.setdefault("Content-Type", "application/json")
    elif isinstance(body, str):
        body = body.encode()
    if isinstance(target, http.client.HTTPConnection):
        return _exchange(target, method, path, body, headers)
    connection = connection_to(getattr(target, "base", target), timeout, context)
    try:
        return _exchange(connection, method, path, body, headers)
    finally:
        connection.close()


def request_json(target, method, path, body=None, headers=None, timeout=10, context=None):
    """`(status, decoded body)` of `request`, for the many checks that need no header."""
    reply = request(target, method, path, body, headers, timeout, context)
    return reply.status, reply.json


def connection_to(base, timeout=10, context=None):
    """A new `http.client` connection to a base URL (not yet connected)."""
    address = urllib.parse.urlsplit(base)
    if address.scheme == "https":
        return http.client.HTTPSConnection(address.hostname, address.port, timeout=timeout, context=context)
    return http.client.HTTPConnection(address.hostname, address.port, timeout=timeout)


def _exchange(connection, method, path, body, headers):
    connection.request(method, path, body=body, headers=headers)
    response = connection.getresponse()
    return Reply(response.status, response.msg, response.read())


# ---------------------------------------------------------------- server-sent events

_LINE_END = re.compile(r"\r\n|\r|\n")


class SSEParser:
    """Frames an event stream as the SSE specification does, from text as it arrives in
    pieces of any size: lines end at CR, LF or CRLF (a CR at the end of a piece waits for
    the next, which may hold its LF); a blank line ends a block; `data` lines are joined
    with newlines; a comment line (`:`) is kept apart in `comments`.

    `feed(text)` answers the blocks it completed, each a dict of the fields the block had
    (`id`, `event`, `data`, `retry`, as strings) and `bytes`: how much of the stream the
    block took, its blank line included. A block of comments only is not a block."""

    FIELDS = ("id", "event", "data", "retry")

    def __init__(self):
        self.comments = []
        self._pending = ""
        self._block = {}
        self._size = 0

    def feed(self, text):
        self._pending += text
        blocks = []
        start = 0
        for end in _LINE_END.finditer(self._pending):
            if end.group() == "\r" and end.end() == len(self._pending):
                break  # its LF may come with the next piece
            line = self._pending[start:end.start()]
            self._size += end.end() - start
            start = end.end()
            if line == "":
                if self._block:
                    blocks.append({**self._block, "bytes": self._size})
                self._block, self._size = {}, 0
            elif line.startswith(":"):
                self.comments.append(line[1:].strip())
            else:
                name, _, value = line.partition(":")
                value = value[1:] if value.startswith(" ") else value
                if name == "data" and "data" in self._block:
                    self._block["data"] += "\n" + value
                elif name in self.FIELDS:
                    self._block[name] = value
        self._pending = self._pending[start:]
        return blocks

