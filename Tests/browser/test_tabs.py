"""Ten tabs of the page in one Chromium, on the default server over plain HTTP/1.1: a browser
keeps at most six connections to a host, and a stream per tab left the seventh tab unable to
load. The tabs share one stream (a SharedWorker holds it): every tab loads, a pull in the
first, a middle and the last tab refreshes, news reaches every tab, and closing tabs hands
the stream on with nothing lost or repeated."""

import time

from harness import (assert_no_console_errors, first_titles, make_driver, open_page, publish, refreshes, request,
                     running_server, wait)
from test_page import touch_drag

TABS = 10


def open_streams(base):
    """The server's open event streams, as its metrics count them."""
    reply = request(base, "GET", "/metrics")
    assert reply.status == 200
    for line in reply.body.decode().splitlines():
        if line.startswith("ptr_open_streams "):
            return float(line.split()[1])
    raise AssertionError("no ptr_open_streams")


def news_count(driver):
    return driver.execute_script("return document.getElementById('list').dataset.newsCount ?? null")


def ids_shown(driver):
    return driver.execute_script("return [...document.querySelectorAll('.feed .item')].map(e => e.dataset.id)")


def pull(driver, base, title):
    """Publishes `title` and pulls the tab until it shows it on top."""
    publish(base, title)
    before = refreshes(driver)
    touch_drag(driver, 150)
    wait(driver, lambda d: refreshes(d) > before and first_titles(d, 1) == [title])
    shown = ids_shown(driver)
    assert len(shown) == len(set(shown)), "an item shown twice"


def test_ten_tabs_share_one_stream_load_and_pull(server):
    driver = make_driver(390, 844)
    # A tab that cannot get a connection never finishes loading: fail within half a minute
    # rather than Selenium's five.
    driver.set_page_load_timeout(30)
    try:
        tabs = []
        load_seconds = []
        for index in range(TABS):
            if index:
                driver.switch_to.new_window("tab")
            started = time.monotonic()
            open_page(driver, server)  # fails when the list does not fill within its wait
            load_seconds.append(time.monotonic() - started)
            tabs.append(driver.current_window_handle)
        print(f"\n   load of each of {TABS} tabs (s): {', '.join(f'{s:.2f}' for s in load_seconds)}")
        # One stream for all ten, once the joins have settled.
        wait(driver, lambda d: open_streams(server) == 1)

        # A publish reaches every tab, each with its own news.
        publish(server, "News for every tab")
        for handle in tabs:
            driver.switch_to.window(handle)
            wait(driver, lambda d: news_count(d) == "1")

        # Pulls in the first, a middle and the last tab refresh, each in its own tab.
        for index in (0, TABS // 2, TABS - 1):
            driver.switch_to.window(tabs[index])
            pull(driver, server, f"Pulled in tab {index + 1}")

        # Closing tabs, the first among them: the others go on, on one stream, with nothing
        # lost or repeated.
        for index in (0, 1, 2):
            driver.switch_to.window(tabs[index])
            driver.close()
        tabs = tabs[3:]
        driver.switch_to.window(tabs[0])
        wait(driver, lambda d: open_streams(server) == 1)
        counts = {}
        for handle in tabs:
            driver.switch_to.window(handle)
            counts[handle] = int(news_count(driver))
        publish(server, "After the first tabs closed")
        for handle in tabs:
            driver.switch_to.window(handle)
            wait(driver, lambda d: news_count(d) == str(counts[handle] + 1))
        driver.switch_to.window(tabs[-1])
        pull(driver, server, "Pulled after the first tabs closed")
        assert_no_console_errors(driver)
    finally:
        driver.quit()


def test_without_shared_workers_each_tab_has_its_own_stream(server):
    """Where the page does not share (here turned off, as where SharedWorker or Web Locks
    are missing), each tab opens its own EventSource as before."""
    driver = make_driver(390, 844)
    try:
        driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": "window.PTR_SHARED_STREAM = false;"})
        before = open_streams(server)
        open_page(driver, server)
        wait(driver, lambda d: open_streams(server) == before + 1)
        assert driver.execute_script("return performance.getEntriesByType('resource').some(e => e.name.includes('/events?session='))") is False
        pull(driver, server, "Pulled on a stream of its own")
    finally:
        driver.quit()


def server_connections(port):
    """The connections the server on `port` holds open, from the kernel's tables."""
    count = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = open(table).read().splitlines()[1:]
        except FileNotFoundError:
            continue
        for line in lines:
            fields = line.split()
            if fields[3] == "01" and int(fields[1].rsplit(":", 1)[1], 16) == port:  # ESTABLISHED, on the server's side
                count += 1
    return count


def test_at_rest_ten_tabs_hold_at_most_two_connections():
    """Once the connections the pages loaded through have idled out (here after two seconds
    rather than the default minute), ten tabs hold the shared stream's connection alone."""
    with running_server("--idle-timeout", "2") as base:
        port = int(base.rsplit(":", 1)[1])
        driver = make_driver(390, 844)
        driver.set_page_load_timeout(30)
        try:
            for index in range(TABS):
                if index:
                    driver.switch_to.new_window("tab")
                open_page(driver, base)
            wait(driver, lambda d: server_connections(port) <= 2, 30)
            time.sleep(3)  # past another idle timeout: it stays so
            held = server_connections(port)
            print(f"\n   connections {TABS} tabs hold at rest: {held}")
            assert held <= 2
        finally:
            driver.quit()
