#!/usr/bin/env bash
# Builds the libFuzzer targets and runs each for a bounded time; exits non-zero if any
# found a crash (its input lands in artifacts/fuzz/). Usage:
#
#   bash Fuzz/run.sh [seconds-per-target]            # default 60
#
# Environment:
#   FUZZ_BUILD_DIR      scratch path (default: .build-fuzz in the repository)
#   FUZZ_SANITIZERS     what -sanitize= gets (default: fuzzer,address; "fuzzer" builds faster)
#   FUZZ_TARGETS        which targets (default: "samples bodies connection tokens access framing")
#   FUZZ_UPDATE_CORPUS  1: merge the new inputs into Fuzz/corpus/ (otherwise a copy is fuzzed)
#   FUZZ_ARGS           more libFuzzer flags, e.g. "-jobs=2"
#   FUZZ_PARALLEL       1: the targets run side by side for the seconds given, not one after
#                       another (the wall time of one target instead of all; each gets its
#                       share of the cores, so fewer runs on a machine with fewer cores than targets)
#   FUZZ_BUILD_ONLY     1: build the targets and stop (a later run then pays only the
#                       incremental build)
#
# Prints one line per target, in the order of FUZZ_TARGETS: runs executed, coverage (cov: /
# ft:), corpus size, verdict. Each target's libFuzzer output is in artifacts/fuzz/TARGET.log.
set -uo pipefail
# The Swift runtime's own crash reporter would race ASan's and can hang: libFuzzer reports.
export SWIFT_BACKTRACE=enable=no
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(dirname "$here")"
seconds="${1:-60}"
build="${FUZZ_BUILD_DIR:-$repo/.build-fuzz}"
sanitizers="${FUZZ_SANITIZERS:-fuzzer,address}"
targets="${FUZZ_TARGETS:-samples bodies connection tokens access framing}"
artifacts="$repo/artifacts/fuzz"
mkdir -p "$artifacts"

log="$artifacts/build.log"
started=$(date +%s)
# Package.swift reads FUZZ_SANITIZERS: only the project's modules and the targets are
# instrumented, the dependencies are built as they are.
export FUZZ_SANITIZERS="$sanitizers"
build_target() {
    swift build -c debug --package-path "$here" --scratch-path "$build" "$@"
}
build_all() {
    if [ "$targets" = "samples bodies connection tokens access framing" ]; then build_target; return; fi
    for target in $targets; do build_target --product "fuzz-$target" || return 1; done
}
if ! build_all >"$log" 2>&1; then
    tail -40 "$log"
    echo "fuzz: build failed (log: $log)"
    exit 2
fi
echo "fuzz: built in $(( $(date +%s) - started ))s ($build, -sanitize=$sanitizers)"
[ "${FUZZ_BUILD_ONLY:-0}" = 1 ] && exit 0
bin="$(build_target --show-bin-path 2>/dev/null)"

work="$(mktemp -d /tmp/ptr-fuzz.XXXXXX)"
trap 'rm -rf "$work"' EXIT
# fuzz TARGET: fuzzes TARGET for the given seconds and prints its result line (and, after a
# crash, the line that says why first); exits 1 if it crashed.
fuzz() {
    local target=$1
    local corpus="$work/$target"
    mkdir -p "$corpus"
    cp "$here/corpus/$target/"* "$corpus/" 2>/dev/null || true
    local seeds
    seeds=$(ls "$corpus" | wc -l)
    local dict="$here/dictionaries/json.dict"
    [ "$target" = connection ] || [ "$target" = framing ] && dict="$here/dictionaries/http.dict"
    [ "$target" = access ] && dict="$here/dictionaries/access.dict"
    [ "$target" = tokens ] && dict="$here/dictionaries/tokens.dict"
    local output="$artifacts/$target.log"
    # The connection target runs tasks on threads, so its coverage varies run to run and
    # LeakSanitizer would rescan the heap after almost every input: a 5x slowdown.
    local leaks=1
    [ "$target" = connection ] && leaks=0
    # shellcheck disable=SC2086
    "$bin/fuzz-$target" "$corpus" -max_total_time="$seconds" -timeout=5 -rss_limit_mb=2048 \
        -dict="$dict" -artifact_prefix="$artifacts/$target-" -print_final_stats=1 -detect_leaks=$leaks ${FUZZ_ARGS:-} >"$output" 2>&1
    local status=$?
    local runs coverage speed size verdict crash crashed=0
    runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$output" | grep -o '[0-9]*$' | tail -1)
    if [ -z "$runs" ]; then runs=$(grep -oE '^#[0-9]+' "$output" | tail -1 | tr -d '#'); fi
    coverage=$(grep -oE 'cov: [0-9]+ ft: [0-9]+' "$output" | tail -1)
    speed=$(grep -oE 'exec/s: [0-9]+' "$output" | tail -1 | grep -oE '[0-9]+')
    size=$(ls "$corpus" | wc -l)
    if [ "$status" -eq 0 ]; then
        verdict="no crash in ${runs:-0} execs"
    else
        crashed=1
        crash=$(grep -oE "Test unit written to [^ ]+" "$output" | tail -1 | sed 's/Test unit written to //')
        verdict="CRASH (exit $status) after ${runs:-?} execs: ${crash:-see $output}"
        grep -m1 -E "invariant broken|Fatal error|ERROR: (libFuzzer|AddressSanitizer)" "$output" | cut -c1-400
    fi
    echo "fuzz-$target: runs=${runs:-0} exec/s=${speed:-0} ${coverage:-cov: 0 ft: 0} corpus=$seeds->$size $verdict"
    if [ "${FUZZ_UPDATE_CORPUS:-0}" = 1 ]; then
        "$bin/fuzz-$target" -merge=1 "$here/corpus/$target" "$corpus" >>"$output" 2>&1
        echo "fuzz-$target: corpus in the repository now $(ls "$here/corpus/$target" | wc -l) files"
    fi
    return $crashed
}

failed=0
if [ "${FUZZ_PARALLEL:-0}" = 1 ]; then
    # Side by side: each target's lines go to a file of its own, printed in order once all
    # have ended, so the output reads as it does one after another.
    pids=()
    for target in $targets; do
        fuzz "$target" >"$work/$target.result" 2>&1 &
        pids+=($!)
    done
    for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
    for target in $targets; do cat "$work/$target.result"; done
else
    for target in $targets; do fuzz "$target" || failed=1; done
fi
exit $failed
