#!/usr/bin/env bash
# The DocC catalogs compile against their modules' symbols with no warning: every symbol link
# resolves, every article is reachable. The engine's and the client's; the client article's
# model is the one its tests compile. Output goes to artifacts/docs/.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d /tmp/ptr-docs.XXXXXX)
trap 'rm -rf "$work"' EXIT
passed=0
mkdir -p "$ROOT/artifacts/docs"

# convert MODULE SYMBOL_DIR: the module's catalog, warnings as errors (printed when any).
convert() {
    docc convert "$ROOT/Sources/$1/$1.docc" --additional-symbol-graph-dir "$2" \
        --output-path "$ROOT/artifacts/docs/$1.doccarchive" --fallback-display-name "$1" \
        --fallback-bundle-identifier "org.swift-pull-to-refresh.$1" --warnings-as-errors >"$work/docc.log" 2>&1 ||
        { cat "$work/docc.log" >&2; exit 1; }
    echo "  ok   the $1 catalog builds without a warning"
    passed=$((passed + 1))
}

# The engine needs nothing but the standard library: swiftc alone, in seconds.
mkdir -p "$work/engine"
swiftc -emit-module -module-name RefreshEngine -parse-as-library -swift-version 6 \
    "$ROOT"/Sources/RefreshEngine/*.swift -emit-module-path "$work/engine/RefreshEngine.swiftmodule" \
    -emit-symbol-graph -emit-symbol-graph-dir "$work/engine"
convert RefreshEngine "$work/engine"

# The client needs its dependencies' modules: built with the `Client` trait alone in a build
# directory of its own, .build-docs (nothing of the server is resolved, the project's build is
# left alone, and the next run is incremental), every module's symbol graph emitted, and
# RefreshClient's own given to docc. A module an incremental build does not recompile keeps
# the graph its last compilation wrote.
mkdir -p "$work/client"
# RefreshClient's own symbols, compiled against the modules of the package's debug build
# (`swift build`, which CI has run by now: seconds); without one, a build of the client alone
# in a scratch path of its own (minutes the first time).
modules="$ROOT/.build/debug/Modules"
package=$(basename "$ROOT" | tr 'A-Z' 'a-z' | sed 's/[^a-z0-9_]/_/g')  # SwiftPM's -package-name for the root
if ! { [ -f "$modules/RefreshAPI.swiftmodule" ] &&
    swiftc -emit-module -module-name RefreshClient -parse-as-library -swift-version 6 -package-name "$package" \
        -I "$modules" $(find "$ROOT/Sources/RefreshClient" -name '*.swift') -emit-module-path "$work/client/RefreshClient.swiftmodule" \
        -emit-symbol-graph -emit-symbol-graph-dir "$work/client" >"$work/build.log" 2>&1; }; then
    graphs="$ROOT/.build-docs/symbol-graphs"
    mkdir -p "$graphs"
    swift build --package-path "$ROOT" --scratch-path "$ROOT/.build-docs" --traits Client --target RefreshClient -q \
        -Xswiftc -emit-symbol-graph -Xswiftc -emit-symbol-graph-dir -Xswiftc "$graphs" >"$work/build.log" 2>&1 ||
        { cat "$work/build.log" >&2; exit 1; }
    find "$graphs" -name 'RefreshClient.symbols.json' -o -name 'RefreshClient@*.symbols.json' | xargs -r cp -t "$work/client"
fi
[ -f "$work/client/RefreshClient.symbols.json" ] || { echo "  FAIL no symbol graph for RefreshClient" >&2; exit 1; }
convert RefreshClient "$work/client"

# The article's model, as printed, is the one Tests/RefreshClientPlatformTests compiles.
python3 - "$ROOT" <<'PY'
import sys
root = sys.argv[1]
article = open(f"{root}/Sources/RefreshClient/RefreshClient.docc/DrivingASessionFromAScrollView.md").read()
model = article.split("### Keep one model per list", 1)[1].split("```swift\n", 1)[1].split("```", 1)[0]
tested = open(f"{root}/Tests/RefreshClientPlatformTests/FeedModel.swift").read()
if model not in tested:
    sys.exit("  FAIL the article's FeedModel differs from Tests/RefreshClientPlatformTests/FeedModel.swift")
PY
echo "  ok   the client article's model is the one its tests compile"
passed=$((passed + 1))
echo "docs: $passed passed, 0 failed"
