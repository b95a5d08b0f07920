"""Turns the benchmark's JSON lines into results JSON and a Markdown table with ratios."""

import json
import platform
import subprocess
import sys

lines, json_path, markdown_path, build = sys.argv[1:5]
runs = [json.loads(line) for line in open(lines)]


def find(kind, mode, key, value=None):
    for run in runs:
        if run["kind"] == kind and run["mode"] == mode and (key is None or run.get(key) == value):
            return run
    return None


rows = []  # (figure, ours, nchan, unit)
for mode, key in (("l1", None),):
    ours, nchan = find("ours", mode, key), find("nchan", mode, key)
    if not ours and not nchan:
        continue
    for field, label in (("p50us", "p50"), ("p99us", "p99"), ("maxUs", "max"), ("serverCpuPerSampleUs", "server CPU per sample")):
        rows.append((f"L1 POST → SSE event, one stream, {label}", ours and ours.get(field), nchan and nchan.get(field), "µs"))
for count in sorted({run["sessions"] for run in runs if run["mode"] == "l2"}):
    ours, nchan = find("ours", "l2", "sessions", count), find("nchan", "l2", "sessions", count)
    for field, label, unit in (("p50us", "p50", "µs"), ("p99us", "p99", "µs"), ("samplesPerSecond", "samples/s", "/s"),
                               ("serverCpuPercent", "server CPU", "%"), ("serverCpuPerSampleUs", "server CPU per sample", "µs")):
        rows.append((f"L2 {count} sessions at 60 Hz, {label}", ours and ours.get(field), nchan and nchan.get(field), unit))
for count in sorted({run["streams"] for run in runs if run["mode"] == "fanout"}):
    ours, nchan = find("ours", "fanout", "streams", count), find("nchan", "fanout", "streams", count)
    for field, label, unit in (("lastStreamMs", "time to the last stream", "ms"), ("p50us", "per stream p50", "µs"),
                               ("p99us", "per stream p99", "µs"), ("serverCpuRoundMs", "server CPU per batch", "ms"),
                               ("serverCpuOpeningMs", "server CPU to open the streams", "ms"),
                               ("serverCpuSeconds", "server CPU for the whole run", "s")):
        rows.append((f"F one batch to {count} streams, {label}", ours and ours.get(field), nchan and nchan.get(field), unit))
for count in sorted({run["streams"] for run in runs if run["mode"] == "memory"}):
    ours, nchan = find("ours", "memory", "streams", count), find("nchan", "memory", "streams", count)
    rows.append((f"M memory per idle stream, {count} streams", ours and ours["perStreamKiB"], nchan and nchan["perStreamKiB"], "KiB"))
for count in sorted({run["streams"] for run in runs if run["mode"] == "news" and run["kind"] in ("ours", "nchan")}):
    ours, nchan = find("ours", "news", "streams", count), find("nchan", "news", "streams", count)
    for field, label, unit in (("lastStreamMs", "time to the last stream", "ms"), ("p50us", "per stream p50", "µs"),
                               ("p99us", "per stream p99", "µs"), ("serverCpuPublishMs", "server CPU per publish", "ms")):
        rows.append((f"N one publish → news on {count} streams, {label}", ours and ours.get(field), nchan and nchan.get(field), unit))
for count in sorted({run["streams"] for run in runs if run["mode"] == "edit"}):
    ours, nchan = find("ours", "edit", "streams", count), find("nchan", "edit", "streams", count)
    for field, label, unit in (("lastStreamMs", "time to the last stream", "ms"), ("p50us", "per stream p50", "µs"),
                               ("p99us", "per stream p99", "µs"), ("serverCpuPublishMs", "server CPU per edit", "ms")):
        rows.append((f"E one edit of an item {count} pages show → changes on each, {label}", ours and ours.get(field),
                     nchan and nchan.get(field), unit))

# A publish to a feed of one session, on a server with nothing else and beside a crowd of
# another feed's streams: ours against itself.
isolation_rows = []  # (figure, alone, beside, unit)
for count in sorted({run["streams"] for run in runs if run["mode"] == "isolation"}):
    run = find("ours", "isolation", "streams", count)
    prefix = f"I one publish to a feed of one session, beside {count:,} streams of another feed"
    isolation_rows.append((f"{prefix}: time to its news", run.get("aloneMs"), run.get("besideMs"), "ms"))
    isolation_rows.append((f"{prefix}: server CPU for it", run.get("aloneCpuMs"), run.get("besideCpuMs"), "ms"))
    isolation_rows.append((f"{prefix}: streams of the other feed told of it", None, run.get("crowdStreamsThatHeard"), ""))

# A sample with and without --auth-key: medians of the interleaved rounds.
def median(values):
    values = sorted(v for v in values if isinstance(v, (int, float)))
    return values[len(values) // 2] if values else None


auth_rows = []  # (figure, without, with, unit)
auth_runs = {kind: [run for run in runs if run["kind"] == kind and run["mode"] == "l1"] for kind in ("auth-off", "auth-on")}
if auth_runs["auth-off"] and auth_runs["auth-on"]:
    rounds = min(len(auth_runs["auth-off"]), len(auth_runs["auth-on"]))
    for field, label in (("serverCpuPerSampleUs", "server CPU per sample"), ("p50us", "p50"), ("p99us", "p99")):
        auth_rows.append((f"A L1, one stream, {label} (median of {rounds} rounds)",
                          median(run.get(field) for run in auth_runs["auth-off"]),
                          median(run.get(field) for run in auth_runs["auth-on"]), "µs"))

# The cluster figures: three instances on PostgreSQL against one on SQLite, same parameters.
cluster_rows = []  # (figure, cluster, sqlite, unit)
for count in sorted({run["streams"] for run in runs if run["mode"] == "news" and run["kind"] in ("cluster", "sqlite")}):
    cluster, sqlite = find("cluster", "news", "streams", count), find("sqlite", "news", "streams", count)
    for field, label, unit in (("lastStreamMs", "time to the last stream", "ms"), ("p50us", "per stream p50", "µs"),
                               ("p99us", "per stream p99", "µs"),
                               ("otherTargetsLastStreamMs", "time to the last stream of instances 2 and 3", "ms"),
                               ("otherTargetsP99us", "per stream p99 on instances 2 and 3", "µs"),
                               ("serverCpuPublishMs", "instances' CPU per publish", "ms"),
                               ("databaseCpuPublishMs", "PostgreSQL's CPU per publish", "ms"),
                               ("totalCpuPublishMs", "all CPU per publish", "ms")):
        values = [run and run.get(field) for run in (cluster, sqlite)]
        if field == "totalCpuPublishMs" and sqlite:
            values[1] = sqlite.get("serverCpuPublishMs")  # SQLite works inside the instance
        cluster_rows.append((f"C1 one publish on instance 1 → news on {count} sessions, {label}", *values, unit))


def rate_key(run):
    return run["streams"], run["publishers"], run["seconds"], run.get("feeds", 1)


for key in sorted({rate_key(run) for run in runs if run["mode"] == "publish-rate"}):
    cluster, sqlite = (next((run for run in runs if run["mode"] == "publish-rate" and run["kind"] == kind
                             and rate_key(run) == key), None) for kind in ("cluster", "sqlite"))
    heads = [run and f"{run['streamsAtFinalHead']:,} of {run['streams']:,}" for run in (cluster, sqlite)]
    streams, publishers, seconds, feeds = key
    on = f" on {feeds} feeds" if feeds > 1 else ""
    prefix = f"C2 {publishers} publishers{on} for {seconds:g} s, {streams:,} sessions listening"
    cluster_rows.append((f"{prefix}, publishes/s answered 201", cluster and cluster["publishesPerSecond"],
                         sqlite and sqlite["publishesPerSecond"], "/s"))
    for field, label, unit in (("p50us", "publish p50", "µs"), ("p99us", "publish p99", "µs"),
                               ("lastStreamMs", "last stream told the final head, after the last 201", "ms"),
                               ("serverCpuPerPublishUs", "instances' CPU per publish", "µs"),
                               ("databaseCpuPerPublishUs", "PostgreSQL's CPU per publish", "µs"),
                               ("totalCpuPerPublishUs", "all CPU per publish", "µs")):
        values = [run and run.get(field) for run in (cluster, sqlite)]
        if field == "totalCpuPerPublishUs" and sqlite:
            values[1] = sqlite.get("serverCpuPerPublishUs")
        cluster_rows.append((f"{prefix}, {label}", *values, unit))
    cluster_rows.append((f"{prefix}, streams told the final head (nothing lost)", *heads, ""))


def fmt(value):
    if value is None:
        return "—"
    if isinstance(value, str):
        return value
    if isinstance(value, float):
        return f"{value:,.1f}" if value >= 10 else f"{value:.2f}"
    return f"{value:,}"


machine = {
    "cpus": subprocess.run(["nproc"], capture_output=True, text=True).stdout.strip(),
    "kernel": platform.release(),
    "cpu": next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")), "?"),
    "build": build,
}
json.dump({"machine": machine, "runs": runs,
           "table": [{"figure": f, "ours": o, "nchan": n, "unit": u} for f, o, n, u in rows],
           "isolationTable": [{"figure": f, "alone": a, "beside": b, "unit": u} for f, a, b, u in isolation_rows],
           "authTable": [{"figure": f, "without": a, "with": b, "unit": u} for f, a, b, u in auth_rows],
           "clusterTable": [{"figure": f, "cluster": c, "sqlite": s, "unit": u} for f, c, s, u in cluster_rows]},
          open(json_path, "w"), indent=2)


def ratio(a, b):
    numbers = isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool)
    return f"{a / b:.2f}" if numbers and b else "—"


out = [f"Machine: {machine['cpus']} cores, {machine['cpu']}, Linux {machine['kernel']}; {build} build; loopback."]
if rows:
    out += ["", "| figure | swift-pull-to-refresh | nginx + nchan | ratio (ours / nchan) |", "| --- | ---: | ---: | ---: |"]
    for figure, ours, nchan, unit in rows:
        out.append(f"| {figure} | {fmt(ours)} {unit} | {fmt(nchan)} {unit} | {ratio(ours, nchan)} |")
if isolation_rows:
    out += ["", "| figure | alone on the server | beside the crowd | ratio (beside / alone) |", "| --- | ---: | ---: | ---: |"]
    for figure, alone, beside, unit in isolation_rows:
        out.append(f"| {figure} | {fmt(alone)} {unit} | {fmt(beside)} {unit} | {ratio(beside, alone)} |".replace("  |", " |"))
if auth_rows:
    out += ["", "| figure | without --auth-key | with --auth-key, a private feed's session | ratio (with / without) |",
            "| --- | ---: | ---: | ---: |"]
    for figure, without, with_key, unit in auth_rows:
        out.append(f"| {figure} | {fmt(without)} {unit} | {fmt(with_key)} {unit} | {ratio(with_key, without)} |")
if cluster_rows:
    out += ["", "| figure | three instances, PostgreSQL | one instance, SQLite | ratio (cluster / SQLite) |",
            "| --- | ---: | ---: | ---: |"]
    for figure, cluster, sqlite, unit in cluster_rows:
        out.append(f"| {figure} | {fmt(cluster)} {unit} | {fmt(sqlite)} {unit} | {ratio(cluster, sqlite)} |".replace("  |", " |"))
open(markdown_path, "w").write("\n".join(out) + "\n")
print(f"bench: {len(runs)} passed, 0 failed")
