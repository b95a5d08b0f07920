#!/usr/bin/env bash
# A Swift app that adds only the client: a scratch package outside the repository depends on
# this one with the `Client` trait alone and on the URLSession transport, builds, publishes an
# item to a real server and reads it back, and resolves nothing of the server (no Hummingbird,
# NIO, GRDB, PostgresNIO, JWTKit, AsyncHTTPClient…).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BIN=${REFRESH_SERVER:-$ROOT/.build/release/refresh-server}
if [ ! -x "$BIN" ]; then
    echo "building the release refresh-server" >&2
    (cd "$ROOT" && swift build -c release --product refresh-server >/dev/null)
fi
app=$(mktemp -d /tmp/ptr-client-only.XXXXXX)
server=""
trap '[ -n "$server" ] && { kill "$server" 2>/dev/null; wait "$server" 2>/dev/null; }; rm -rf "$app"' EXIT
mkdir -p "$app/Sources/ClientDemo"
cat >"$app/Package.swift" <<SWIFT
// swift-tools-version: 6.2
import PackageDescription

let package = Package(
    name: "ClientDemo",
    platforms: [.macOS(.v15), .iOS(.v18)],
    dependencies: [
        .package(path: "$ROOT", traits: ["Client"]),
        .package(url: "https://github.com/apple/swift-openapi-urlsession.git", exact: "1.4.0"),
    ],
    targets: [
        .executableTarget(
            name: "ClientDemo",
            dependencies: [
                .product(name: "RefreshClient", package: "$(basename "$ROOT")"),
                .product(name: "OpenAPIURLSession", package: "swift-openapi-urlsession"),
            ]
        )
    ]
)
SWIFT
cat >"$app/Sources/ClientDemo/main.swift" <<'SWIFT'
import Foundation
import OpenAPIURLSession
import RefreshClient

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// What an app does first: publish to the feed, then read the list's first page.
let client = RefreshClient(serverURL: URL(string: CommandLine.arguments[1])!, transport: URLSessionTransport())
let published = try await client.publish([NewItem(id: "from-an-app", title: "Published over URLSession")])
let page = try await client.items(feed: "main", limit: 3)
let first = page.items.first.map { "\($0.id) \"\($0.title)\"" } ?? "nothing"
print("published: \(published.map(\.id).joined(separator: ",")), first on the list: \(first)")
SWIFT
cd "$app"
# The generated code's own warnings (unused imports it declares on purpose) are not news here.
swift build -q >"$app/build.log" 2>&1 || { cat "$app/build.log" >&2; exit 1; }
# A real server on an ephemeral port, its store in a fresh SQLite file. (Its log exists before
# it starts, so the address is never looked for in a file not there yet.)
: >"$app/server.log"
"$BIN" --port 0 --public "$ROOT/Public" --database "$app/feed.sqlite" >"$app/server.log" 2>&1 &
server=$!
base=""
for _ in $(seq 100); do
    base=$(grep -o 'http://[0-9.:]*' "$app/server.log" | head -n1 || true)
    [ -n "$base" ] && break
    sleep 0.1
done
[ -n "$base" ] || { echo "the server did not start:" >&2; cat "$app/server.log" >&2; exit 1; }
output=$(swift run -q ClientDemo "$base" 2>&1) || true
echo "$output"
dependencies=$(swift package show-dependencies --format json)
failed=0
expect() { if [ "$2" = "$3" ]; then echo "  ok   $1"; else echo "  FAIL $1: got '$2', expected '$3'" >&2; failed=1; fi; }
expect "the client publishes over URLSession and reads the item back" "$output" \
    'published: from-an-app, first on the list: from-an-app "Published over URLSession"'
resolved=$(printf '%s' "$dependencies" | python3 -c '
import json, sys
def walk(node):
    for child in node.get("dependencies", []):
        yield child["identity"]
        yield from walk(child)
print(" ".join(sorted(set(walk(json.load(sys.stdin))) - {sys.argv[1]})))' "$(basename "$ROOT" | tr 'A-Z' 'a-z')")
# The OpenAPI runtime and its HTTP types (the client's), the transport and what it brings
# (swift-collections, for its buffers): nothing else.
expect "no package resolved but the client's, the transport's and theirs" "$resolved" \
    "swift-collections swift-http-types swift-openapi-runtime swift-openapi-urlsession"
[ "$failed" -eq 0 ] && echo "client-only: 2 passed, 0 failed"
exit "$failed"
