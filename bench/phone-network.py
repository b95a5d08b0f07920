#!/usr/bin/env python3
"""The pull on a phone network: the figures of BENCHMARKS.md, "On a phone network".

    python3 bench/phone-network.py             # 0, 50, 150, 300 ms; this page and the one at fa6543a; ~10 min
    python3 bench/phone-network.py --smoke     # 150 ms, this page only, one of each; ~1 min
    python3 bench/phone-network.py --rtts 150 --before ""        # only this page, only 150 ms
    python3 bench/phone-network.py --in-flight 1,2,3,4,5,6       # sample requests out at once, at 150 ms
    python3 bench/phone-network.py --rtts 150 --pulls 20         # the label's lag over twenty pulls

The page runs in headless Chromium (390 × 844, touch) against a server behind
Tests/support/delay_proxy.py, which delivers every byte a fixed time after it was read,
both ways. "Before" is the page as it was at a git revision (`--before`, fa6543a by
default), served by the same server with `--public`. The server is REFRESH_SERVER, else the
release build if there is one, else the debug build. Every time is taken on the page's own
clock (Tests/browser/phone.py). Writes bench/results/<date>-phone-network.{json,md,png}
(`--name` for another name than phone-network).
"""

import argparse
import datetime
import json
import os
import pathlib
import random
import re
import statistics
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
if "REFRESH_SERVER" not in os.environ:
    release = ROOT / ".build" / "release" / "refresh-server"
    if release.exists():
        os.environ["REFRESH_SERVER"] = str(release)
sys.path.insert(0, str(ROOT / "Tests" / "browser"))

import phone  # noqa: E402
from harness import wait  # noqa: E402


def stalls(driver, since, timed=False):
    """How long each sample request waited in the browser for a connection (ms); with
    `timed`, as (when it was asked for, how long it waited)."""
    entries = driver.execute_script("""
        return performance.getEntriesByType('resource')
            .filter(e => e.name.endsWith('/samples') && e.startTime >= arguments[0])
            .map(e => [e.startTime, e.requestStart - e.startTime]);
    """, since)
    return entries if timed else [wait for _, wait in entries]


def lift_trace(driver, gesture):
    began = phone.now(driver)
    done = phone.refreshes(driver)
    gesture(driver)
    lift, heard = phone.last_lift(driver)
    wait(driver, lambda d: phone.refreshes(d) > done or phone.now(d) - lift > 2500, 15)
    phone.settle(driver, 0.2)
    trace = phone.after_lift(driver, lift, 0)
    after = [f for f in trace if f[0] >= heard - lift]
    at_lift = [f for f in trace if f[0] < 0][-1][1]
    # How far a late state pulled the list down again after it had started back.
    lowest, rise = float("inf"), 0
    for frame in after:
        lowest = min(lowest, frame[1])
        rise = max(rise, frame[1] - lowest)
    refreshing = phone.refreshing_after(trace)
    sent = phone.requests(driver, began)
    drags = [r for r in sent if all(s["phase"] == "drag" for s in r["samples"])]
    release = phone.first(sent, lambda r: any(s["phase"] == "release" for s in r["samples"]))
    timed = stalls(driver, began, timed=True)
    release_stall = min(timed, key=lambda e: abs(e[0] - release["sent"]))[1] if release and timed else None
    return {"atLift": at_lift, "refreshingMs": refreshing, "pulledDownAgain": max(0, rise),
            "trace": [(round(f[0], 1), round(f[1], 2)) for f in trace if -100 <= f[0] <= 2500],
            "dragRequests": len(drags), "stallMs": max((w for _, w in timed), default=0), "releaseStallMs": release_stall}


def short(driver):
    phone.short_pull(driver)
    lift, heard = phone.last_lift(driver)
    trace = phone.after_lift(driver, lift, 1.2)
    at_lift = [f for f in trace if f[0] < 0][-1][1]
    moved = phone.first(trace, lambda f: f[0] >= 0 and f[1] < at_lift - 0.5)
    rest = phone.first(trace, lambda f: f[0] >= 0 and f[1] == 0)
    phone.settle(driver)
    return {"atLift": at_lift, "startsBackMs": moved[0] if moved else None, "atRestMs": rest[0] if rest else None}


def pull_seconds(count):
    """How long each measured pull takes to reach its end: from 0.7 to 1.3 s, so that the
    crossing falls at every point of the requests' cycle, not always at the same one (the
    same ones each run)."""
    draw = random.Random(20)
    return [round(draw.uniform(0.7, 1.3), 2) for _ in range(count)]


def measure(base, rtt, pulls, navigations):
    driver = phone.open_phone(base)
    try:
        phone.settle(driver)
        began = phone.now(driver)
        lags = []
        for seconds in pull_seconds(pulls):
            crossing, label, past, _, _ = phone.pull_past_and_back(driver, seconds)
            lags.append({"lagMs": label - crossing, "sentAfterMs": past["sent"] - crossing if past else None})
        pull_stalls = stalls(driver, began)
        slow = lift_trace(driver, phone.slow_pull)
        flick = lift_trace(driver, phone.flick)
        short_pull = short(driver)
    finally:
        driver.quit()
    rows = sorted(phone.first_rows(base, rtt)[0] for _ in range(navigations))
    return {
        "rtt": rtt,
        "labelLagMs": [round(lag["lagMs"]) for lag in lags],
        "labelSentAfterMs": [round(lag["sentAfterMs"]) for lag in lags if lag["sentAfterMs"] is not None],
        "sampleStallMaxMs": round(max(pull_stalls, default=0), 1),
        "slow": slow,
        "flick": flick,
        "short": short_pull,
        "firstRowsMs": [round(r) for r in rows],
    }


def page_at(revision, into):
    """Public/ as it was at `revision`, extracted under `into`."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", revision, "Public"], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into / "Public"


def page_with_in_flight(count, into):
    """This Public/ with MAX_IN_FLIGHT (the paced sample requests) set to `count`."""
    subprocess.run(["cp", "-r", str(ROOT / "Public"), str(into)], check=True)
    session = into / "Public" / "pull-to-refresh" / "session.js"
    text = session.read_text()
    assert "export const MAX_IN_FLIGHT = 3;" in text
    session.write_text(text.replace("export const MAX_IN_FLIGHT = 3;", f"export const MAX_IN_FLIGHT = {count};"))
    return into / "Public"


def sweep(counts, rtt, pulls):
    rows = []
    for count in counts:
        with tempfile.TemporaryDirectory() as scratch:
            public = page_with_in_flight(count, pathlib.Path(scratch))
            with phone.phone_server(rtt, public=public) as base:
                driver = phone.open_phone(base)
                try:
                    phone.settle(driver)
                    began = phone.now(driver)
                    lags = [phone.pull_past_and_back(driver, seconds) for seconds in pull_seconds(pulls)]
                    pull_stalls = stalls(driver, began)
                    sent = phone.requests(driver, began)
                    # Let go while moving: as many requests out as may be, and the release.
                    slow = lift_trace(driver, lambda d: phone.slow_pull(d, rest=0))
                finally:
                    driver.quit()
        drags = [r for r in sent if all(s["phase"] == "drag" for s in r["samples"])]
        most = max(sum(1 for o in drags if o["sent"] <= r["sent"] < o["answered"]) for r in drags)
        row = {"inFlight": count, "labelLagMs": [round(label - crossing) for crossing, label, *_ in lags],
               "labelSentAfterMs": [round(past["sent"] - crossing) for crossing, _, past, *_ in lags],
               "mostOut": most, "sampleStallMaxMs": round(max(pull_stalls, default=0), 1),
               "releaseToRefreshingMs": slow["refreshingMs"], "releaseStallMs": slow["releaseStallMs"] or 0}
        print(json.dumps(row), flush=True)
        rows.append(row)
    return rows


def dumps(results):
    """Indented JSON, but every list of numbers (a figure's values, a trace's points) on one
    line."""
    text = json.dumps(results, indent=1)
    return re.sub(r"\[[\d\s.,\[\]-]*\]", lambda match: re.sub(r"\s+", "", match.group(0)), text)


def fmt(values):
    """Median and worst."""
    return f"{statistics.median(values):.0f}, {max(values):.0f}" if values else "–"


def report(results, path):
    lines = [f"# On a phone network, {results['date']}", "", f"`{results['command']}`", "",
             "Times in ms on the page's clock; RTT is the round trip the proxy adds. Pulls: "
             + ", ".join(f"{s} s" for s in pull_seconds(results["pulls"])) + " to travel 151 points.", ""]
    if results["pages"]:
        lines += ["| page | RTT | 'Release to refresh' after the crossing: median, worst | release → 'Refreshing', slow pull | flick | "
                  "flick: pulled down again after the lift (points) | short pull: first moves back / at rest after | first rows (median of 3) |",
                  "| --- | ---: | --- | ---: | ---: | ---: | ---: | --- |"]
        for name, rows in results["pages"].items():
            for row in rows:
                rtt = row["rtt"]
                rows_median = statistics.median(row["firstRowsMs"])
                in_rtt = f" = {rows_median / rtt:.1f} RTT" if rtt else ""
                lines.append(
                    f"| {name} | {rtt} | {fmt(row['labelLagMs'])} | "
                    f"{row['slow']['refreshingMs'] or 0:.0f} | {row['flick']['refreshingMs'] or 0:.0f} | "
                    f"{row['flick']['pulledDownAgain']:.0f} | {row['short']['startsBackMs'] or 0:.0f} / {row['short']['atRestMs'] or 0:.0f} | "
                    f"{rows_median:.0f}{in_rtt} |")
    if results.get("sweep"):
        lines += ["", f"Sample requests out at once, at {results['sweepRtt']} ms:", "",
                  "| MAX_IN_FLIGHT | most drag requests out | longest wait of a drag for a connection | 'Release to refresh' after the crossing: median, worst | its sample sent after: median, worst | let go while moving: release → 'Refreshing' (the release's wait for a connection) |",
                  "| ---: | ---: | ---: | --- | --- | ---: |"]
        for row in results["sweep"]:
            lines.append(f"| {row['inFlight']} | {row['mostOut']} | {row['sampleStallMaxMs']:.0f} | {fmt(row['labelLagMs'])} | "
                         f"{fmt(row['labelSentAfterMs'])} | {row['releaseToRefreshingMs'] or 0:.0f} ({row['releaseStallMs']:.0f}) |")
    path.write_text("\n".join(lines) + "\n")


def plot(results, path, rtt):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(8, 4.2))
    colors = {"before": "#9ca3af", "after": "#0a66d8"}
    for name, rows in results["pages"].items():
        row = next((r for r in rows if r["rtt"] == rtt), None)
        if row is None:
            continue
        times, offsets = zip(*row["flick"]["trace"])
        label = "the page at " + results["before"] if name == "before" else "this page"
        axis.plot(times, offsets, color=colors.get(name, "black"), label=label, linewidth=2)
        if row["flick"]["refreshingMs"] is not None:
            axis.axvline(row["flick"]["refreshingMs"], color=colors.get(name, "black"), linestyle=":", linewidth=1.2)
    axis.axvline(0, color="black", linewidth=0.8)
    axis.set_xlim(-100, 1400)
    axis.set_xlabel("ms after the finger lifts (dotted: 'Refreshing' shows)")
    axis.set_ylabel("list offset (points)")
    axis.set_title(f"A flick (180 points of travel in 100 ms), {rtt} ms round trip")
    axis.grid(alpha=0.3)
    axis.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=110)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rtts", default="0,50,150,300", help="round trips to add, in ms")
    parser.add_argument("--before", default="fa6543a", help="the revision whose page is 'before' ('' for none)")
    parser.add_argument("--in-flight", default="", help="also sweep MAX_IN_FLIGHT over these counts, at --sweep-rtt")
    parser.add_argument("--sweep-rtt", type=int, default=150)
    parser.add_argument("--pulls", type=int, default=8, help="pulls past the threshold and back, per page and round trip")
    parser.add_argument("--smoke", action="store_true", help="150 ms, this page, one of each")
    parser.add_argument("--out", default=str(ROOT / "bench" / "results"))
    parser.add_argument("--name", default="phone-network", help="the results are <date>-<name>.{json,md,png}")
    arguments = parser.parse_args()
    rtts = [150] if arguments.smoke else [int(r) for r in arguments.rtts.split(",") if r]
    pulls, navigations = (1, 1) if arguments.smoke else (arguments.pulls, 3)
    before = "" if arguments.smoke else arguments.before
    stamp = datetime.date.today().isoformat()
    results = {"date": stamp, "command": "python3 bench/phone-network.py " + " ".join(sys.argv[1:]), "pulls": pulls,
               "server": os.path.relpath(os.environ["REFRESH_SERVER"], ROOT) if "REFRESH_SERVER" in os.environ else "debug build",
               "before": before, "pages": {}}
    with tempfile.TemporaryDirectory() as scratch:
        pages = {"after": None}
        if before:
            pages = {"before": page_at(before, pathlib.Path(scratch)), **pages}
        for name, public in pages.items():
            results["pages"][name] = []
            for rtt in rtts:
                with phone.phone_server(rtt, public=public) as base:
                    row = measure(base, rtt, pulls, navigations)
                print(name, json.dumps({k: v for k, v in row.items() if k not in ("slow", "flick")}),
                      json.dumps({k: {x: y for x, y in row[k].items() if x != "trace"} for k in ("slow", "flick")}), flush=True)
                results["pages"][name].append(row)
    if arguments.in_flight:
        results["sweepRtt"] = arguments.sweep_rtt
        results["sweep"] = sweep([int(c) for c in arguments.in_flight.split(",")], arguments.sweep_rtt, pulls)
    if arguments.smoke:
        print("smoke: done")
        return
    out = pathlib.Path(arguments.out)
    out.mkdir(parents=True, exist_ok=True)
    name = f"{stamp}-{arguments.name}"
    (out / f"{name}.json").write_text(dumps(results) + "\n")
    report(results, out / f"{name}.md")
    print("report:", out / f"{name}.md")
    if results["pages"] and 150 in rtts:
        try:
            plot(results, out / f"{name}.png", 150)
            print("plot:", out / f"{name}.png")
        except ImportError:
            print("no plot: matplotlib is missing (python3 -m pip install matplotlib)")


if __name__ == "__main__":
    main()
