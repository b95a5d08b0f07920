"""The page under its Content-Security-Policy, and what a page of another site can and cannot
do to the server, in a real headless Chromium: no CSP violation while the page works; a
cross-site fetch stores nothing; a rebound DNS name reaches nothing; a listed CORS origin
works, and the element on such an origin sends the application's cookie with its requests
and its stream (as it does on the server's own origin, without CORS); labels a client chose
are drawn as text."""

import contextlib
import http.server
import mimetypes
import socket
import threading
import urllib.parse

from harness import (ROOT, assert_no_console_errors, dataset, request, request_json, first_titles, make_driver,
                     open_page, publish, refreshes, running_server, screenshot, wait)
from test_page import label, touch, touch_drag

# Registered before any script of the page runs: every CSP violation the page causes.
WATCH_VIOLATIONS = """
window.cspViolations = [];
document.addEventListener('securitypolicyviolation',
    e => window.cspViolations.push(`${e.violatedDirective} ${e.blockedURI} ${e.sourceFile}:${e.lineNumber}`));
"""

ATTACKER_PAGE = b"<!doctype html><title>Another site</title><p>Nothing to see here.</p>"


@contextlib.contextmanager
def serving(handler):
    """A throwaway site on 127.0.0.1, served from a thread by `handler`: its port."""
    site = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=site.serve_forever, daemon=True).start()
    try:
        yield site.server_address[1]
    finally:
        site.shutdown()
        site.server_close()


@contextlib.contextmanager
def another_site():
    """A page of another origin, as any site the user visits could serve: its base URL
    (http://localhost:PORT, another site than the server's http://127.0.0.1:PORT)."""

    class Page(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(ATTACKER_PAGE)))
            self.end_headers()
            self.wfile.write(ATTACKER_PAGE)

        def log_message(self, *args):
            pass

    with serving(Page) as port:
        yield f"http://localhost:{port}"


def run(driver, script, *arguments):
    """Runs an async function body in the page; its return value comes back."""
    return driver.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        f"(async (...args) => {{ {script} }})(...Array.from(arguments).slice(0, -1)).then(done, e => done('threw ' + e));",
        *arguments)


def titles(base):
    status, page = request_json(base, "GET", "/api/items?limit=200")
    assert status == 200
    return [item["title"] for item in page["items"]]


def refused_count(base, status):
    """Requests to /api/items answered with `status`, from the server's own metrics."""
    text = request(base, "GET", "/metrics").body.decode()
    total = 0
    for line in text.splitlines():
        if line.startswith("ptr_http_requests_total") and 'route="/api/items"' in line and f'status="{status}"' in line:
            total += int(float(line.rsplit(" ", 1)[1]))
    return total


def test_the_page_works_under_its_csp_without_a_violation(server, phone):
    status, headers, _ = request(server, "GET", "/")
    assert status == 200
    policy = headers["Content-Security-Policy"]
    assert "default-src 'self'" in policy and "script-src 'self'" in policy and "frame-ancestors 'none'" in policy
    assert "unsafe" not in policy
    assert headers["X-Content-Type-Options"] == "nosniff"
    assert headers["Referrer-Policy"] == "no-referrer"

    phone.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": WATCH_VIOLATIONS})
    open_page(phone, server)
    # Everything the page draws: a pull that arms, the refresh, new items, the news badge.
    publish(server, "Seen under the policy")
    x, y = touch_drag(phone, 150, release=False)
    wait(phone, lambda d: label(d) == "Release to refresh")
    touch(phone, "touchEnd", x, y)
    wait(phone, lambda d: first_titles(d, 1) == ["Seen under the policy"])
    wait(phone, lambda d: refreshes(d) == 1)
    publish(server, "News under the policy")
    wait(phone, lambda d: d.execute_script(
        "const b = document.querySelector('.ptr-news-button'); return b && !b.hidden"))
    screenshot(phone, "security-csp.png")
    assert phone.execute_script("return window.cspViolations") == []
    log = phone.get_log("browser")
    assert [entry for entry in log if "Content Security Policy" in entry["message"]] == []
    assert [entry for entry in log if entry["level"] == "SEVERE"] == []


def test_a_page_of_another_site_cannot_publish_nor_drive_a_session(server):
    status, session = request_json(server, "POST", "/api/sessions", {})
    assert status == 201
    before = refused_count(server, 403)
    driver = make_driver(800, 600)
    try:
        with another_site() as site:
            driver.get(site + "/")
            # A "simple" request needs no preflight: the browser sends it and hides the answer.
            outcome = run(driver, """
                const [base, session] = args;
                const simple = await fetch(base + "/api/items", {method: "POST", mode: "no-cors",
                    headers: {"Content-Type": "text/plain"},
                    body: JSON.stringify({id: "demo-1", title: "Overwritten by another site"})});
                await fetch(base + "/api/sessions/" + session + "/refresh", {method: "POST", mode: "no-cors"});
                await fetch(base + "/api/sessions/" + session, {method: "DELETE", mode: "no-cors"}).catch(() => null);
                let json = "sent";
                try {
                    await fetch(base + "/api/items", {method: "POST", headers: {"Content-Type": "application/json"},
                        body: JSON.stringify({title: "Overwritten by another site"})});
                } catch (error) {
                    json = "blocked";
                }
                return [simple.type, json];
            """, server, session["id"])
        assert outcome == ["opaque", "blocked"], outcome
        assert "Overwritten by another site" not in titles(server)
        assert refused_count(server, 403) >= before + 1, "the text/plain publish was answered 403 cross_origin"
        status, state = request_json(server, "GET", f"/api/sessions/{session['id']}")
        assert status == 200, "the session was not ended by another site"
        assert state["state"]["phase"] == "idle", "no refresh was started by another site"
    finally:
        driver.quit()


def test_a_rebound_dns_name_reaches_nothing(server):
    port = server.rsplit(":", 1)[1]
    # attacker.example now resolves to this machine, as DNS rebinding makes it do.
    driver = make_driver(800, 600, arguments=("--host-resolver-rules=MAP attacker.example 127.0.0.1",))
    try:
        driver.get(f"http://attacker.example:{port}/")
        body = driver.execute_script("return document.body.innerText")
        assert '"error":"unknown_host"' in body.replace(" ", ""), body
        outcome = run(driver, """
            const reply = await fetch("/api/items", {method: "POST", headers: {"Content-Type": "application/json"},
                body: JSON.stringify({title: "Published through a rebound name"})});
            return [reply.status, (await reply.json()).error];
        """)
        assert outcome == [421, "unknown_host"], outcome
        assert "Published through a rebound name" not in titles(server)
    finally:
        driver.quit()


def test_a_listed_origin_uses_the_api_from_its_page():
    with another_site() as site, running_server("--cors-origin", site) as base:
        driver = make_driver(800, 600)
        try:
            driver.get(site + "/")
            outcome = run(driver, """
                const [base] = args;
                const json = {"Content-Type": "application/json"};
                const created = await fetch(base + "/api/sessions", {method: "POST", headers: json, body: "{}"});
                const session = await created.json();
                const events = new EventSource(base + "/api/sessions/" + session.id + "/events");
                const first = await new Promise((resolve, reject) => {
                    events.addEventListener("state", e => resolve(JSON.parse(e.data)));
                    events.onerror = () => reject(new Error("the stream failed"));
                });
                events.close();
                const sample = await fetch(base + "/api/sessions/" + session.id + "/samples",
                    {method: "POST", headers: json, body: JSON.stringify({seq: 1, y: -30, phase: "drag"})});
                const published = await fetch(base + "/api/items",
                    {method: "POST", headers: json, body: JSON.stringify({title: "From a listed origin"})});
                return [created.status, first.phase, sample.status, (await sample.json()).state.phase, published.status];
            """, base)
            assert outcome == [201, "idle", 200, "pulling", 201], outcome
            assert "From a listed origin" in titles(base)
        finally:
            driver.quit()


class RecordingProxy:
    """A proxy in front of the server that notes, for every request, its method, path,
    `Cookie` field and the status the server answered; while `strip_credentials` says so
    for a request, it takes `Access-Control-Allow-Credentials` out of the answer, as a server
    that does not allow credentials would send it. Each connection carries one request (the
    proxy asks the server to close after it), so every head is at a connection's start."""

    def __init__(self, upstream):
        self.upstream = upstream
        self.requests = []
        self.strip_credentials = lambda method, path: False
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def seen(self, method, path=None):
        """The requests noted with `method` and, if given, `path` (its query aside)."""
        return [entry for entry in list(self.requests)
                if entry["method"] == method and path in (None, entry["path"].split("?")[0])]

    def close(self):
        self.listener.close()

    def _accept(self):
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    @staticmethod
    def _head(connection):
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = connection.recv(65536)
            if not chunk:
                return None, data
            data += chunk
        head, rest = data.split(b"\r\n\r\n", 1)
        return head.decode("latin-1").split("\r\n"), rest

    @staticmethod
    def _carry(source, target):
        try:
            while chunk := source.recv(65536):
                target.sendall(chunk)
        except OSError:
            pass
        with contextlib.suppress(OSError):
            target.shutdown(socket.SHUT_WR)

    def _serve(self, client):
        upstream = None
        try:
            lines, rest = self._head(client)
            if not lines:
                return
            method, path, _ = lines[0].split(" ", 2)
            fields = [line for line in lines[1:] if line.split(":", 1)[0].strip().lower() != "connection"]
            cookie = next((line.split(":", 1)[1].strip() for line in fields if line.lower().startswith("cookie:")), None)
            entry = {"method": method, "path": path, "cookie": cookie, "status": None}
            self.requests.append(entry)
            upstream = socket.create_connection(self.upstream)
            upstream.sendall("\r\n".join([lines[0], *fields, "Connection: close", "", ""]).encode("latin-1") + rest)
            threading.Thread(target=self._carry, args=(client, upstream), daemon=True).start()
            answer, body = self._head(upstream)
            if not answer:
                return
            entry["status"] = int(answer[0].split(" ")[1])
            if self.strip_credentials(method, path):
                answer = [line for line in answer if not line.lower().startswith("access-control-allow-credentials:")]
            client.sendall("\r\n".join([*answer, "", ""]).encode("latin-1") + body)
            self._carry(upstream, client)
        except OSError:
            pass
        finally:
            for connection in (client, upstream):
                if connection:
                    connection.close()


APPLICATION_PAGE = b"""<!doctype html><title>The application</title>
<link rel="stylesheet" href="/pull-to-refresh/pull-to-refresh.css">
<pull-to-refresh id="list" style="height: 100vh"><ol class="feed"></ol></pull-to-refresh>
<script type="module">
  const list = document.getElementById("list");
  list.setAttribute("api", new URLSearchParams(location.search).get("api"));
  window.titles = [];
  window.done = [];
  list.addEventListener("ptr-items", (e) => window.titles.push(...e.detail.items.map((item) => item.title)));
  list.addEventListener("ptr-done", (e) => window.done.push(e.detail));
  await import("/pull-to-refresh/element.js");
</script>"""

TOKEN = "token-the-login-issued"


@contextlib.contextmanager
def application_site():
    """The application's own site, on another origin than the server's but the same site
    (both on 127.0.0.1, ports apart), as `app.example` and `ptr.example` would be: it serves
    the element's files and a page whose list reads the API named by `?api=`, and `/login`
    sets the `ptr_token` cookie the application's login would. A cookie is not bound to a
    port, so it is the server's host's too, and `SameSite=Lax` lets a same-site request carry
    it (not `Secure`: the test speaks plain HTTP). Yields the site's origin."""
    files = (ROOT / "Public" / "pull-to-refresh").resolve()

    class Site(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            path = urllib.parse.urlsplit(self.path).path
            cookie = None
            if path == "/login":
                body, kind = b"<!doctype html><title>Signed in</title>", "text/html"
                cookie = f"ptr_token={TOKEN}; Path=/; HttpOnly; SameSite=Lax"
            elif path == "/":
                body, kind = APPLICATION_PAGE, "text/html"
            elif path.startswith("/pull-to-refresh/") and (files / path.rsplit("/", 1)[1]).is_file():
                file = files / path.rsplit("/", 1)[1]
                body = file.read_bytes()
                kind = "text/javascript" if file.suffix == ".js" else mimetypes.guess_type(file.name)[0] or "text/plain"
            else:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            if cookie:
                self.send_header("Set-Cookie", cookie)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    with serving(Site) as port:
        yield f"http://127.0.0.1:{port}"


def cors_errors(driver):
    return [entry["message"] for entry in driver.get_log("browser") if "CORS" in entry["message"]]


def test_the_element_on_another_origin_sends_the_cookie_and_needs_credentials_allowed():
    with application_site() as site, running_server("--cors-origin", site) as base:
        upstream = urllib.parse.urlsplit(base)
        proxy = RecordingProxy((upstream.hostname, upstream.port))
        page = f"{site}/?api=" + urllib.parse.quote(f"http://127.0.0.1:{proxy.port}/api", safe="")
        driver = make_driver(390, 844)
        try:
            driver.get(site + "/login")
            driver.get(page)
            # The element works from there: its session and first page, its stream (news
            # comes on it), a refresh.
            wait(driver, lambda d: dataset(d, "connection") == "open")
            assert len(driver.execute_script("return window.titles")) >= 10
            publish(base, "News for another origin")
            wait(driver, lambda d: dataset(d, "newsCount") == "1")
            driver.execute_script("document.getElementById('list').refresh()")
            wait(driver, lambda d: any(done["kind"] == "refresh" and done["outcome"] == "completed"
                                       for done in d.execute_script("return window.done")))
            session = dataset(driver, "session")
            # And every request of it carried the application's cookie.
            cookie = f"ptr_token={TOKEN}"
            created = proxy.seen("POST", "/api/sessions")
            streams = proxy.seen("GET", f"/api/sessions/{session}/events")
            refreshed = proxy.seen("POST", f"/api/sessions/{session}/refresh")
            assert [entry["status"] for entry in created[:1]] == [201], created
            assert streams and refreshed, proxy.requests
            for entry in created[:1] + streams + refreshed:
                assert entry["cookie"] == cookie, entry
            # A preflight never carries credentials; it was answered to allow them.
            assert all(entry["cookie"] is None for entry in proxy.seen("OPTIONS"))
            assert cors_errors(driver) == []

            # Without `Access-Control-Allow-Credentials` on the answer, the browser keeps a
            # credentialed answer from the page although the server gave it: no session.
            proxy.strip_credentials = lambda method, path: method != "OPTIONS"
            sent = len(created)
            driver.get(page)
            wait(driver, lambda d: dataset(d, "connection") == "lost")
            created = proxy.seen("POST", "/api/sessions")
            assert len(created) > sent and created[sent]["status"] == 201 and created[sent]["cookie"] == cookie, created
            # The page that was left ended its session on the way out, with the cookie too.
            wait(driver, lambda d: proxy.seen("DELETE", f"/api/sessions/{session}"))
            assert [entry["cookie"] for entry in proxy.seen("DELETE", f"/api/sessions/{session}")] == [cookie]
            assert dataset(driver, "session") is None
            assert any("Access-Control-Allow-Credentials" in message for message in cors_errors(driver))

            # Nor does a stream open whose answer lacks it, while the session's requests work.
            proxy.strip_credentials = lambda method, path: method == "GET" and path.split("?")[0].endswith("/events")
            driver.get(page)
            wait(driver, lambda d: dataset(d, "session") is not None and dataset(d, "connection") == "lost")
            session = dataset(driver, "session")
            wait(driver, lambda d: any(entry["status"] == 200 for entry in proxy.seen("GET", f"/api/sessions/{session}/events")))
            assert dataset(driver, "connection") == "lost"
        finally:
            driver.quit()
            proxy.close()


def test_the_page_on_the_servers_own_origin_sends_the_cookie_without_cors_origin():
    with running_server() as base:
        upstream = urllib.parse.urlsplit(base)
        proxy = RecordingProxy((upstream.hostname, upstream.port))
        origin = f"http://127.0.0.1:{proxy.port}"
        driver = make_driver(390, 844)
        try:
            driver.execute_cdp_cmd("Network.enable", {})
            driver.execute_cdp_cmd("Network.setCookie", {"name": "ptr_token", "value": TOKEN, "url": origin + "/",
                                                         "httpOnly": True, "sameSite": "Lax"})
            open_page(driver, origin)
            wait(driver, lambda d: dataset(d, "connection") == "open")
            session = dataset(driver, "session")
            cookie = f"ptr_token={TOKEN}"
            # The stream is the one the page's tabs share (from its SharedWorker), or its own.
            streams = proxy.seen("GET", "/api/events") + proxy.seen("GET", f"/api/sessions/{session}/events")
            sent = proxy.seen("POST", "/api/sessions") + streams
            assert len(sent) >= 2 and all(entry["cookie"] == cookie for entry in sent), sent
            assert proxy.seen("OPTIONS") == [], "a same-origin page needs no preflight"
            assert_no_console_errors(driver)
        finally:
            driver.quit()
            proxy.close()


HOSTILE = 'Pull\n</script><img src=x onerror="window.pwned=1"><b>bold</b>\u2028\u2029end'

# Every session the page makes asks for hostile labels, as a client may.
HOSTILE_LABELS = """
const original = window.fetch;
window.fetch = (url, options = {}) => {
    if (String(url).endsWith("/sessions") && options.method === "POST") {
        const body = JSON.parse(options.body || "{}");
        body.config = {...(body.config || {}), top: {...((body.config || {}).top || {}),
            labels: {pull: %s, release: %s}}};
        options = {...options, body: JSON.stringify(body)};
    }
    return original(url, options);
};
"""


def test_hostile_labels_are_drawn_as_text(server, phone):
    import json
    quoted = json.dumps(HOSTILE)
    phone.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument",
                          {"source": WATCH_VIOLATIONS + HOSTILE_LABELS % (quoted, quoted)})
    open_page(phone, server)
    x, y = touch_drag(phone, 40, release=False)
    wait(phone, lambda d: label(d) == HOSTILE)
    assert phone.execute_script("return document.querySelectorAll('.ptr-top img, .ptr-top b').length") == 0
    assert phone.execute_script("return window.pwned === undefined")
    touch(phone, "touchEnd", x, y)
    assert phone.execute_script("return window.cspViolations") == []
    assert_no_console_errors(phone)
