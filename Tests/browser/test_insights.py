"""Pull insights, in Chromium: a few real pulls on the list (a finger on a phone, a mouse on
a desktop), then the insights page draws what the server counted of them; and the `fit`
threshold, which arms a pull on a small phone that stays under it on a tall desktop."""

import json
import time

from selenium.common.exceptions import TimeoutException

from harness import ARTIFACTS, assert_no_console_errors, make_driver, screenshot, wait
from phone import fingers, settle, start_point

# The rubber band (maxPull 400): 175 points of travel show as about 122.
TRAVEL = 175


def open_list(driver, base, query=""):
    driver.get(base + "/" + query)
    wait(driver, lambda d: d.execute_script("return document.querySelectorAll('.feed .item').length") >= 10)
    wait(driver, lambda d: d.execute_script("return document.getElementById('list').dataset.connection") == "open")
    settle(driver)


def phase(driver):
    return driver.execute_script("return document.getElementById('list').dataset.phase")


def list_height(driver):
    return driver.execute_script("return document.getElementById('list').scroller.clientHeight")


def mouse(driver, kind, x, y, buttons=1):
    event = {"type": kind, "x": x, "y": y, "button": "left", "buttons": buttons}
    if kind != "mouseMoved":
        event["clickCount"] = 1
    driver.execute_cdp_cmd("Input.dispatchMouseEvent", event)


def held_phase(driver, seconds=3):
    """The phase the server drew for a pull held still: `armed` as soon as it says so (a busy
    machine may take a while to), otherwise what it says after `seconds`."""
    try:
        wait(driver, lambda d: phase(d) == "armed", seconds)
    except TimeoutException:
        pass
    return phase(driver)


def finger_pull(driver, travel, release=True):
    x, y = start_point(driver)
    fingers(driver).drag(x, y, [travel * step / 12 for step in range(1, 13)], hz=30)
    fingers(driver).settled()
    seen = held_phase(driver)
    if release:
        fingers(driver).send("touchEnd")
        fingers(driver).settled()
    return seen


def mouse_pull(driver, travel):
    x, y = start_point(driver)
    mouse(driver, "mouseMoved", x, y, buttons=0)
    mouse(driver, "mousePressed", x, y)
    for step in range(1, 13):
        mouse(driver, "mouseMoved", x, y + travel * step / 12)
        time.sleep(0.03)
    seen = held_phase(driver)
    mouse(driver, "mouseReleased", x, y + travel, buttons=0)
    return seen


def test_the_fit_threshold_arms_on_a_small_phone_and_not_on_a_tall_desktop(server):
    small = make_driver(360, 520)
    try:
        open_list(small, server, "?threshold=fit")
        height = list_height(small)
        assert 0.2 * height < 120, height
        assert finger_pull(small, TRAVEL) == "armed"
        wait(small, lambda d: phase(d) in ("refreshing", "idle"))
        assert_no_console_errors(small)
    finally:
        small.quit()
    tall = make_driver(1280, 1000)
    try:
        open_list(tall, server, "?threshold=fit")
        assert 0.2 * list_height(tall) >= 148
        assert mouse_pull(tall, TRAVEL) == "pulling"
        settle(tall)
        assert_no_console_errors(tall)
    finally:
        tall.quit()


def test_the_insights_page_draws_the_pulls_the_server_counted(server):
    phone = make_driver(390, 844)
    try:
        open_list(phone, server)
        # A refresh, a pull armed and taken back, an accidental nudge.
        finger_pull(phone, 200)
        wait(phone, lambda d: phase(d) == "idle", 30)
        settle(phone)
        x, y = start_point(phone)
        fingers(phone).drag(x, y, [200 * step / 10 for step in range(1, 11)] + [200 - 150 * step / 5 for step in range(1, 6)], hz=30)
        fingers(phone).send("touchEnd")
        fingers(phone).settled()
        settle(phone)
    finally:
        phone.quit()
    desktop = make_driver(1280, 900)
    try:
        open_list(desktop, server)
        mouse_pull(desktop, 220)
        wait(desktop, lambda d: phase(d) == "idle", 30)
        settle(desktop)
        # An accidental nudge of the wheel at the top: its pause is the release.
        x, y = start_point(desktop)
        desktop.execute_cdp_cmd("Input.dispatchMouseEvent", {"type": "mouseWheel", "x": x, "y": y + 100, "deltaX": 0, "deltaY": -8})
        time.sleep(0.6)
        settle(desktop)
        desktop.get(server + "/insights.html")
        wait(desktop, lambda d: d.execute_script("return document.body.dataset.loaded") not in (None, "0"))
        # The last pull is counted when its release reaches the server, which a busy machine
        # may take a moment to do.
        def counted(d):
            figures = d.execute_script("return fetch('/api/insights').then(r => r.json())")
            total = figures["total"]
            done = total["begun"] >= 4 and total["short"] >= 1 and {"touch", "mouse", "wheel"} <= set(figures["byInput"])
            return figures if done else False
        try:
            wait(desktop, counted, 15)
        except TimeoutException:
            pass
        desktop.refresh()
        wait(desktop, lambda d: d.execute_script("return document.body.dataset.loaded") not in (None, "0"))
        figures = desktop.execute_script("return fetch('/api/insights').then(r => r.json())")
        assert figures["total"]["begun"] >= 4, json.dumps(figures["total"])
        assert figures["total"]["refreshed"] >= 2
        assert figures["total"]["takenBack"] >= 1
        assert figures["total"]["short"] >= 1
        assert {"touch", "mouse", "wheel"} <= set(figures["byInput"])
        shown = desktop.execute_script(
            "return Object.fromEntries([...document.querySelectorAll('.total')].map(e => [e.dataset.outcome, Number(e.querySelector('b').textContent)]))")
        assert shown["begun"] == figures["total"]["begun"]
        # Every plot has something drawn.
        for plot in ("distance", "time", "input", "band"):
            assert desktop.execute_script(f"return document.querySelectorAll('#{plot} svg rect, #{plot} svg path').length") > 0, plot
        screenshot(desktop, "insights.png")
        assert (ARTIFACTS / "insights.png").stat().st_size > 10_000
        assert_no_console_errors(desktop)
    finally:
        desktop.quit()
