#!/usr/bin/env bash
# A Swift app that embeds only the gesture engine: a scratch package outside the repository
# depends on this one with its `Server` trait off, builds, drives a pull to a refresh, and
# resolves no package but this one (no Hummingbird, NIO, GRDB, PostgresNIO…).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
app=$(mktemp -d /tmp/ptr-engine-only.XXXXXX)
trap 'rm -rf "$app"' EXIT
mkdir -p "$app/Sources/PullDemo"
cat >"$app/Package.swift" <<SWIFT
// swift-tools-version: 6.2
import PackageDescription

let package = Package(
    name: "PullDemo",
    platforms: [.macOS(.v15)],
    dependencies: [.package(path: "$ROOT", traits: [])],
    targets: [
        .executableTarget(
            name: "PullDemo",
            dependencies: [.product(name: "RefreshEngine", package: "$(basename "$ROOT")")]
        )
    ]
)
SWIFT
cat >"$app/Sources/PullDemo/main.swift" <<'SWIFT'
import RefreshEngine

// A pull past the threshold and a release, as a scroll view would report them.
var engine = RefreshEngine(config: Preset.standard.config)
var started: Job?
for (seq, y) in [-20.0, -60, -90].enumerated() {
    _ = try engine.sampleReceived(Sample(seq: seq + 1, y: y, contentHeight: 2000, viewportHeight: 800))
}
let armed = engine.gestureState.phase
let release = try engine.sampleReceived(Sample(seq: 4, y: -90, phase: .release, contentHeight: 2000, viewportHeight: 800))
started = release.start
// The finger lifts: the list springs back, the indicator stays held while refreshing.
_ = try engine.sampleReceived(Sample(seq: 5, y: 0, phase: .scroll, contentHeight: 2000, viewportHeight: 800))
print("armed: \(armed), started: \(started.map { "\($0.kind)" } ?? "nothing"), held: \(engine.gestureState.indicatorOffset)")
SWIFT
cd "$app"
swift build -q 2>&1 | grep -v "^warning: " || true
output=$(swift run -q PullDemo)
echo "$output"
dependencies=$(swift package show-dependencies --format json)
failed=0
expect() { if [ "$2" = "$3" ]; then echo "  ok   $1"; else echo "  FAIL $1: got '$2', expected '$3'" >&2; failed=1; fi; }
expect "the engine drives a pull to a refresh" "$output" "armed: armed, started: refresh, held: 50.0"
others=$(printf '%s' "$dependencies" | python3 -c '
import json, sys
def walk(node):
    for child in node.get("dependencies", []):
        yield child["identity"]
        yield from walk(child)
print(" ".join(sorted(set(walk(json.load(sys.stdin))) - {sys.argv[1]})))' "$(basename "$ROOT" | tr 'A-Z' 'a-z')")
expect "no package resolved but the engine's own" "$others" ""
[ "$failed" -eq 0 ] && echo "engine-only: 2 passed, 0 failed"
exit "$failed"
