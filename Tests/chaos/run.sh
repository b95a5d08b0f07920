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
export CHAOS_PROFILE=$profile
export CHAOS_RESULTS=${CHAOS_RESULTS:-${ARTIFACTS:-$PWD/../../artifacts}/chaos/results-$profile.jsonl}
mkdir -p "$(dirname "$CHAOS_RESULTS")"
: >"$CHAOS_RESULTS"
passed=0
failed=0
skipped=0
for scenario in "${scenarios[@]}"; do
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
