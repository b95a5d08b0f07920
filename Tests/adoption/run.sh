#!/usr/bin/env bash
# What someone adopting the project relies on: the engine alone as a dependency, and its
# documentation.
set -uo pipefail
cd "$(dirname "$0")"
failed=0
for script in engine-only.sh docs.sh; do
    echo "== $script"
    bash "$script" || failed=$((failed + 1))
done
echo "adoption: $((2 - failed)) passed, $failed failed"
[ "$failed" -eq 0 ]
