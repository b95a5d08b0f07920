#!/usr/bin/env bash
# The direction the package's targets may depend in (docs/architecture.md, "Layout"), held against what
# `swift package dump-package` declares: a target that gains a forbidden dependency, directly
# or through another of the package's targets, fails here. Usage:
#
#   bash Tests/adoption/target-edges.sh [manifest.json]   # default: dump-package's output
#
# A row names a target and what it must never reach; "*" means nothing at all. A row whose
# target the package does not have (yet) is skipped and said so.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d /tmp/ptr-target-edges.XXXXXX)
trap 'rm -rf "$work"' EXIT
manifest="$work/manifest.json"
if [ $# -ge 1 ]; then
    cp "$1" "$manifest"
else
    # A scratch path of its own: reading the manifest needs no build, nor to wait for one.
    swift package --package-path "$ROOT" --scratch-path "$work/scratch" dump-package >"$manifest"
fi
python3 - "$manifest" <<'PY'
import json
import sys

HTTP_SERVING = ["Hummingbird", "HummingbirdCore", "HummingbirdTesting", "HTTPTypes", "NIOHTTPTypesHTTP1", "NIOHTTPTypes"]
SERVER_SIDE = [
    "RefreshJSON", "RefreshFeed", "RefreshHTTP", "RefreshServer", "Hummingbird", "HummingbirdCore", "GRDB", "PostgresNIO",
    "JWTKit", "Metrics", "Prometheus", "Configuration", "CompressNIO",
]
FORBIDDEN = {
    "RefreshEngine": ["*"],
    "RefreshJSON": ["RefreshEngine", "RefreshFeed", "RefreshHTTP", "RefreshServer", *HTTP_SERVING],
    "RefreshFeed": ["RefreshEngine", "RefreshHTTP", "RefreshServer", *HTTP_SERVING, "Metrics", "Prometheus", "Configuration"],
    # HTTPTypes is allowed: the currency type of a response head (Package.swift says why).
    "RefreshHTTP": [
        "RefreshEngine", "RefreshJSON", "RefreshFeed", "RefreshServer", "Hummingbird", "HummingbirdCore", "HummingbirdTesting",
        "ServiceLifecycle", "GRDB", "PostgresNIO", "AsyncHTTPClient",
    ],
    "refresh-bench": ["RefreshEngine", "RefreshJSON", "RefreshFeed", "RefreshHTTP", "RefreshServer"],
    # The Swift client for apps, its typed API and its tool: no server target, no server library.
    "RefreshAPI": SERVER_SIDE,
    "RefreshClient": SERVER_SIDE,
    "refresh-client": SERVER_SIDE,
    "RefreshFeedTests": ["RefreshEngine", "RefreshHTTP", "RefreshServer", *HTTP_SERVING],
    "RefreshHTTPTests": ["RefreshEngine", "RefreshJSON", "RefreshFeed", "RefreshServer", "Hummingbird", "HummingbirdCore"],
}

package = json.load(open(sys.argv[1]))
targets = {target["name"]: target for target in package["targets"]}


def direct(target):
    """The names a target depends on: the package's own targets and other packages' products."""
    names = []
    for dependency in target.get("dependencies", []):
        for kind in ("byName", "target", "product"):
            if kind in dependency:
                names.append(dependency[kind][0])
    return names


def reach(name):
    """Every name reachable from a target through the package's own targets, with the path."""
    paths, stack = {}, [(name, [name])]
    while stack:
        current, path = stack.pop()
        for dependency in direct(targets[current]):
            if dependency in paths:
                continue
            paths[dependency] = path + [dependency]
            if dependency in targets:
                stack.append((dependency, path + [dependency]))
    return paths


failures = 0
for name, forbidden in FORBIDDEN.items():
    if name not in targets:
        print(f"target-edges: {name}: not in the package, skipped")
        continue
    reached = reach(name)
    bad = sorted(reached) if forbidden == ["*"] else sorted(set(forbidden) & set(reached))
    for dependency in bad:
        failures += 1
        print(f"target-edges: {name} must not depend on {dependency}: {' -> '.join(reached[dependency])}")
    if not bad:
        print(f"target-edges: {name}: ok ({len(reached)} reached, none forbidden)")
print(f"target-edges: {failures} forbidden edge(s)")
sys.exit(1 if failures else 0)
PY
