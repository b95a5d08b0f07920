#!/usr/bin/env bash
# Runs every end-to-end script against the built server (or those named: `run.sh access
# feeds`, without the check that every kind of event was seen); prints one summary line.
set -uo pipefail
cd "$(dirname "$0")"
passed=0
failed=0
# Every event stream the scripts read is kept here, then validated against openapi.yaml.
export E2E_EVENTS
E2E_EVENTS=$(mktemp -d)
trap 'rm -rf "$E2E_EVENTS"' EXIT
scripts=(gesture.sh bottom.sh cancel.sh replay.sh news.sh feeds.sh changes.sh tabs.sh access.sh logs.sh metrics.sh config.sh gzip.sh bad-input.sh traversal.sh connection.sh slow-reader.sh limits.sh steering.sh shutdown.sh crash.sh security.sh client.sh insights.sh)
[ $# -gt 0 ] && scripts=("${@/%/.sh}")
for script in "${scripts[@]}"; do
    echo "== $script"
    if bash "$script"; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
done
if [ $# -eq 0 ]; then
    echo "== events.py"
    if python3 events.py "$E2E_EVENTS"; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
fi
echo "e2e: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
