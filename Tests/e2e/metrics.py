"""Checks two scrapes of GET /metrics with Prometheus's own Python parser.

    python3 metrics.py BEFORE AFTER LIVE REPLAY DRAG

BEFORE and AFTER are scrapes around what metrics.sh did; LIVE is the event stream that
watched it all, REPLAY the stream that reconnected with Last-Event-ID: 0; DRAG the number of
samples dragged. Prints one line per check, "description|actual|expected", for metrics.sh to
count; exits non-zero when a scrape does not parse.
"""

import sys

from prometheus_client.parser import text_string_to_metric_families


def parse(path):
    """Every sample by (name, sorted labels), and every family's type."""
    with open(path) as file:
        text = file.read()
    values, types = {}, {}
    for family in text_string_to_metric_families(text):
        types[family.name] = family.type
        for sample in family.samples:
            values[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return values, types


def ids(path):
    """The ids of the events in a captured stream, in order."""
    with open(path) as file:
        blocks = file.read().split("\n\n")
    found = []
    for block in blocks:
        fields = dict(line.split(": ", 1) for line in block.split("\n") if ": " in line and not line.startswith(":"))
        if "event" in fields and "id" in fields:
            found.append(int(fields["id"]))
    return found


def skipped(cursor, received):
    """Events a stream never got after `cursor`: ids are dense, so each missing one was coalesced."""
    return (received[-1] - cursor) - len(received) if received else 0


def main():
    before_path, after_path, live_path, replay_path, drag = sys.argv[1:6]
    drag = int(drag)
    before, _ = parse(before_path)
    after, types = parse(after_path)

    def moved(name, **labels):
        key = (name, tuple(sorted(labels.items())))
        return after.get(key, 0) - before.get(key, 0)

    def check(description, actual, expected):
        print(f"{description}|{actual:g}|{expected:g}")

    def requests(route, status):
        return moved("ptr_http_requests_total", route=route, status=str(status))

    for family, kind in [
        ("ptr_http_requests", "counter"),
        ("ptr_sessions", "gauge"),
        ("ptr_open_streams", "gauge"),
        ("ptr_sample_write_seconds", "histogram"),
        ("ptr_news_fanout_seconds", "histogram"),
        ("ptr_notification_reconnects", "counter"),
    ]:
        print(f"{family} is a {kind}|{1 if types.get(family) == kind else 0}|1")

    live = ids(live_path)
    replay = ids(replay_path)
    check("sessions created", requests("/api/sessions", 201), 1)
    check("streams opened: live, replay, reset", requests("/api/sessions/{id}/events", 200), 3)
    check("samples answered", requests("/api/sessions/{id}/samples", 200), drag + 1)
    check("samples applied", moved("ptr_samples_applied_total"), drag)
    check("samples ignored for an old seq", moved("ptr_samples_ignored_total"), 1)
    check("sample latencies observed", moved("ptr_sample_write_seconds_count"), drag)
    check("sample latencies in +Inf", moved("ptr_sample_write_seconds_bucket", le="+Inf"), drag)
    check("refreshes asked", requests("/api/sessions/{id}/refresh", 202), 1)
    check("refreshes completed", moved("ptr_actions_total", kind="refresh", outcome="completed"), 1)
    check("feed updates completed", moved("ptr_feed_updates_total", outcome="completed"), 1)
    check("items published", requests("/api/items", 201), 1)
    check("news fan-outs: the head first learnt, then the publish", moved("ptr_news_fanout_seconds_count"), 2)
    check("replay hits", moved("ptr_replay_hits_total"), 1)
    check("replay misses", moved("ptr_replay_misses_total"), 1)
    check("gap resets", moved("ptr_resets_total", cause="gap"), 1)
    check(
        "coalesced events: what the live and the replayed streams skipped",
        moved("ptr_events_coalesced_total"),
        skipped(live[0], live[1:]) + skipped(0, replay),
    )
    check("bad input refused", moved("ptr_sample_requests_refused_total", reason="bad_input"), 1)
    check("unknown session refused", moved("ptr_sample_requests_refused_total", reason="unknown_session"), 1)
    check("out of range refused", moved("ptr_sample_requests_refused_total", reason="out_of_range"), 1)
    check("samples 400", requests("/api/sessions/{id}/samples", 400), 1)
    check("samples 404", requests("/api/sessions/{id}/samples", 404), 1)
    check("samples 422", requests("/api/sessions/{id}/samples", 422), 1)
    check("unknown paths under one label", requests("other", 404), 1)
    check("the first scrape counted", requests("/metrics", 200), 1)
    check("store errors", moved("ptr_store_errors_total", operation="read"), 0)
    check("sessions now", after.get(("ptr_sessions", ()), -1), 1)
    raw = [labels for (_, labels) in after if any("/api/sessions/" in value and "{id}" not in value for _, value in labels)]
    check("no raw session path is a label", len(raw), 0)


if __name__ == "__main__":
    main()
