#!/usr/bin/env bash
# What someone adopting the project relies on: the engine alone as a dependency, its
# documentation, and the targets depending only the way SPEC.md "Modules" says.
set -uo pipefail
cd "$(dirname "$0")"
failed=0
for script in engine-only.sh docs.sh target-edges.sh; do
    echo "== $script"
    bash "$script" || failed=$((failed + 1))
done
echo "adoption: $((3 - failed)) passed, $failed failed"
[ "$failed" -eq 0 ]
