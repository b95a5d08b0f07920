"""libFuzzer on the server's parsers, its connection layer, the tokens it verifies and the feed
patterns of access rights (Fuzz/run.sh): every target runs for a bounded time from the seed corpus and must find
no crash. A crash is any broken invariant of the target (a trap, a decoded value out of
range, a 5xx or a malformed response head, a connection that never ends, a feed pattern the
parser judges otherwise than the grammar); its input is kept in artifacts/fuzz/.

Figures: per target, the inputs executed and the coverage reached (libFuzzer's cov: and
ft:). FUZZ_BUILD_DIR and FUZZ_SANITIZERS pass through to run.sh.

The short profile runs the targets side by side (FUZZ_PARALLEL=1): CI waits for one target's
time instead of five, at the cost of sharing the cores among them; the full profile gives
each target the machine to itself, one after another. When run.sh built the targets while
the other scenarios ran, it says so in FUZZ_PREBUILT, and that build's time is a figure too."""
import os
import re
import subprocess

from lib import ROOT, check, figure, finish, pick

SECONDS = pick(30, 600)
TARGETS = ("samples", "bodies", "connection", "tokens", "access", "framing")

PARALLEL = pick("1", "0")

run = subprocess.run(["bash", str(ROOT / "Fuzz" / "run.sh"), str(SECONDS)], cwd=ROOT, text=True,
                     env={**os.environ, "FUZZ_PARALLEL": os.environ.get("FUZZ_PARALLEL", PARALLEL)},
                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
print("\n".join("  | " + line for line in run.stdout.splitlines()), flush=True)
check("the fuzz targets build", "fuzz: built in" in run.stdout, run.stdout[-2000:])
built = re.search(r"fuzz: built in (\d+)s", run.stdout)
if built:
    figure("fuzz build time", int(built.group(1)), "s")
prebuilt = re.search(r"fuzz: built in (\d+)s", os.environ.get("FUZZ_PREBUILT", ""))
if prebuilt:
    figure("fuzz build time beside the other scenarios, at the lowest priority", int(prebuilt.group(1)), "s")
for target in TARGETS:
    line = re.search(rf"^fuzz-{target}: runs=(\d+) exec/s=(\d+) cov: (\d+) ft: (\d+) corpus=(\d+)->(\d+) (.*)$",
                     run.stdout, re.MULTILINE)
    if not line:
        check(f"fuzz-{target} ran", False, "no result line")
        continue
    runs, speed, cov, ft, seeds, corpus, verdict = line.groups()
    check(f"fuzz-{target}: no crash in {runs} execs ({SECONDS} s)", verdict.startswith("no crash") and int(runs) > 0,
          verdict)
    figure(f"fuzz-{target} execs", int(runs))
    figure(f"fuzz-{target} execs per second", int(speed), "/s")
    figure(f"fuzz-{target} coverage cov", int(cov), "edges")
    figure(f"fuzz-{target} coverage ft", int(ft), "features")
    figure(f"fuzz-{target} corpus", int(corpus), "inputs")
check("Fuzz/run.sh exits 0", run.returncode == 0, f"exit {run.returncode}")
finish()
