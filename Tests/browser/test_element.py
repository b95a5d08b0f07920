"""The <pull-to-refresh> element as a drop-in: what it leaves behind when it is removed or its
page is left (nothing: no stream, no session), what a move keeps (its one session), and its
attributes (`threshold`, `news`, `disabled`), changed while it runs.

Streams and sessions are counted by the server: `ptr_open_streams` and `ptr_sessions` in
`GET /metrics`, on a server of the test's own where the count must be exact."""

import re
import time

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select

from harness import (assert_no_console_errors, request, request_json, dataset, first_titles, item_count, open_page, publish,
                     refreshes, running_server, screenshot, wait)

# The default preset's rubber band: the list shows `MAX_PULL · x / (x + MAX_PULL)` of a
# finger's travel `x`.
MAX_PULL = 400

# Runs before the page's own scripts: what the page is told, what it asks the server (and
# how it was answered), and what it warns of. With `window.initialAttributes`, the list gets
# them as soon as it is parsed, before the element starts.
RECORDER = """
    window.told = { news: [], items: [], sessions: [], states: [] };
    document.addEventListener('ptr-news', e => window.told.news.push(e.detail));
    document.addEventListener('ptr-items', e => window.told.items.push(e.detail));
    document.addEventListener('ptr-session', e => window.told.sessions.push(e.detail));
    document.addEventListener('ptr-state', e => window.told.states.push(e.detail));
    window.requests = [];
    const send = window.fetch.bind(window);
    window.fetch = async (url, init) => {
        const entry = { url: String(url), method: init?.method ?? 'GET', keepalive: Boolean(init?.keepalive), status: null };
        window.requests.push(entry);
        const reply = await send(url, init);
        entry.status = reply.status;
        return reply;
    };
    window.warnings = [];
    const warn = console.warn.bind(console);
    console.warn = (...words) => { window.warnings.push(words.join(' ')); warn(...words); };
    new MutationObserver((_, observer) => {
        const list = document.getElementById('list');
        if (!list) return;
        for (const [name, value] of Object.entries(window.initialAttributes ?? {})) list.setAttribute(name, value);
        observer.disconnect();
    }).observe(document, { childList: true, subtree: true });
"""


@pytest.fixture
def own_server():
    with running_server() as base:
        yield base


def open_recorded(driver, base, attributes=None):
    script = RECORDER
    if attributes:
        script = f"window.initialAttributes = {attributes!r};\n" + script
    driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": script})
    open_page(driver, base)
    wait(driver, lambda d: dataset(d, "connection") == "open")


def gauge(base, name):
    reply = request(base, "GET", "/metrics")
    assert reply.status == 200, reply
    text = reply.body.decode()
    match = re.search(rf"^{name} (\S+)$", text, re.M)
    assert match, f"{name} is not in /metrics"
    return float(match.group(1))


def streams_and_sessions(base):
    return gauge(base, "ptr_open_streams"), gauge(base, "ptr_sessions")


def session_status(base, session):
    return request(base, "GET", f"/api/sessions/{session}").status


def server_config(base, session):
    status, body = request_json(base, "GET", f"/api/sessions/{session}")
    assert status == 200, body
    return body["config"]


def set_attribute(driver, name, value):
    driver.execute_script("document.getElementById('list').setAttribute(arguments[0], arguments[1])", name, value)


def new_session(driver, old):
    """Waits for the element to have a session other than `old`, its stream open; its id."""
    wait(driver, lambda d: dataset(d, "session") not in (None, old) and dataset(d, "connection") == "open")
    return dataset(driver, "session")


def sample_taken(driver, session):
    """Whether the server has taken a sample of `session` (a page at rest is known to be)."""
    return driver.execute_script(
        "return window.requests.some(r => r.url.endsWith(`/sessions/${arguments[0]}/samples`) && r.status === 200)",
        session)


def requests(driver, method, suffix):
    return driver.execute_script(
        "return window.requests.filter(r => r.method === arguments[0] && r.url.endsWith(arguments[1]))", method, suffix)


def last_state(driver):
    return driver.execute_script("return window.told.states.at(-1) ?? null")


def label(driver):
    return driver.execute_script("return document.querySelector('.ptr-top .ptr-label').textContent")


def list_box(driver):
    return driver.execute_script(
        "const r = document.getElementById('list').getBoundingClientRect(); return [r.x, r.y, r.width, r.height];")


def touch(driver, kind, x, y):
    points = [] if kind == "touchEnd" else [{"x": x, "y": y, "id": 1}]
    driver.execute_cdp_cmd("Input.dispatchTouchEvent", {"type": kind, "touchPoints": points})


def touch_drag(driver, travel, release=True, steps=15):
    x, top, width, _ = list_box(driver)
    x, y = x + width / 2, top + 40
    touch(driver, "touchStart", x, y)
    for step in range(1, steps + 1):
        touch(driver, "touchMove", x, y + travel * step / steps)
        time.sleep(0.02)
    if release:
        touch(driver, "touchEnd", x, y + travel)
    return x, y + travel


def pull(driver, shown):
    """Pulls the list down until it shows `shown` points past its top, and holds it there;
    answers the state the server drew for it."""
    travel = MAX_PULL * shown / (MAX_PULL - shown)
    touch_drag(driver, travel, release=False)
    wait(driver, lambda d: (last_state(d) or {}).get("distance") is not None
         and abs(last_state(d)["distance"] - shown) < 1.5)
    return last_state(driver)


def release(driver):
    touch(driver, "touchEnd", 0, 0)


def test_removing_the_element_closes_its_stream_and_ends_its_session(own_server, phone):
    open_recorded(phone, own_server)
    session = dataset(phone, "session")
    wait(phone, lambda _: streams_and_sessions(own_server) == (1, 1))
    shown = item_count(phone)

    phone.execute_script("window.removed = document.getElementById('list'); window.removed.remove()")
    wait(phone, lambda _: streams_and_sessions(own_server) == (0, 0))
    assert session_status(own_server, session) == 404
    ended = requests(phone, "DELETE", f"/sessions/{session}")
    assert len(ended) == 1 and ended[0]["keepalive"], "ended with a request that outlives the page"
    assert phone.execute_script("return window.removed.sessionId") is None
    # Nothing tries again behind the page's back.
    time.sleep(2)
    assert streams_and_sessions(own_server) == (0, 0)
    assert len(requests(phone, "POST", "/sessions")) == 1

    # Put back later, it opens one session, which continues the list it shows.
    phone.execute_script("document.body.append(window.removed)")
    fresh = new_session(phone, session)
    wait(phone, lambda _: streams_and_sessions(own_server) == (1, 1))
    assert phone.execute_script("return window.told.sessions.at(-1)")["resumed"] is True
    assert item_count(phone) == shown
    assert phone.execute_script("return document.getElementById('list').sessionId") == fresh
    assert_no_console_errors(phone)


def test_moving_the_element_keeps_its_one_session_and_stream(own_server, phone):
    open_recorded(phone, own_server)
    session = dataset(phone, "session")
    wait(phone, lambda _: streams_and_sessions(own_server) == (1, 1))

    # Taken out and put back in the same task: above the header, then back below it.
    phone.execute_script("document.body.insertBefore(document.getElementById('list'), document.querySelector('.bar'))")
    time.sleep(1.5)
    phone.execute_script("document.body.append(document.getElementById('list'))")
    time.sleep(1.5)
    assert dataset(phone, "session") == session
    assert phone.execute_script("return document.getElementById('list').sessionId") == session
    assert streams_and_sessions(own_server) == (1, 1)
    status, body = request_json(own_server, "GET", f"/api/sessions/{session}")
    assert status == 200 and body["openStreams"] == 1
    assert requests(phone, "DELETE", f"/sessions/{session}") == []
    assert len(requests(phone, "POST", "/sessions")) == 1

    # It still answers a pull, on the same session.
    touch_drag(phone, 150)
    wait(phone, lambda d: refreshes(d) == 1)
    assert dataset(phone, "session") == session
    assert_no_console_errors(phone)


def test_leaving_the_page_ends_its_session_and_coming_back_opens_one(own_server, phone):
    open_recorded(phone, own_server)
    session = dataset(phone, "session")
    wait(phone, lambda _: streams_and_sessions(own_server) == (1, 1))
    phone.get("about:blank")
    wait(phone, lambda _: streams_and_sessions(own_server) == (0, 0))
    assert session_status(own_server, session) == 404
    # Back (from the back/forward cache, or loaded again): one session, one stream.
    phone.back()
    wait(phone, lambda d: item_count(d) >= 10)
    new_session(phone, session)
    wait(phone, lambda _: streams_and_sessions(own_server) == (1, 1))
    time.sleep(1)
    assert streams_and_sessions(own_server) == (1, 1)


def test_a_threshold_of_120_lets_a_100_point_pull_pass_and_arms_at_130(server, phone):
    open_recorded(phone, server, {"threshold": "120"})
    session = dataset(phone, "session")
    assert server_config(server, session)["top"]["threshold"] == 120
    assert phone.execute_script("return window.told.sessions") == [], "set before it started: one session"
    wait(phone, lambda d: sample_taken(d, session))

    state = pull(phone, 100)
    assert state["phase"] == "pulling", "the preset's 80 would have armed here"
    assert label(phone) == "Pull to refresh"
    release(phone)
    wait(phone, lambda d: last_state(d)["phase"] == "idle")
    time.sleep(1)
    assert refreshes(phone) == 0

    state = pull(phone, 130)
    assert state["phase"] == "armed"
    wait(phone, lambda d: label(d) == "Release to refresh")
    release(phone)
    wait(phone, lambda d: refreshes(d) == 1)
    assert_no_console_errors(phone)


def test_changing_the_threshold_replaces_the_session_with_one_that_continues_the_list(server, phone):
    open_recorded(phone, server)
    old = dataset(phone, "session")
    before = first_titles(phone, 10)
    count = item_count(phone)

    set_attribute(phone, "threshold", "120")
    session = new_session(phone, old)
    assert server_config(server, session)["top"]["threshold"] == 120
    assert session_status(server, old) == 404, "the old session is ended, not left to expire"
    assert [r["keepalive"] for r in requests(phone, "DELETE", f"/sessions/{old}")] == [True]
    assert phone.execute_script("return window.told.sessions.at(-1)")["resumed"] is True
    assert first_titles(phone, 10) == before and item_count(phone) == count

    wait(phone, lambda d: sample_taken(d, session))
    assert pull(phone, 100)["phase"] == "pulling"
    release(phone)
    wait(phone, lambda d: last_state(d)["phase"] == "idle")
    time.sleep(1)
    assert refreshes(phone) == 0
    assert_no_console_errors(phone)


def test_attributes_changed_in_one_task_make_one_new_session(own_server, phone):
    open_recorded(phone, own_server)
    old = dataset(phone, "session")
    phone.execute_script("""
        const list = document.getElementById('list');
        list.setAttribute('threshold', '110');
        list.setAttribute('news', 'off');
        list.setAttribute('preset', 'default');
    """)
    session = new_session(phone, old)
    time.sleep(1.5)
    assert dataset(phone, "session") == session
    assert streams_and_sessions(own_server) == (1, 1)
    assert len(phone.execute_script("return window.told.sessions")) == 1
    config = server_config(own_server, session)
    assert config["top"]["threshold"] == 110 and config["news"] == "off"


@pytest.mark.parametrize("value", ["far", "", "0", "-20", "400", "1e9", "Infinity", "NaN", "120px"])
def test_an_invalid_threshold_is_warned_of_and_the_presets_is_used(server, phone, value):
    open_recorded(phone, server, {"threshold": value})
    session = dataset(phone, "session")
    assert server_config(server, session)["top"]["threshold"] == 80
    warnings = phone.execute_script("return window.warnings")
    assert any(f'threshold="{value}"' in warning for warning in warnings), warnings
    # The preset's threshold holds: a 100-point pull arms.
    wait(phone, lambda d: sample_taken(d, session))
    assert pull(phone, 100)["phase"] == "armed"
    release(phone)
    wait(phone, lambda d: refreshes(d) == 1)
    assert_no_console_errors(phone)


def test_an_invalid_value_set_later_is_warned_of_and_changes_nothing_it_need_not(server, phone):
    open_recorded(phone, server, {"news": "sideways"})
    session = dataset(phone, "session")
    assert server_config(server, session)["news"] == "badge"
    assert any('news="sideways"' in warning for warning in phone.execute_script("return window.warnings"))
    # Still the defaults: no new session for it.
    set_attribute(phone, "threshold", "-1")
    wait(phone, lambda d: any('threshold="-1"' in w for w in d.execute_script("return window.warnings")))
    time.sleep(1)
    assert dataset(phone, "session") == session
    assert phone.execute_script("return window.told.sessions") == []
    assert_no_console_errors(phone)


def test_news_off_brings_nothing_and_live_prepends_once_the_attribute_says_so(server, phone):
    open_recorded(phone, server)
    old = dataset(phone, "session")

    set_attribute(phone, "news", "off")
    quiet = new_session(phone, old)
    assert server_config(server, quiet)["news"] == "off"
    wait(phone, lambda d: sample_taken(d, quiet))
    before = first_titles(phone, 5)
    publish(server, "Unannounced")
    # Anything the publish caused is in before the refresh's own events.
    phone.execute_script("document.getElementById('list').refresh()")
    wait(phone, lambda d: refreshes(d) == 1)
    assert phone.execute_script("return window.told.news") == []
    assert dataset(phone, "newsCount") == "0"
    assert phone.execute_script("return document.querySelector('.ptr-news-button').hidden") is True
    assert first_titles(phone, 6) == ["Unannounced", *before]

    set_attribute(phone, "news", "live")
    live = new_session(phone, quiet)
    assert server_config(server, live)["news"] == "live"
    assert phone.execute_script("return window.told.sessions.at(-1)")["resumed"] is True
    wait(phone, lambda d: sample_taken(d, live))
    publish(server, "Straight in")
    wait(phone, lambda d: first_titles(d, 1) == ["Straight in"])
    items = phone.execute_script("return window.told.items.at(-1)")
    assert items["op"] == "prepend" and items["actionId"] is None
    assert phone.execute_script("return window.told.news") == []
    assert refreshes(phone) == 1
    assert first_titles(phone, 7) == ["Straight in", "Unannounced", *before]
    assert_no_console_errors(phone)


def test_the_demo_pages_news_selector_changes_the_attribute_without_a_reload(server, phone):
    open_recorded(phone, server)
    old = dataset(phone, "session")
    phone.execute_script("window.notReloaded = true")
    Select(phone.find_element(By.ID, "news-mode")).select_by_value("live")
    session = new_session(phone, old)
    assert server_config(server, session)["news"] == "live"
    assert phone.execute_script("return document.getElementById('list').getAttribute('news')") == "live"
    assert phone.execute_script("return window.notReloaded") is True
    assert phone.current_url.endswith("?news=live"), "a reload keeps the mode"
    assert_no_console_errors(phone)


def test_disabled_stops_pulls_buttons_and_infinite_scroll_and_removing_it_restores_them(server, phone):
    open_recorded(phone, server)
    session = dataset(phone, "session")
    wait(phone, lambda d: sample_taken(d, session))
    count = item_count(phone)

    set_attribute(phone, "disabled", "")
    assert phone.execute_script("return document.getElementById('list').getAttribute('aria-disabled')") == "true"
    assert phone.execute_script("return document.querySelector('.ptr-load-more').disabled") is True
    assert phone.execute_script("return document.querySelector('.ptr-news-button').disabled") is True
    assert phone.execute_script("return document.getElementById('refresh').disabled") is True
    posted = len(requests(phone, "POST", "/samples"))
    states = len(phone.execute_script("return window.told.states"))

    # A pull moves nothing and tells the server nothing.
    x, y = touch_drag(phone, 150, release=False)
    assert phone.execute_script("return document.getElementById('list').hasAttribute('dragging')") is False
    assert phone.execute_script("return document.querySelector('.ptr-scroller').style.transform") == ""
    touch(phone, "touchEnd", x, y)
    # Nor do the buttons, or the methods they call.
    assert phone.execute_async_script("document.getElementById('list').refresh().then(arguments[0])") is None
    assert phone.execute_async_script("document.getElementById('list').loadMore().then(arguments[0])") is None
    # Infinite scroll waits too: the end of the list comes into view, and nothing loads.
    phone.execute_script("const s = document.getElementById('list').scroller; s.scrollTop = s.scrollHeight")
    time.sleep(1.5)
    assert len(requests(phone, "POST", "/samples")) == posted
    assert requests(phone, "POST", f"/sessions/{session}/refresh") == []
    assert requests(phone, "POST", f"/sessions/{session}/load-more") == []
    assert phone.execute_script("return window.told.states.length") == states
    assert refreshes(phone) == 0
    assert item_count(phone) == count
    screenshot(phone, "element-disabled.png")

    phone.execute_script("document.getElementById('list').removeAttribute('disabled')")
    assert phone.execute_script("return document.getElementById('list').hasAttribute('aria-disabled')") is False
    assert phone.execute_script("return document.querySelector('.ptr-load-more').disabled") is False
    assert phone.execute_script("return document.getElementById('refresh').disabled") is False
    # Where the list stands goes to the server, which loads the rest.
    wait(phone, lambda d: item_count(d) > count)
    assert dataset(phone, "session") == session, "disabled keeps the session"
    phone.execute_script("document.getElementById('list').scroller.scrollTop = 0")
    wait(phone, lambda d: d.execute_script("return document.getElementById('list').dataset.phase") == "idle")
    touch_drag(phone, 150)
    wait(phone, lambda d: refreshes(d) == 1)
    assert_no_console_errors(phone)


def test_disabled_in_the_middle_of_a_pull_drops_it(server, phone):
    open_recorded(phone, server)
    session = dataset(phone, "session")
    wait(phone, lambda d: sample_taken(d, session))
    assert pull(phone, 130)["phase"] == "armed"
    set_attribute(phone, "disabled", "")
    wait(phone, lambda d: last_state(d)["phase"] == "idle")
    assert phone.execute_script("return document.getElementById('list').hasAttribute('dragging')") is False
    release(phone)
    time.sleep(1)
    assert refreshes(phone) == 0
    assert_no_console_errors(phone)
