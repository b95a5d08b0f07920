"""One rule for every input: a pull that comes back past zero ends there. The server is told
the list is back at its edge (a drag at the edge, no release), nothing refreshes, the list
is drawn at rest, and further movement scrolls the list as usual."""

import time

import pytest

from harness import assert_no_console_errors, make_driver, wait
from phone import RECORDER, fingers, refreshes, requests, settle, start_point

PULL, BACK = 70, 170


def mouse(driver, kind, x, y, buttons=1):
    event = {"type": kind, "x": x, "y": y, "button": "left", "buttons": buttons}
    if kind != "mouseMoved":
        event["clickCount"] = 1
    driver.execute_cdp_cmd("Input.dispatchMouseEvent", event)


def wheel(driver, x, y, delta):
    driver.execute_cdp_cmd("Input.dispatchMouseEvent", {"type": "mouseWheel", "x": x, "y": y, "deltaX": 0, "deltaY": delta})


# The page reads a pause of 160 ms between wheel events as the release.
WHEEL_RELEASE = 0.16


def down_and_back(driver, kind):
    """Pulls PULL points of travel down, then goes BACK up in a few moves, then lets go.
    Answers the longest gap between two wheel events sent (0 for the other kinds)."""
    x, y = start_point(driver)
    path = [PULL * step / 5 for step in range(1, 6)] + [PULL - BACK * step / 5 for step in range(1, 6)]
    if kind == "touch":
        fingers(driver).drag(x, y, path, hz=30)
        fingers(driver).send("touchEnd")
        fingers(driver).settled()
    elif kind == "mouse":
        mouse(driver, "mouseMoved", x, y, buttons=0)
        mouse(driver, "mousePressed", x, y)
        for travel in path:
            mouse(driver, "mouseMoved", x, y + travel)
            time.sleep(0.03)
        mouse(driver, "mouseReleased", x, y + path[-1], buttons=0)
    else:
        previous = 0
        longest, last = 0.0, None
        for travel in path:
            wheel(driver, x, y + 100, -(travel - previous))
            now = time.monotonic()
            longest = max(longest, now - last) if last is not None else 0.0
            last = now
            previous = travel
            time.sleep(0.03)
        return longest
    return 0.0


@pytest.mark.parametrize("kind", ["touch", "mouse", "wheel"])
def test_a_pull_back_past_zero_ends_at_the_edge_and_the_list_scrolls_on(server, kind):
    driver = make_driver(390, 844) if kind == "touch" else make_driver(1280, 800)
    try:
        driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": RECORDER})
        driver.get(server + "/")
        wait(driver, lambda d: d.execute_script("return document.querySelectorAll('.feed .item').length") >= 10)
        settle(driver)
        # A busy machine can hold one wheel event back past the page's pause, which the page
        # rightly reads as a release: such a run says nothing, and the gesture is made again
        # (from rest) until its events came without such a pause.
        for _ in range(5):
            began = driver.execute_script("return performance.now()")
            longest = down_and_back(driver, kind)
            time.sleep(0.6)  # past the wheel's pause, which would be its release
            if longest < WHEEL_RELEASE * 0.75:
                break
            wait(driver, lambda d: d.execute_script("return document.getElementById('list').dataset.phase") == "idle", 30)
            driver.execute_script("document.getElementById('list').scroller.scrollTop = 0")
            settle(driver)
        samples = [s for r in requests(driver, began) for s in r["samples"]]
        pulled = [s for s in samples if s["phase"] == "drag"]
        assert min(s["y"] for s in pulled) < -30, "it pulled"
        assert pulled[-1]["y"] == 0, "back at zero: a drag at the edge"
        assert not [s for s in samples if s["phase"] == "release"], "nothing left to let go of"
        wait(driver, lambda d: d.execute_script("return document.getElementById('list').dataset.phase") == "idle")
        assert driver.execute_script("return document.getElementById('list').scroller.style.transform") == ""
        assert not driver.execute_script("return document.getElementById('list').hasAttribute('dragging')")
        assert driver.execute_script("return document.getElementById('list').scroller.scrollTop") > 0, \
            "the rest of the movement scrolled the list"
        assert refreshes(driver) == 0
        assert_no_console_errors(driver)
    finally:
        driver.quit()
