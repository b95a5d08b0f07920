"""Real pages through the cluster's front, in headless Chromium: many tabs on one origin
over HTTP/2, and a page whose instance is killed.

Run by Tests/cluster/run.sh against the cluster it brings up: PTR_FRONT is the front's
URL, PTR_CLUSTER_DIR the cluster's folder (its instances' pid files)."""

import os
import pathlib
import signal
import ssl
import subprocess
import sys
import time

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "Tests" / "browser"))

from harness import make_driver, request_json, screenshot, wait  # noqa: E402

FRONT = os.environ.get("PTR_FRONT")
DIR = pathlib.Path(os.environ.get("PTR_CLUSTER_DIR", "/tmp/ptr-cluster"))

pytestmark = pytest.mark.skipif(not FRONT, reason="PTR_FRONT names no cluster front (Tests/cluster/run.sh sets it)")

# The front's certificate is self-signed: the test trusts it, as a browser told to would.
INSECURE = ssl.create_default_context()
INSECURE.check_hostname = False
INSECURE.verify_mode = ssl.CERT_NONE


def publish(*titles):
    """Publishes through the front, trying again while it answers 503 (an instance that
    died is noticed by the front on the first request it fails)."""
    body = {"items": [{"id": f"{title}-{time.time_ns()}", "title": title} for title in titles]}
    deadline = time.monotonic() + 15
    while True:
        status, reply = request_json(FRONT, "POST", "/api/items", body, context=INSECURE)
        if status == 201 or time.monotonic() > deadline:
            assert status == 201, reply
            return
        time.sleep(0.2)


@pytest.fixture
def browser():
    driver = make_driver(390, 844, insecure=True)
    yield driver
    driver.quit()


def titles(driver):
    return driver.execute_script("return [...document.querySelectorAll('.feed .item h2')].map(e => e.textContent)")


# Every item id the page was sent, from its first page on: the list itself drops an id it
# already shows, so only this tells whether the server sent one twice.
SENT = """
    window.sent = [];
    document.addEventListener('ptr-items', e => window.sent.push(...e.detail.items.map(item => item.id)));
"""


def open_list(driver, query=""):
    driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": SENT})
    driver.get(f"{FRONT}/{query}")
    wait(driver, lambda d: d.execute_script("return document.querySelectorAll('.feed .item').length") >= 10, timeout=15)
    wait(driver, lambda d: d.execute_script("return document.getElementById('list').dataset.connection") == "open",
         timeout=15)
    driver.execute_script("""
        window.done = [];
        document.getElementById('list').addEventListener('ptr-done', e => window.done.push(e.detail));
    """)


def session(driver):
    return driver.execute_script("return document.getElementById('list').dataset.session")


def test_eight_tabs_on_one_origin_all_refresh_over_http2(browser):
    tabs = []
    for index in range(8):
        if index > 0:
            browser.switch_to.new_window("tab")
        open_list(browser)
        tabs.append(browser.current_window_handle)
    protocol = browser.execute_script("return performance.getEntriesByType('navigation')[0].nextHopProtocol")
    assert protocol == "h2", f"the page came over {protocol}"
    published = f"For all eight tabs {time.time_ns()}"
    publish(published)
    for tab in tabs:
        browser.switch_to.window(tab)
        # Every tab holds a stream open; over HTTP/1.1 the seventh would wait for a connection.
        wait(browser, lambda d: d.execute_script("return document.getElementById('list').dataset.newsCount") == "1")
        browser.execute_script("document.getElementById('list').refresh()")
    for tab in tabs:
        browser.switch_to.window(tab)
        wait(browser, lambda d: d.execute_script(
            "return window.done.some(e => e.kind === 'refresh' && e.outcome === 'completed')"))
        assert titles(browser)[0] == published


def instance_pid(name):
    return int((DIR / "instances" / f"{name}.pid").read_text().strip())


@pytest.mark.parametrize("mode", ["live", "badge"])
def test_a_page_whose_instance_is_killed_is_back_and_complete_within_seconds(browser, mode):
    """Back on a live instance, with what was published meanwhile and nothing lost, within
    half a minute however busy the machine (it takes a few seconds); the time is printed."""
    open_list(browser, f"?news={mode}")
    before = titles(browser)
    lost = session(browser)
    instance = lost.split(".")[0]
    os.kill(instance_pid(instance), signal.SIGKILL)
    started = time.monotonic()
    published = [f"While {instance} was down {time.time_ns()}", f"And another {time.time_ns()}"]
    publish(*published)

    wait(browser, lambda d: (session(d) or lost).split(".")[0] != instance, timeout=30)
    if mode == "badge":
        wait(browser, lambda d: d.execute_script("return document.getElementById('list').dataset.newsCount") == "2",
             timeout=max(1, 30 - (time.monotonic() - started)))
        browser.execute_script("document.getElementById('list').refresh()")
    wait(browser, lambda d: len(titles(d)) == len(before) + 2, timeout=max(1, 30 - (time.monotonic() - started)))
    elapsed = time.monotonic() - started
    shown = titles(browser)
    assert set(shown[:2]) == set(published), "what was published meanwhile, on top"
    assert shown[2:] == before, "nothing the page showed lost or moved"
    assert len(set(shown)) == len(shown), "no item twice on the page"
    sent = browser.execute_script("return window.sent")
    assert len(sent) == len(set(sent)) == len(shown), "and none sent twice"
    print(f"{mode}: back on {session(browser).split('.')[0]} and complete {elapsed:.1f} s after the kill")
    screenshot(browser, f"cluster-failover-{mode}.png")
    # The cluster starts what is not running, for the tests after this one.
    subprocess.run(["bash", str(ROOT / "scripts" / "cluster"), "up", "3", *os.environ.get("PTR_CLUSTER_ARGS", "").split()],
                   check=True, stdout=subprocess.DEVNULL)
