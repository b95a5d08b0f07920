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
                               ("p99us", "per stream p99", "µs"), ("serverCpuSeconds", "server CPU for all rounds", "s")):
        rows.append((f"F one batch to {count} streams, {label}", ours and ours.get(field), nchan and nchan.get(field), unit))
for count in sorted({run["streams"] for run in runs if run["mode"] == "memory"}):
    ours, nchan = find("ours", "memory", "streams", count), find("nchan", "memory", "streams", count)
    rows.append((f"M memory per idle stream, {count} streams", ours and ours["perStreamKiB"], nchan and nchan["perStreamKiB"], "KiB"))
for count in sorted({run["streams"] for run in runs if run["mode"] == "news"}):
    ours, nchan = find("ours", "news", "streams", count), find("nchan", "news", "streams", count)
    for field, label, unit in (("lastStreamMs", "time to the last stream", "ms"), ("p50us", "per stream p50", "µs"),
                               ("p99us", "per stream p99", "µs"), ("serverCpuPublishMs", "server CPU per publish", "ms")):
        rows.append((f"N one publish → news on {count} streams, {label}", ours and ours.get(field), nchan and nchan.get(field), unit))


def fmt(value):
    if value is None:
        return "—"
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
           "table": [{"figure": f, "ours": o, "nchan": n, "unit": u} for f, o, n, u in rows]},
          open(json_path, "w"), indent=2)

out = [f"Machine: {machine['cpus']} cores, {machine['cpu']}, Linux {machine['kernel']}; {build} build; loopback.", "",
       "| figure | swift-pull-to-refresh | nginx + nchan | ratio (ours / nchan) |", "| --- | ---: | ---: | ---: |"]
for figure, ours, nchan, unit in rows:
    ratio = f"{ours / nchan:.2f}" if isinstance(ours, (int, float)) and isinstance(nchan, (int, float)) and nchan else "—"
    out.append(f"| {figure} | {fmt(ours)} {unit} | {fmt(nchan)} {unit} | {ratio} |")
open(markdown_path, "w").write("\n".join(out) + "\n")
print(f"bench: {len(runs)} passed, 0 failed")
