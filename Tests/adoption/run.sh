#!/usr/bin/env bash
# What someone adopting the project relies on: the engine alone as a dependency, the client
# alone as one, their documentation, and the targets depending only the way
# docs/architecture.md ("Layout") says.
set -uo pipefail
cd "$(dirname "$0")"
failed=0
scripts=(engine-only.sh client-only.sh docs.sh target-edges.sh)
for script in "${scripts[@]}"; do
    echo "== $script"
    bash "$script" || failed=$((failed + 1))
done
echo "adoption: $((${#scripts[@]} - failed)) passed, $failed failed"
[ "$failed" -eq 0 ]
