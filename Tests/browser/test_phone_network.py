"""The pull through a phone network's round trip (150 ms: 75 ms each way, a 4G phone), in
Chromium with real touch: feedback within one round trip of what only the server can say,
none for what the page knows itself, and the first rows after three round trips in a row.

The test decides by what caused what: which request's answer changed the label, that the
sample past the threshold and the release went out without waiting for an answer or for a
turn, how many round trips in a row the first rows waited for. Its bounds in milliseconds
only catch a wait of several round trips, with room for a busy machine; the figures are
printed (`pytest -s` shows them), and `bench/phone-network.py` takes them at 0, 50, 150 and
300 ms, where the aim of one round trip is measured."""

import time

import pytest

from harness import assert_no_console_errors, wait
from phone import (HELD, THRESHOLD, after_lift, first, first_rows, flick, last_lift, open_phone, phone_server,
                   pull_past_and_back, refreshes, refreshing_after, requests, settle, short_pull, slow_pull)

RTT = 150


@pytest.fixture(scope="module")
def phone_base():
    with phone_server(RTT) as base:
        yield base


@pytest.fixture
def phone(phone_base):
    driver = open_phone(phone_base)
    settle(driver)
    yield driver
    driver.quit()


def answered_pull(driver):
    """A pull past the threshold and back (nothing refreshes), and what it proved: the label
    changed on the answer to the first sample that carried the list past the threshold; that
    sample went out without waiting for the answer to the one before it (a queue of one
    request would have); and the answer came through the delaying proxy. Answers (the
    crossing on screen, the label, that sample's request)."""
    crossing, label, past, before, armed = pull_past_and_back(driver)
    assert armed is not None and past is not None
    assert armed["seq"] == past["samples"][-1]["seq"], (armed, past)
    assert past["sent"] < before["answered"], "the sample past the threshold waited a round trip"
    assert label - past["sent"] >= 0.9 * RTT
    return crossing, label, past


def test_release_to_refresh_shows_within_a_round_trip_of_the_crossing(phone):
    lags = []
    for _ in range(4):
        crossing, label, past = answered_pull(phone)
        # Nor for its turn among the paced ones (a few frames, then a round trip): it went out
        # in the task that posted it (its `t`), however a busy machine delays that task.
        assert past["sent"] - past["samples"][-1]["t"] < 100, "the sample past the threshold waited for its turn"
        lags.append((label - crossing, past["sent"] - crossing, past["answered"] - past["sent"]))
    print(f"\n'Release to refresh' after the crossing on screen ({RTT} ms round trip): "
          + ", ".join(f"{lag:.0f} ms (its sample sent after {sent:.0f}, answered {answered:.0f} later)"
                      for lag, sent, answered in lags))
    worst = max(lag[0] for lag in lags)
    # One round trip by what caused it (above); the aim of a round trip + 40 ms is the
    # bench's to measure (20 pulls of bench/phone-network.py met it every time). The bound
    # catches a label that waited several round trips, with room for a busy machine.
    assert worst <= 5 * RTT, f"worst {worst:.0f} ms"
    assert refreshes(phone) == 0, "every pull went back under the threshold before letting go"
    assert_no_console_errors(phone)


def test_with_two_other_tabs_open_a_pull_is_answered_as_fast(phone_base):
    """The tabs share one stream; the tab being pulled posts its own samples, so two other
    tabs of the page, each with its session, change nothing in how fast it answers."""
    driver = open_phone(phone_base)
    try:
        pulled = driver.current_window_handle
        for _ in range(2):
            driver.switch_to.new_window("tab")
            driver.get(phone_base + "/")
            wait(driver, lambda d: d.execute_script("return document.querySelectorAll('.feed .item').length") >= 10, 30)
        driver.switch_to.window(pulled)
        settle(driver)
        lags = []
        for _ in range(2):
            crossing, label, _ = answered_pull(driver)
            lags.append(label - crossing)
        print(f"\n'Release to refresh' after the crossing, two other tabs open ({RTT} ms round trip): "
              + ", ".join(f"{lag:.0f} ms" for lag in lags))
        assert max(lags) <= 5 * RTT, f"worst {max(lags):.0f} ms"
        assert refreshes(driver) == 0
        assert_no_console_errors(driver)
    finally:
        driver.quit()


def test_samples_are_pipelined_a_few_at_a_time(phone):
    began = phone.execute_script("return performance.now()")
    slow_pull(phone)
    wait(phone, lambda d: refreshes(d) == 1, 30)
    sent = requests(phone, began)
    drags = [r for r in sent if all(s["phase"] == "drag" for s in r["samples"])]
    # At any moment, how many drag requests were out.
    most = max(sum(1 for o in drags if o["sent"] <= r["sent"] < (o["answered"] or 1e12)) for r in drags)
    print(f"\n{len(drags)} drag requests, at most {most} out at once")
    assert 2 <= most <= 4, "pipelined, within the connections HTTP/1.1 leaves"
    release = first(sent, lambda r: any(s["phase"] == "release" for s in r["samples"]))
    assert [s["phase"] for s in release["samples"]] == ["release", "scroll"], "where the list rests goes with it"


@pytest.mark.parametrize("gesture", ["slow pull", "flick"])
def test_refreshing_shows_within_a_round_trip_of_the_lift_and_the_list_only_moves_back(phone, gesture):
    began = phone.execute_script("return performance.now()")
    slow_pull(phone) if gesture == "slow pull" else flick(phone)
    lift, heard = last_lift(phone)
    wait(phone, lambda d: refreshes(d) == 1, 30)
    settle(phone, 0.2)
    trace = after_lift(phone, lift, 0)
    shown = refreshing_after(trace)
    assert shown is not None, "a flick past the threshold refreshes too"
    release = first(requests(phone, began), lambda r: any(s["phase"] == "release" for s in r["samples"]))
    at_lift = [f for f in trace if f[0] < 0][-1][1]
    # From the first frame drawn after the page heard of the lift (moves of the finger
    # before it may be handled after the moment it lifted, on a busy machine).
    after = [f for f in trace if f[0] >= heard - lift]
    rises = [(b[0], b[1] - a[1]) for a, b in zip(after, after[1:]) if b[1] > a[1] + 0.5]
    # Where it rests while the refresh runs: the last frame that says so.
    held = [f for f in after if f[3] == "refreshing"][-1][1]
    print(f"\n{gesture} ({RTT} ms round trip): let go at {at_lift:.0f} points, release sent "
          f"{release['sent'] - lift:.0f} ms after the lift, 'Refreshing' {shown:.0f} ms after it, "
          f"held at {held:.1f} points")
    # It went out at once: first after the page heard of the lift, before any request out
    # then came back.
    sent = requests(phone, began)
    out = [r["answered"] for r in sent if r["sent"] < heard < r["answered"]]
    assert release["sent"] < min(out, default=release["sent"] + 1), "it waited for a request in flight"
    assert not [r for r in sent if heard < r["sent"] < release["sent"]], "a request went out before it"
    # The aim is one round trip + 50 ms, the bench's to measure; this catches several.
    assert shown <= 5 * RTT, f"{shown:.0f} ms"
    assert rises == [], "after the lift the list only moves back toward rest"
    assert abs(held - HELD) < 0.5, "while it refreshes the list rests at the held offset"
    assert_no_console_errors(phone)


def test_a_short_pull_springs_back_at_once_and_refreshes_nothing(phone):
    before = phone.execute_script("return [...document.querySelectorAll('.feed .item h2')].slice(0, 5).map(e => e.textContent)")
    short_pull(phone)
    lift, heard = last_lift(phone)
    trace = after_lift(phone, lift, 1.2)
    at_lift = [f for f in trace if f[0] < 0][-1][1]
    # From the first frame drawn after the page heard of the lift.
    after = [f for f in trace if f[0] >= heard - lift]
    print(f"\nshort pull ({RTT} ms round trip): let go at {at_lift:.1f} points, heard {heard - lift:.0f} ms later; the next frames: "
          + ", ".join(f"{f[1]:.1f} at {f[0]:.0f} ms" for f in after[:4]))
    assert 40 <= at_lift < THRESHOLD
    assert after[0][1] < at_lift, "the list starts back in the first frame after the lift"
    assert all(b[1] <= a[1] + 0.5 for a, b in zip(after, after[1:])), "and only moves back"
    assert after[-1][1] == 0 and after[-1][2] == "", "at rest, with no label"
    time.sleep(0.5)
    assert refreshes(phone) == 0
    assert phone.execute_script("return [...document.querySelectorAll('.feed .item h2')].slice(0, 5).map(e => e.textContent)") == before
    assert_no_console_errors(phone)


def test_with_reduced_motion_the_list_goes_back_without_moving_through(phone_base):
    driver = open_phone(phone_base, reduced_motion=True)
    try:
        settle(driver)
        # Let go at once: the states for the last moves come after the lift.
        short_pull(driver, rest=0)
        lift, heard = last_lift(driver)
        after = [f for f in after_lift(driver, lift, 0.5) if f[0] >= heard - lift]
        assert after[0][1] == 0, "straight back to rest, no spring"
        # The states for the pull's last samples come after it is at rest: they leave it there.
        assert [f for f in after if f[1] != 0] == []
    finally:
        driver.quit()


def test_the_first_rows_show_within_four_round_trips_of_navigation(phone_base):
    rows, waterfall = first_rows(phone_base, RTT)
    print(f"\nfirst rows {rows:.0f} ms after navigation ({rows / RTT:.1f} round trips of {RTT} ms); requests before:")
    for path, start, end, wave in waterfall:
        print(f"  {start:6.0f} → {end:6.0f} ms  round trip {wave}  {path}")
    # What the rows waited for, in round trips one after the other: the document, the
    # modules and style sheets (all at once), the session, whose answer brings them.
    sessions = [w for w in waterfall if w[0] == "/api/sessions"]
    assert len(sessions) == 1 and sessions[0][3] == 3, "three round trips in a row"
    assert max(w[3] for w in waterfall) <= 3
    assert not any(w[0].endswith("/events") or w[0].endswith("/samples") for w in waterfall), \
        "the rows came with the session, before its stream or any sample"
    # Three round trips in a row (above) and the page's own work, which a busy machine slows
    # down a lot: the bound catches rows that waited for more than the session.
    assert rows <= 20 * RTT, f"{rows:.0f} ms"


def test_a_refused_sample_waits_as_the_server_asks_and_the_release_still_refreshes():
    # Five samples a second: a pull runs out, is told to wait a second, and goes on after.
    # (Ten was too many: a second's pull through this round trip sends about twenty, which
    # the bucket of ten and its refill could let through.)
    with phone_server(RTT, flags=("--min-refresh-ms", "300", "--max-samples-per-second", "5")) as base:
        driver = open_phone(base)
        try:
            settle(driver)
            began = driver.execute_script("return performance.now()")
            slow_pull(driver)
            wait(driver, lambda d: refreshes(d) == 1, 30)
            sent = requests(driver, began)
            refused = [r for r in sent if r["status"] == 429]
            assert refused, "the pull ran past the limit"
            first_refusal = min(r["answered"] for r in refused)
            later = [r["sent"] for r in sent if r["sent"] > first_refusal]
            assert later and min(later) - first_refusal >= 1000, "nothing is sent before the second it was told to wait"
            assert any(s["phase"] == "release" for r in sent if r["status"] == 200 for s in r["samples"])
            assert_no_console_errors_but_refusals(driver)
        finally:
            driver.quit()


def assert_no_console_errors_but_refusals(driver):
    errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE" and "429" not in e["message"]]
    assert errors == []
