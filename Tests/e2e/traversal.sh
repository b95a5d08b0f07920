#!/usr/bin/env bash
# No path reaches outside Public/.
source "$(dirname "$0")/lib.sh"
start_server

for path in '/../Package.swift' '/%2e%2e/Package.swift' '/..%2fPackage.swift' '/%2e%2e%2f%2e%2e%2fetc/passwd' \
    '/static/../../Package.swift' '/..\Package.swift' '/%5c..%5cPackage.swift' '/.git/config' '/%00index.html'; do
    code=$(curl -s --path-as-is -o "$WORK/body" -w '%{http_code}' "$BASE$path")
    case "$code" in
        400 | 404) pass "$path → $code" ;;
        *) fail "$path → $code" ;;
    esac
    if grep -q 'PackageDescription\|root:' "$WORK/body"; then fail "$path leaked a file"; fi
done
expect "the page itself is served" "$(curl -s -o /dev/null -w '%{http_code}' "$BASE/")" 200
finish
