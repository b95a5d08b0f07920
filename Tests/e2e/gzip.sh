#!/usr/bin/env bash
# gzip of the page, of JSON and of the event stream decodes to the very bytes sent plain.
source "$(dirname "$0")/lib.sh"
start_server

curl -s "$BASE/" -o "$WORK/page"
curl -s -H 'Accept-Encoding: gzip' -D "$WORK/page.headers" "$BASE/" -o "$WORK/page.gz"
expect_match "the page is gzipped" "$(cat "$WORK/page.headers")" '[Cc]ontent-[Ee]ncoding: gzip'
expect "the page decodes to the same bytes" "$(gunzip -c "$WORK/page.gz" | sha256sum)" "$(sha256sum <"$WORK/page")"
etag=$(grep -i '^etag:' "$WORK/page.headers" | cut -d' ' -f2 | tr -d '\r')
expect "its ETag revalidates" "$(curl -s -o /dev/null -w '%{http_code}' -H 'Accept-Encoding: gzip' -H "If-None-Match: $etag" "$BASE/")" 304

curl -s "$BASE/api/items?limit=40" -o "$WORK/items"
curl -s -H 'Accept-Encoding: gzip' -D "$WORK/items.headers" "$BASE/api/items?limit=40" -o "$WORK/items.gz"
expect_match "JSON is gzipped" "$(cat "$WORK/items.headers")" '[Cc]ontent-[Ee]ncoding: gzip'
expect "JSON decodes to the same bytes" "$(gunzip -c "$WORK/items.gz" | sha256sum)" "$(sha256sum <"$WORK/items")"

session=$(new_session)
curl -sN "$BASE/api/sessions/$session/events" >"$WORK/plain" &
curl -sN -H 'Accept-Encoding: gzip' -D "$WORK/stream.headers" "$BASE/api/sessions/$session/events" >"$WORK/stream.gz" &
wait_for "$WORK/plain" '^event: state' 30
wait_for "$WORK/stream.headers" '[Ee]ncoding: gzip' 30
sample "$session" 1 -40 >/dev/null
sample "$session" 2 -90 >/dev/null
wait_for "$WORK/plain" '"seq":2' 30
# Each event is flushed: what arrived so far inflates to the complete events.
inflate() { python3 -c 'import sys,zlib; d=zlib.decompressobj(31); sys.stdout.write(d.decompress(open(sys.argv[1],"rb").read()).decode())' "$WORK/stream.gz" >"$WORK/inflated"; }
for _ in $(seq 1 100); do
    inflate
    grep -q '"seq":2' "$WORK/inflated" && break
    sleep 0.05
done
expect_match "the stream is gzipped" "$(cat "$WORK/stream.headers")" '[Cc]ontent-[Ee]ncoding: gzip'
# Each stream is told its own jittered retry: compare the events, not that line.
expect "the stream inflates to the plain events, flushed per event" \
    "$(grep -v '^retry:' "$WORK/inflated" | sha256sum)" "$(grep -v '^retry:' "$WORK/plain" | sha256sum)"
finish
