"""The page as a phone sees it: a server behind a proxy that adds a round trip to every
request, a recorder inside the page that notes what is on screen at every frame, and the
gestures and figures the phone-network tests and `bench/phone-network.py` share.

Every figure is taken from the page's own clock (`performance.now()`): when a frame showed
the list at an offset, when the finger lifted, when a request went out and came back. So
what the test machine does between two commands does not enter them."""

import contextlib
import json
import pathlib
import sys
import threading
import time
import urllib.request

import websocket

from harness import make_driver, running_server, wait

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "support"))
from delay_proxy import delaying_proxy  # noqa: E402

LABEL_RELEASE = "Release to refresh"
LABEL_REFRESHING = "Refreshing…"

# Runs before the page's own scripts. Every frame: its time, the list's offset as drawn (the
# computed transform, which a CSS transition moves too), the top label, the number of rows
# and the phase drawn; read in a task after the frame's callbacks, so it is what that frame
# painted. Every
# sample request: when it went out and came back, and what it carried.
RECORDER = r"""
    window.phone = { frames: [], lifts: [], requests: [], states: [], done: [] };
    performance.setResourceTimingBufferSize(100000);
    const read = (now) => {
        const list = document.querySelector('pull-to-refresh');
        const scroller = list?.querySelector('.ptr-scroller');
        const label = list?.querySelector('.ptr-top .ptr-label');
        const offset = scroller ? new DOMMatrixReadOnly(getComputedStyle(scroller).transform).m42 : 0;
        phone.frames.push([now, offset, label ? label.textContent : '', document.querySelectorAll('.feed .item').length,
                           list?.dataset.phase ?? null]);
    };
    const frame = (now) => {
        requestAnimationFrame(frame);
        setTimeout(() => read(now));
    };
    requestAnimationFrame(frame);
    // When the finger lifted, and when the page heard of it (later, on a busy machine).
    document.addEventListener('touchend', (e) => phone.lifts.push([e.timeStamp, performance.now()]), true);
    document.addEventListener('ptr-state', (e) => phone.states.push([performance.now(), e.detail]));
    document.addEventListener('ptr-done', (e) => phone.done.push(e.detail));
    const send = window.fetch.bind(window);
    window.fetch = async (url, init) => {
        if (!String(url).endsWith('/samples')) return send(url, init);
        const body = JSON.parse(init.body);
        const entry = { sent: performance.now(), samples: body.samples ?? [body], answered: null, status: null };
        phone.requests.push(entry);
        const reply = await send(url, init);
        entry.answered = performance.now();
        entry.status = reply.status;
        return reply;
    };
"""

# The default preset's numbers: the rubber band's reach, the top threshold, the held offset.
MAX_PULL = 400
THRESHOLD = 80
HELD = 50


def travel_for(shown):
    """The finger's travel that shows `shown` points past the top."""
    return MAX_PULL * shown / (MAX_PULL - shown)


@contextlib.contextmanager
def phone_server(round_trip_ms, public=None, flags=("--min-refresh-ms", "700")):
    """A server (serving `public`, the repository's Public/ by default: a later `--public`
    wins) behind a proxy `round_trip_ms` away; yields the proxy's base URL."""
    extra = ("--public", str(public)) if public else ()
    with running_server(*flags, *extra) as base:
        if round_trip_ms == 0:
            yield base
            return
        host, port = base.rsplit("/", 1)[1].split(":")
        with delaying_proxy(host, int(port), round_trip_ms) as proxy_port:
            yield f"http://127.0.0.1:{proxy_port}"


def open_phone(base, width=390, height=844, reduced_motion=False):
    """A phone-sized Chromium with touch and the recorder, on the page, its rows shown and
    its stream open; answers the driver."""
    driver = make_driver(width, height, reduced_motion=reduced_motion)
    driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": RECORDER})
    driver.get(base + "/")
    wait(driver, lambda d: d.execute_script("return document.querySelectorAll('.feed .item').length") >= 10, 30)
    wait(driver, lambda d: d.execute_script("return document.getElementById('list').dataset.connection") == "open", 30)
    return driver


class Finger:
    """Touch input at a finger's pace. Commands through chromedriver take tens of
    milliseconds each, which would make every pull a slow one; these go straight to the
    page's DevTools socket, one every 1/60 s, without waiting for each to be handled, as a
    phone's touch screen reports (Chromium then hands them to the page once per frame)."""

    def __init__(self, driver):
        address = driver.capabilities["goog:chromeOptions"]["debuggerAddress"]
        with urllib.request.urlopen(f"http://{address}/json", timeout=10) as reply:
            targets = json.load(reply)
        # The driver's tab (chromedriver names a tab by its DevTools target id), among others.
        page = next((t for t in targets if t["id"] == driver.current_window_handle), None) or next(
            t for t in targets if t["type"] == "page")
        self.socket = websocket.create_connection(page["webSocketDebuggerUrl"], suppress_origin=True, timeout=10)
        self.sent = 0
        self.answered = 0
        self.errors = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        while True:
            try:
                reply = json.loads(self.socket.recv())
            except Exception:
                return
            self.answered += 1
            if "error" in reply:
                self.errors.append(reply["error"])

    def send(self, kind, x=0, y=0):
        self.sent += 1
        points = [] if kind == "touchEnd" else [{"x": x, "y": y, "id": 1}]
        self.socket.send(json.dumps({"id": self.sent, "method": "Input.dispatchTouchEvent",
                                     "params": {"type": kind, "touchPoints": points}}))

    def drag(self, x, y, travels, hz=60):
        """Down at (x, y), then through each travel below it, one per 1/hz s; stays down."""
        self.send("touchStart", x, y)
        began = time.perf_counter()
        for index, travel in enumerate(travels, start=1):
            while (left := began + index / hz - time.perf_counter()) > 0:
                time.sleep(min(left, 0.002))
            self.send("touchMove", x, y + travel)
        return x, y + travels[-1]

    def settled(self, timeout=5):
        """Waits until every touch sent has been handled."""
        deadline = time.monotonic() + timeout
        while self.answered < self.sent and time.monotonic() < deadline:
            time.sleep(0.005)
        assert not self.errors, self.errors

    def close(self):
        self.socket.close()


def fingers(driver):
    if not hasattr(driver, "finger"):
        driver.finger = Finger(driver)
    return driver.finger


def touch(driver, kind, x=0, y=0):
    fingers(driver).send(kind, x, y)


def start_point(driver):
    x, top, width = driver.execute_script(
        "const r = document.getElementById('list').getBoundingClientRect(); return [r.x, r.y, r.width];")
    return x + width / 2, top + 40


def now(driver):
    return driver.execute_script("return performance.now()")


def drag(driver, travels, hz=60):
    """Moves one finger down through each travel in turn, at `hz` moves a second, from a
    point near the list's top; answers (x, y) where it is, the finger still down."""
    x, y = start_point(driver)
    return fingers(driver).drag(x, y, travels, hz)


def settle(driver, seconds=0.4):
    """Waits for the list to rest at the top, then a little more."""
    wait(driver, lambda d: d.execute_script(
        "const l = document.getElementById('list'); return l.dataset.phase === 'idle' && !l.scroller.style.transform"), 15)
    time.sleep(seconds)


def frames(driver, since=0):
    return [f for f in driver.execute_script("return window.phone.frames") if f[0] >= since]


def last_lift(driver):
    """(when the finger lifted, when the page heard of it), in the page's ms."""
    return tuple(driver.execute_script("return window.phone.lifts.at(-1)"))


def requests(driver, since=0):
    return [r for r in driver.execute_script("return window.phone.requests") if r["sent"] >= since]


def refreshes(driver):
    return driver.execute_script(
        "return window.phone.done.filter(d => d.kind === 'refresh' && d.outcome === 'completed').length")


def first(frames_, condition):
    return next((f for f in frames_ if condition(f)), None)


def pull_past_and_back(driver, seconds=1.0):
    """A slow pull past the threshold (to about 110 points shown in `seconds`), held until
    the label says so, then back to 40 points and let go: nothing refreshes. Answers
    (the crossing on screen, the label, the sample request that first carried the list past
    the threshold, the request sent before it, the state that armed), times in the page's
    milliseconds."""
    began = now(driver)
    # 151 points of travel: no move lands exactly on the threshold, so the frame and the
    # sample that first pass it are the same move.
    steps = round(60 * seconds)
    x, y = drag(driver, [151 * step / steps for step in range(1, steps + 1)])
    wait(driver, lambda d: d.execute_script("return document.querySelector('.ptr-top .ptr-label').textContent") == LABEL_RELEASE)
    time.sleep(0.1)
    back = y - 151 + travel_for(40)
    touch(driver, "touchMove", x, back)
    time.sleep(0.1)
    touch(driver, "touchEnd", x, back)
    fingers(driver).settled()
    seen = frames(driver, began)
    crossing = first(seen, lambda f: f[1] >= THRESHOLD)
    label = first(seen, lambda f: f[2] == LABEL_RELEASE)
    sent = requests(driver, began)
    past = first(sent, lambda r: any(s["y"] <= -THRESHOLD for s in r["samples"]))
    before = [r for r in sent if r["sent"] < past["sent"]][-1] if past else None
    armed = next((s for t, s in driver.execute_script("return window.phone.states") if t >= began and s["phase"] == "armed"), None)
    settle(driver)
    return crossing[0], label[0], past, before, armed


def flick(driver):
    """180 points of travel in 100 ms (about 124 points shown), let go at once."""
    x, y = drag(driver, [30, 60, 90, 120, 150, 180])
    touch(driver, "touchEnd", x, y)
    fingers(driver).settled()


def slow_pull(driver, rest=0.5):
    """A slow pull to about 110 points in a second, held for `rest` seconds, then let go."""
    steps = 60
    x, y = drag(driver, [151 * step / steps for step in range(1, steps + 1)])
    time.sleep(rest)
    touch(driver, "touchEnd", x, y)
    fingers(driver).settled()


def short_pull(driver, rest=0.3):
    """A pull to 44 points that rests there `rest` seconds, then lets go: under the
    threshold."""
    steps = 20
    x, y = drag(driver, [travel_for(44) * step / steps for step in range(1, steps + 1)])
    time.sleep(rest)
    touch(driver, "touchEnd", x, y)
    fingers(driver).settled()


def after_lift(driver, lift, seconds):
    """The frames from 50 ms before the lift on, after `seconds`: (ms after the lift,
    offset, label, phase)."""
    time.sleep(seconds)
    return [(f[0] - lift, f[1], f[2], f[4]) for f in frames(driver, lift - 50)]


def offset_at(trace, at):
    """The offset shown at `at` ms after the lift: the last frame at or before it."""
    shown = [f for f in trace if f[0] <= at]
    return shown[-1][1] if shown else None


def refreshing_after(trace):
    """When 'Refreshing…' first shows after the lift, for a refresh that runs (a label left
    from an earlier one, at rest, does not count)."""
    hit = first(trace, lambda f: f[0] >= 0 and f[2] == LABEL_REFRESHING and f[3] == "refreshing")
    return hit[0] if hit else None


def waves(requests_):
    """Which round trip in a row each request is: the document is the first; a request
    started after another's answer came can have waited for it, so it is at least one
    further. Answers the requests as (path, start, end, round trip)."""
    numbered = []
    for path, start, end in sorted(requests_, key=lambda r: r[1]):
        before = [n[3] for n in numbered if n[2] <= start]
        numbered.append((path, start, end, 1 + max(before, default=0)))
    return numbered


def first_rows(base, round_trip_ms):
    """A fresh Chromium (nothing cached) navigates to the page: answers (ms from
    navigation to the first frame that shows a row, the requests made before then, each as
    (path, start, end, which round trip in a row) in ms)."""
    driver = make_driver(390, 844)
    try:
        driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": RECORDER})
        driver.get(base + "/")
        wait(driver, lambda d: d.execute_script("return window.phone.frames.some(f => f[3] > 0)"), 20 + round_trip_ms / 50)
        rows = driver.execute_script("return window.phone.frames.find(f => f[3] > 0)[0]")
        entries = driver.execute_script("""
            return performance.getEntriesByType('resource').map(e => [new URL(e.name).pathname, e.startTime, e.responseEnd]);
        """)
        document = driver.execute_script("const n = performance.getEntriesByType('navigation')[0]; return [n.requestStart, n.responseEnd]")
        return rows, waves([("/", *document), *[e for e in entries if e[1] < rows]])
    finally:
        driver.quit()
