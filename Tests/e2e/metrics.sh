#!/usr/bin/env bash
# GET /metrics: the exposition parses with Prometheus's Python parser (prometheus-client),
# and a drag, a refresh, a publish, a replay and refused requests move their counters by
# exactly what they did. The comparison is metrics.py's.
source "$(dirname "$0")/lib.sh"
# No keepalive tick during the run: it would read the feed's head on its own.
start_server --keepalive 600

expect "it answers 200" "$(status GET /metrics)" 200
expect "as Prometheus text 0.0.4" "$(curl -s -o /dev/null -w '%{content_type}' "$BASE/metrics")" "text/plain; version=0.0.4; charset=utf-8"
curl -s "$BASE/metrics" >"$WORK/before.prom"

session=$(new_session)
listen "$session" "$WORK/live"
drag=5
for seq in $(seq $drag); do
    sample "$session" "$seq" "-$((seq * 10))" >/dev/null
    wait_for "$WORK/live" "\"seq\":$seq}" 30
done
sample "$session" 2 -20 >/dev/null
expect "a refresh is accepted" "$(status POST "/api/sessions/$session/refresh")" 202
wait_for "$WORK/live" '^event: done' 30
expect "an item is published" "$(status POST /api/items '{"id":"metrics-1","title":"Counted"}')" 201
wait_for "$WORK/live" '^event: news' 30

# A reconnect from the start is served from the log; one from an id never sent is a reset.
# Each read until the replay's last event, the state snapshot.
stream_until "$session" "$WORK/replay" '^event: state' "Last-Event-ID: 0" || true
stream_until "$session" "$WORK/gap" '^event: state' "Last-Event-ID: 999999" || true
expect_match "the far reconnect got a reset" "$(cat "$WORK/gap")" 'event: reset'

expect "a malformed sample" "$(status POST "/api/sessions/$session/samples" '{"seq":')" 400
expect "a sample for no session" "$(status POST /api/sessions/nope/samples '{"seq":9,"y":0,"phase":"drag"}')" 404
expect "a sample out of range" "$(status POST "/api/sessions/$session/samples" '{"seq":9,"y":1e12,"phase":"drag"}')" 422
expect "an unknown path" "$(status GET /api/nothing/here)" 404
curl -s "$BASE/metrics" >"$WORK/after.prom"

checks=$(python3 "$(dirname "$0")/metrics.py" "$WORK/before.prom" "$WORK/after.prom" "$WORK/live" "$WORK/replay" "$drag") ||
    fail "the scrape parses with prometheus_client"
while IFS='|' read -r description actual expected; do
    [ -n "$description" ] && expect "$description" "$actual" "$expected"
done <<<"$checks"
finish
