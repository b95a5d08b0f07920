"""The commit-cutting proxy (pgproxy.py) checked without PostgreSQL: it runs in its command
mode, as the Swift tests run it, in front of a listening socket of the test's that reads the
bytes a PostgreSQL server would and answers what the test says. Every check waits for bytes
or for the end of a connection, never for a time: the socket timeouts only stop a broken
proxy from hanging the suite."""

import json
import os
import socket
import struct
import subprocess
import sys

import pytest

PGPROXY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pgproxy.py")
PATIENCE = 60  # seconds before a broken proxy fails the test instead of hanging it


def message(kind, body=b""):
    return kind + struct.pack("!i", 4 + len(body)) + body


def startup():
    parameters = b"user\0ptr\0database\0ptr\0\0"
    return struct.pack("!ii", 8 + len(parameters), 196608) + parameters


def parse(query, name=b"", types=()):
    return message(b"P", name + b"\0" + query + b"\0" + struct.pack("!h", len(types))
                   + b"".join(struct.pack("!i", oid) for oid in types))


def rest_of_statement():
    """Bind, Describe, Execute and Sync, as PostgresNIO sends them after a Parse."""
    return (message(b"B", b"\0\0" + struct.pack("!hhh", 0, 0, 0)) + message(b"D", b"P\0")
            + message(b"E", b"\0" + struct.pack("!i", 0)) + message(b"S"))


def statement(query):
    return parse(query) + rest_of_statement()


def receive(end, count):
    data = b""
    while len(data) < count:
        chunk = end.recv(count - len(data))
        assert chunk, f"the connection ended after {data!r}"
        data += chunk
    return data


def until_the_end(end):
    """Everything `end` reads until its peer closes (a reset counts as an end)."""
    data = b""
    try:
        while chunk := end.recv(65536):
            data += chunk
    except ConnectionResetError:
        pass
    return data


class Proxy:
    def __init__(self, target_port):
        self.process = subprocess.Popen([sys.executable, PGPROXY, "--target", f"127.0.0.1:{target_port}"],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.port = int(self.process.stdout.readline())

    def ask(self, line):
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()
        return self.process.stdout.readline().rstrip("\n")

    def connect(self):
        return socket.create_connection(("127.0.0.1", self.port), timeout=PATIENCE)


@pytest.fixture
def backend():
    """Where the proxy forwards to, standing in for PostgreSQL."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    listener.settimeout(PATIENCE)
    yield listener
    listener.close()


@pytest.fixture
def proxy(backend):
    proxy = Proxy(backend.getsockname()[1])
    yield proxy
    proxy.process.stdin.close()
    proxy.process.wait(PATIENCE)


def connected(proxy, backend):
    """A client through the proxy and the backend's end of it, once the startup went through."""
    client = proxy.connect()
    client.sendall(startup())
    server, _ = backend.accept()
    server.settimeout(PATIENCE)
    assert receive(server, len(startup())) == startup()
    return client, server


def test_the_command_mode_answers_every_line_with_one_line(proxy):
    assert proxy.port > 0
    assert proxy.ask("counts") == json.dumps({"pass": 0, "before": 0, "after": 0, "silent": 0})
    for line in ["cut after pass before silent", "cut", "silent on", "silent off", "refuse on", "refuse off",
                 "fail pg_advisory_unlock", "fail two words", "fail"]:
        assert proxy.ask(line) == "ok", line
    assert proxy.ask("cut after sometimes").startswith("error: no fate 'sometimes'")
    assert proxy.ask("silent maybe").startswith("error: no command")
    assert proxy.ask("counts now").startswith("error: no command")
    assert proxy.ask("").startswith("error: no command")
    # The end of its input stops it.
    proxy.process.stdin.close()
    assert proxy.process.wait(PATIENCE) == 0
    assert proxy.process.stdout.read() == ""


def test_each_commit_meets_the_next_fate_of_the_pattern_and_is_counted(proxy, backend):
    assert proxy.ask("cut pass after before silent") == "ok"
    client, server = connected(proxy, backend)
    # Not a COMMIT: through, whatever the pattern. Then a COMMIT that passes, and its answer.
    not_a_commit = statement(b"BEGIN") + message(b"Q", b"SELECT 'commit'\0")
    client.sendall(not_a_commit)
    assert receive(server, len(not_a_commit)) == not_a_commit
    client.sendall(statement(b"  commit;"))
    assert receive(server, len(statement(b"  commit;"))) == statement(b"  commit;")
    server.sendall(message(b"C", b"COMMIT\0"))
    assert receive(client, 12) == message(b"C", b"COMMIT\0")

    # After: forwarded up to its Sync, then the server reads the end of its input, and the
    # client's connection ends with no answer, even one the server gives at once.
    client.sendall(statement(b"COMMIT;") + statement(b"SELECT 'never sent'"))
    assert receive(server, len(statement(b"COMMIT;"))) == statement(b"COMMIT;")
    server.sendall(message(b"C", b"COMMIT\0") + message(b"Z", b"I"))
    assert until_the_end(server) == b""
    server.close()
    assert until_the_end(client) == b""

    # Before: nothing of it reaches the server, and both connections end.
    client, server = connected(proxy, backend)
    client.sendall(statement(b"COMMIT;"))
    assert until_the_end(server) == b""
    assert until_the_end(client) == b""

    # Silent: forwarded, and nothing the server says afterwards reaches the client, whose
    # connection only ends when the server's does.
    client, server = connected(proxy, backend)
    client.sendall(statement(b"COMMIT;"))
    assert receive(server, len(statement(b"COMMIT;"))) == statement(b"COMMIT;")
    server.sendall(message(b"C", b"COMMIT\0") + message(b"Z", b"I"))
    server.shutdown(socket.SHUT_WR)
    assert until_the_end(client) == b""
    assert json.loads(proxy.ask("counts")) == {"pass": 1, "before": 1, "after": 1, "silent": 1}
    assert proxy.ask("cut") == "ok"
    assert json.loads(proxy.ask("counts")) == {"pass": 0, "before": 0, "after": 0, "silent": 0}


def test_a_simple_query_commit_is_cut_after_itself(proxy, backend):
    assert proxy.ask("cut after") == "ok"
    client, server = connected(proxy, backend)
    client.sendall(message(b"Q", b"COMMIT\0") + message(b"Q", b"SELECT 1\0"))
    assert until_the_end(server) == message(b"Q", b"COMMIT\0")
    assert until_the_end(client) == b""


def test_a_failing_statement_keeps_its_name_and_parameters_and_fails_by_division_by_zero(proxy, backend):
    assert proxy.ask("fail pg_advisory_unlock") == "ok"
    client, server = connected(proxy, backend)
    asked = parse(b"SELECT pg_advisory_unlock($1, $2)", name=b"unlock", types=(20, 23)) + rest_of_statement()
    failing = (parse(b"SELECT 1 / 0 WHERE true AND $1 IS NULL AND $2 IS NULL", name=b"unlock", types=(20, 23))
               + rest_of_statement())
    client.sendall(asked)
    assert receive(server, len(failing)) == failing
    # Without parameters, and a statement that does not contain the text, left as it is.
    client.sendall(parse(b"SELECT pg_advisory_unlock_all()") + statement(b"SELECT pg_advisory_lock(1)"))
    assert receive(server, len(parse(b"SELECT 1 / 0 WHERE true"))) == parse(b"SELECT 1 / 0 WHERE true")
    assert receive(server, len(statement(b"SELECT pg_advisory_lock(1)"))) == statement(b"SELECT pg_advisory_lock(1)")
    assert proxy.ask("fail") == "ok"
    client.sendall(asked)
    assert receive(server, len(asked)) == asked


def test_silent_drops_every_byte_either_way_and_closes_nothing(proxy, backend):
    client, server = connected(proxy, backend)
    assert proxy.ask("silent on") == "ok"
    # What the client sends before it half-closes never arrives: the server reads the end of
    # its input and nothing before it. What the server sends never arrives either.
    client.sendall(statement(b"SELECT 'dropped'"))
    client.shutdown(socket.SHUT_WR)
    assert until_the_end(server) == b""
    server.sendall(message(b"Z", b"I"))
    server.shutdown(socket.SHUT_WR)
    assert until_the_end(client) == b""
    # Once it is over, a new connection goes through both ways.
    assert proxy.ask("silent off") == "ok"
    client, server = connected(proxy, backend)
    server.sendall(message(b"Z", b"I"))
    assert receive(client, 6) == message(b"Z", b"I")


def test_refusing_closes_new_connections_and_leaves_open_ones_alone(proxy, backend):
    open_client, open_server = connected(proxy, backend)
    assert proxy.ask("refuse on") == "ok"
    refused = proxy.connect()
    assert until_the_end(refused) == b""
    open_client.sendall(statement(b"SELECT 1"))
    assert receive(open_server, len(statement(b"SELECT 1"))) == statement(b"SELECT 1")
    assert proxy.ask("refuse off") == "ok"
    # The next connection the server accepts is this one: the refused one never reached it.
    client, server = connected(proxy, backend)
    server.sendall(message(b"Z", b"I"))
    assert receive(client, 6) == message(b"Z", b"I")
