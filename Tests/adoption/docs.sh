#!/usr/bin/env bash
# The engine's DocC catalog compiles against the engine's symbols with no warning: every
# symbol link resolves, every article is reachable. Output goes to artifacts/docs/.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
symbols=$(mktemp -d /tmp/ptr-docs.XXXXXX)
trap 'rm -rf "$symbols"' EXIT
swiftc -emit-module -module-name RefreshEngine -parse-as-library -swift-version 6 \
    "$ROOT"/Sources/RefreshEngine/*.swift -emit-module-path "$symbols/RefreshEngine.swiftmodule" \
    -emit-symbol-graph -emit-symbol-graph-dir "$symbols"
mkdir -p "$ROOT/artifacts/docs"
docc convert "$ROOT/Sources/RefreshEngine/RefreshEngine.docc" --additional-symbol-graph-dir "$symbols" \
    --output-path "$ROOT/artifacts/docs/RefreshEngine.doccarchive" --fallback-display-name RefreshEngine \
    --fallback-bundle-identifier org.swift-pull-to-refresh.RefreshEngine --warnings-as-errors >/dev/null
echo "  ok   the RefreshEngine catalog builds without a warning"
echo "docs: 1 passed, 0 failed"
