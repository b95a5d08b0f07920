"""The page against a server with no room for it: a refused event stream and a refused
session are waited for as the server asks, then taken up, without reloading the page.

Each test starts a server of its own with the limits it needs."""

import re
import socket
import urllib.parse

import pytest
from selenium.webdriver.support.ui import WebDriverWait

from harness import request, request_json, dataset, item_count, make_driver, running_server, screenshot


def create_session(base):
    status, session = request_json(base, "POST", "/api/sessions", {"preset": "default"})
    assert status == 201, session
    return session["id"]


def end_session(base, session):
    status, body = request_json(base, "DELETE", f"/api/sessions/{session}")
    assert status == 204, body


def until(driver, condition, timeout, message):
    return WebDriverWait(driver, timeout, poll_frequency=0.05).until(condition, message)


def error_bar_hidden(driver):
    return driver.execute_script("return document.querySelector('pull-to-refresh .ptr-error').hidden")


def watch_connection(driver):
    """Keeps every `ptr-connection` detail from now on in `window.connections`, and marks
    the page: a reload would lose both."""
    driver.execute_script("""
        window.__marker = 42;
        window.connections = [];
        document.getElementById('list').addEventListener('ptr-connection', e => window.connections.push(e.detail));
    """)


def failed_attempts(driver):
    return driver.execute_script("return window.connections.filter(c => c === 'lost').length")


def not_reloaded(driver):
    return driver.execute_script("return window.__marker") == 42


def script_errors(driver):
    """Severe console entries but the network's own lines about the refused requests,
    which are the point of these tests."""
    return [entry for entry in driver.get_log("browser")
            if entry["level"] == "SEVERE" and entry.get("source") != "network"
            and "Failed to load resource" not in entry["message"]]


def read_refused_stream(base, session):
    """An event stream the server has no room for: `200`, a `text/event-stream` body of a
    `retry:` line and no event, and the end of the answer and of the connection."""
    path = f"/api/sessions/{session}/events"
    try:
        # `request` returns because the answer ends; a held stream times out.
        status, headers, body = request(base, "GET", path, headers={"Accept": "text/event-stream"}, timeout=5)
        assert status == 200
        assert headers["Content-Type"].startswith("text/event-stream")
        body = body.decode()
    except TimeoutError:
        pytest.fail("the server held a stream it had no room for instead of answering retry: and closing")
    assert re.search(r"(?m)^retry: \d+$", body), body
    assert not re.search(r"(?m)^(id|event|data):", body), body

    # Without `Connection: close` from the client, the server closes all the same.
    address = urllib.parse.urlsplit(base)
    received = b""
    with socket.create_connection((address.hostname, address.port), timeout=5) as connection:
        connection.sendall(f"GET {path} HTTP/1.1\r\nHost: {address.netloc}\r\nAccept: text/event-stream\r\n\r\n".encode())
        try:
            while chunk := connection.recv(4096):
                received += chunk
        except TimeoutError:
            pytest.fail(f"the connection stayed open after the refused stream: {received!r}")
    head, _, rest = received.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200"), head
    assert re.search(rb"(?m)^retry: \d+\r?$", rest), rest


def test_a_refused_stream_comes_back_by_itself_once_a_stream_is_free():
    with running_server("--max-streams", "1", "--reconnect-delay-ms", "200") as base:
        first = make_driver(390, 844)
        second = None
        try:
            first.get(base + "/")
            until(first, lambda d: item_count(d) >= 10 and dataset(d, "connection") == "open", 15,
                  "the first page did not get its list")

            second = make_driver(390, 844)
            second.get(base + "/")
            until(second, lambda d: dataset(d, "session") is not None, 15, "the second page did not get a session")
            session = dataset(second, "session")
            watch_connection(second)
            # Turned away again and again: each time EventSource comes back by itself.
            until(second, lambda d: failed_attempts(d) >= 2, 15, "the refused stream was not tried again")
            assert item_count(second) == 0
            assert dataset(second, "phase") is None, "a refused stream brings no state"
            assert dataset(second, "connection") == "lost"
            assert error_bar_hidden(second), "being refused a stream is not an error to show"
            screenshot(second, "overload-stream-refused.png")

            probe = create_session(base)
            read_refused_stream(base, probe)
            end_session(base, probe)

            first.quit()
            first = None
            until(second, lambda d: item_count(d) >= 10 and dataset(d, "phase") is not None, 15,
                  "the second page did not get its stream once the first one closed")
            assert dataset(second, "connection") == "open"
            assert not_reloaded(second), "the page was reloaded"
            assert dataset(second, "session") == session, "the same session, its stream resumed"
            assert error_bar_hidden(second)
            screenshot(second, "overload-stream-taken-up.png")
            assert script_errors(second) == []
        finally:
            for driver in (first, second):
                if driver is not None:
                    driver.quit()


def test_a_page_the_server_has_no_session_for_gets_one_when_there_is_room():
    with running_server("--max-sessions", "1") as base:
        held = create_session(base)
        # What the page meets: a refusal that says when to come back.
        reply = request(base, "POST", "/api/sessions", {"preset": "default"})
        status, headers, refusal = reply.status, reply.headers, reply.json
        assert status == 503, refusal
        retry_after = headers.get("Retry-After", "")
        assert re.fullmatch(r"\d+", retry_after), f"Retry-After: {retry_after!r}"
        assert {"error", "message"} <= set(refusal)
        # The page waits as asked (at most 30 s, plus a little) between two attempts.
        patience = min(int(retry_after), 30) * 1.25 + 10

        driver = make_driver(390, 844)
        try:
            driver.get(base + "/")
            until(driver, lambda d: dataset(d, "connection") == "lost", 15, "the page did not meet the refusal")
            watch_connection(driver)
            until(driver, lambda d: failed_attempts(d) >= 1, patience, "the page did not ask for a session again")
            assert dataset(driver, "session") is None
            assert item_count(driver) == 0
            assert driver.execute_script("return document.querySelector('pull-to-refresh .ptr-scroller') !== null")
            assert error_bar_hidden(driver), "a busy server is waited for, not reported as a failure"
            screenshot(driver, "overload-no-session-yet.png")

            end_session(base, held)
            until(driver, lambda d: dataset(d, "session") is not None, patience, "the page did not get its session")
            until(driver, lambda d: item_count(d) >= 10 and dataset(d, "connection") == "open", 15,
                  "the page got its session but not its list")
            assert not_reloaded(driver), "the page was reloaded"
            assert error_bar_hidden(driver)
            screenshot(driver, "overload-session-taken-up.png")
            assert script_errors(driver) == []
        finally:
            driver.quit()
