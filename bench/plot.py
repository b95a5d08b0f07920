"""Draws the latency figures of a results JSON as a PNG next to it."""

import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

path = sys.argv[1]
results = json.load(open(path))
table = {row["figure"]: row for row in results["table"]}

latency = [f for f in table if (f.startswith("L1") or f.startswith("L2")) and ("p50" in f or "p99" in f)]
fanout = [f for f in table if (f.startswith("F ") or f.startswith("N ") or f.startswith("E ")) and "last stream" in f]

figure, (left, right) = plt.subplots(1, 2, figsize=(13, 5.5), gridspec_kw={"width_ratios": [3, 1.3]})
for axis, names, unit in ((left, latency, "µs"), (right, fanout, "ms")):
    positions = range(len(names))
    ours = [table[n]["ours"] or 0 for n in names]
    nchan = [table[n]["nchan"] or 0 for n in names]
    axis.bar([p - 0.2 for p in positions], ours, width=0.4, label="swift-pull-to-refresh", color="#0a66d8")
    axis.bar([p + 0.2 for p in positions], nchan, width=0.4, label="nginx + nchan", color="#9ca3af")
    axis.set_xticks(list(positions))
    axis.set_xticklabels([n.replace("POST → SSE event, one stream, ", "").replace(" at 60 Hz", "").replace("one batch to ", "").replace("one publish → news on ", "").replace("one edit of an item ", "edit, ").replace(" pages show → changes on each", "").replace(", time to the last stream", "") for n in names],
                         rotation=30, ha="right", fontsize=8)
    axis.set_ylabel(unit)
    axis.set_yscale("log")
    axis.grid(axis="y", alpha=0.3)
left.set_title("Sample posted → its state event read (lower is better)")
right.set_title("F: one batch, N: one news, E: one edit → the last stream has it")
left.legend()
figure.tight_layout()
figure.savefig(path.replace(".json", ".png"), dpi=110)
print("plot:", path.replace(".json", ".png"))
