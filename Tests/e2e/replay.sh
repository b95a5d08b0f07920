#!/usr/bin/env bash
# Reconnecting with Last-Event-ID replays exactly what was missed: nothing lost, nothing twice.
source "$(dirname "$0")/lib.sh"
start_server

session=$(new_session)
listen "$session" "$WORK/live"
sample "$session" 1 -30 >/dev/null
wait_for "$WORK/live" '"seq":1' 30
last_seen=$(events "$WORK/live" | tail -n1 | cut -d' ' -f1)

# While "away": more pulling, then a whole refresh.
sample "$session" 2 -60 >/dev/null
sample "$session" 3 -95 release >/dev/null
wait_for "$WORK/live" '^event: done' 30
sample "$session" 4 0 scroll >/dev/null
wait_for "$WORK/live" '"seq":4' 30

curl -sN -H "Last-Event-ID: $last_seen" "$BASE/api/sessions/$session/events" >"$WORK/replay" &
wait_for "$WORK/replay" '"seq":4' 30
sleep 0.3
# Expected: every non-state event after last_seen, and the newest state only.
expected=$(events "$WORK/live" | awk -v from="$last_seen" '$1 > from && $2 != "state"'; events "$WORK/live" | tail -n1)
replayed=$(events "$WORK/replay")
expect "the replay is exactly the missed events" "$replayed" "$expected"
expect "nothing at or before Last-Event-ID" "$(events "$WORK/replay" | awk -v from="$last_seen" '$1 <= from' | wc -l)" 0
expect_match "it opens with a jittered retry, from the reconnect delay to twice it" "$(head -n1 "$WORK/replay")" '^retry: (1[0-9]{3}|2000)$'

# After the replay the stream is live.
sample "$session" 5 -10 >/dev/null
wait_for "$WORK/replay" '"seq":5' 30 && pass "live after the replay"

# Far behind the buffer: a reset.
curl -sN -H "Last-Event-ID: 999999" "$BASE/api/sessions/$session/events" >"$WORK/gap" &
wait_for "$WORK/gap" '^event: reset' 30 && pass "an unknown id gets a reset"
finish
