#!/usr/bin/env bash
# --log-format json: every line the process writes is one JSON object (where it listens, a
# warning at start, refusals, its shutdown), and a refused request carries its request id
# (the X-Request-ID it came with, else one of its own) and its session's id as fields of
# their own.
source "$(dirname "$0")/lib.sh"
# PTR_MAX_STREAM names no setting: the start warns about it.
PTR_MAX_STREAM=5 start_server --log-format json --log-level info

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

# stop: ends the server as a service manager does, so that its shutdown is written too.
stop() {
    kill -TERM "$SERVER_PID"
    wait "$SERVER_PID" 2>/dev/null || true
    SERVER_PID=""
}

# json_lines: how many lines of the log there are, each a JSON log record; 0, naming the
# first that is not, when one is not.
json_lines() {
    python3 -c '
import json, sys
count = 0
for line in open(sys.argv[1]):
    try:
        record = json.loads(line)
        assert {"time", "level", "label", "message"} <= record.keys()
    except (ValueError, AssertionError):
        print("not a JSON log record:", line, end="", file=sys.stderr)
        print(0)
        sys.exit()
    count += 1
print(count)' "$WORK/server.log"
}

stop
logs=$(cat "$WORK/server.log")
expect_match "every line parses as JSON" "$(json_lines)" '^[1-9][0-9]*$'
expect "where it listens is a record, the URL a field of its own" \
    "$(grep '"url"' "$WORK/server.log" | head -n1 | json 'd.get("url")')" "$BASE"
expect "the mistyped variable is warned about" \
    "$(grep 'PTR_MAX_STREAM ' "$WORK/server.log" | head -n1 | json 'd["level"]')" warning
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

# At debug, the shutdown says what it does: JSON as well.
start_server --log-format json --log-level debug
stop
expect_match "every line to the end of a shutdown parses as JSON" "$(json_lines)" '^[1-9][0-9]*$'
expect_match "the shutdown is in the log" "$(grep -c 'SIGTERM' "$WORK/server.log")" '^[1-9]'
finish
