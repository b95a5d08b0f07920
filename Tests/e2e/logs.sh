#!/usr/bin/env bash
# --log-format json: every log line is one JSON object, and a refused request carries its
# request id (the X-Request-ID it came with, else one of its own) and its session's id as
# fields of their own.
source "$(dirname "$0")/lib.sh"
start_server --log-format json --log-level info

session=$(new_session)
expect "a malformed sample is refused" "$(status POST "/api/sessions/$session/samples" '{"seq":')" 400
expect "an unknown session is refused" "$(status GET /api/sessions/0000/nothing)" 404
expect "a refused sample with a request id" \
    "$(curl -s -o /dev/null -w '%{http_code}' -H 'X-Request-ID: front-42' -H 'Content-Type: application/json' \
        -X POST "$BASE/api/sessions/$session/samples" --data-binary '{"seq": "x"}')" 400
expect "a refused page request with a forged request id" \
    "$(curl -s -o /dev/null -w '%{http_code}' -H 'X-Request-ID: a"b' "$BASE/nothing-here")" 404
for _ in $(seq 50); do grep -q 'refused GET /nothing-here' "$WORK/server.log" && break; sleep 0.1; done
for _ in $(seq 50); do grep -q '"session":"0000"' "$WORK/server.log" && break; sleep 0.1; done

# The one line that is not a log line: where the server listens, on standard output.
logs=$(grep -v '^refresh-server listening on ' "$WORK/server.log")
checked=$(echo "$logs" | python3 -c '
import json, sys
count = 0
for line in sys.stdin:
    record = json.loads(line)
    assert {"time", "level", "label", "message"} <= record.keys(), record
    count += 1
print(count)') || checked=0
expect_match "every log line parses as JSON" "$checked" '^[1-9][0-9]*$'
refusal=$(echo "$logs" | grep '"malformed_json\|refused POST' | head -n1)
expect "the refusal names its session" "$(echo "$refusal" | json 'd.get("session")')" "$session"
expect "the refusal is a notice" "$(echo "$refusal" | json 'd["level"]')" notice
expect "a refusal on another session path names it too" \
    "$(grep 'refused GET /api/sessions/0000' "$WORK/server.log" | head -n1 | json 'd.get("session")')" 0000
expect "a refusal names the request id it came with" \
    "$(grep 'front-42' "$WORK/server.log" | head -n1 | json 'd.get("request")')" front-42
expect_match "a refusal without one gets an id of its own" "$(echo "$refusal" | json 'd.get("request")')" '^[0-9a-f]{16}$'
expect_match "a forged request id is not written to the log" \
    "$(grep 'refused GET /nothing-here' "$WORK/server.log" | head -n1 | json 'd.get("request")')" '^[0-9a-f]{16}$'
finish
