#!/usr/bin/env bash
# The fault and abuse harness. Each scenario is a Python program that starts its own
# servers, does something hostile, and checks invariants; it exits non-zero when one
# breaks. Every figure goes to artifacts/chaos/results-PROFILE.jsonl, one JSON object per line,
# and a table of them is printed at the end.
#
#   bash Tests/chaos/run.sh                     every scenario, the short profile (CI)
#   bash Tests/chaos/run.sh --profile full      every scenario with the larger numbers
#   bash Tests/chaos/run.sh http_abuse kill9    only these
#
# REFRESH_SERVER picks the server binary (default: the release build, then the debug one).
# PTR_TEST_POSTGRES=postgres://… makes the PostgreSQL scenarios use that server; without
# it they start a throwaway one through scripts/postgres.
set -uo pipefail
cd "$(dirname "$0")"
[ -x ../../.venv/bin/python3 ] && export PATH="$(cd ../.. && pwd)/.venv/bin:$PATH"
profile=short
scenarios=()
while (($#)); do
    case "$1" in
    --profile) profile=$2; shift 2 ;;
    --profile=*) profile=${1#*=}; shift ;;
    *) scenarios+=("${1%.py}"); shift ;;
    esac
done
if ((${#scenarios[@]} == 0)); then
    scenarios=($(ls scenario_*.py | sed 's/^scenario_//; s/\.py$//'))
fi
# The fuzz targets' instrumented build takes minutes and waits on nothing: when fuzz runs
# with other scenarios, it builds at the lowest priority while they run (taking the CPU
# they leave), and fuzz runs last, its own build then incremental.
prebuild=""
if ((${#scenarios[@]} > 1)) && [[ " ${scenarios[*]} " == *" fuzz "* ]]; then
    scenarios=($(printf '%s\n' "${scenarios[@]}" | grep -vx fuzz) fuzz)
    mkdir -p ../../artifacts/fuzz
    FUZZ_BUILD_ONLY=1 setsid nice -n 19 bash ../../Fuzz/run.sh >../../artifacts/fuzz/prebuild.log 2>&1 &
    prebuild=$!
    trap '[ -n "$prebuild" ] && kill -- -"$prebuild" 2>/dev/null' EXIT
fi
export CHAOS_PROFILE=$profile
export CHAOS_RESULTS=${CHAOS_RESULTS:-${ARTIFACTS:-$PWD/../../artifacts}/chaos/results-$profile.jsonl}
mkdir -p "$(dirname "$CHAOS_RESULTS")"
: >"$CHAOS_RESULTS"
passed=0
failed=0
skipped=0
for scenario in "${scenarios[@]}"; do
    if [ "$scenario" = fuzz ] && [ -n "$prebuild" ]; then
        wait "$prebuild"
        prebuild=""
        FUZZ_PREBUILT=$(tail -n1 ../../artifacts/fuzz/prebuild.log)
        export FUZZ_PREBUILT
        echo "== the fuzz targets, built while the scenarios above ran: $FUZZ_PREBUILT"
    fi
    echo "== chaos: $scenario ($profile)"
    python3 "scenario_$scenario.py"
    case $? in
    0) passed=$((passed + 1)) ;;
    77) skipped=$((skipped + 1)); echo "  SKIP scenario $scenario" >&2 ;;
    *) failed=$((failed + 1)); echo "  FAIL scenario $scenario" >&2 ;;
    esac
done
python3 lib.py table
echo "chaos: $passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
