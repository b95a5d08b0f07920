#!/usr/bin/env bash
# One stream for several sessions, with curl, as the page's tabs share it: each session's
# events after an `event: session` naming it; a reader back with each session's last id gets
# only what it missed; a session that ends is told and leaves while the other goes on; bad
# targets are refused whole, with JSON.
source "$(dirname "$0")/lib.sh"
start_server

a=$(new_session)
b=$(new_session)
curl -sN "$BASE/api/events?session=$a&session=$b" >"$WORK/shared" &
wait_for "$WORK/shared" "^data: $b\$" 30
wait_for "$WORK/shared" '^event: state' 30
# sessions FILE: for each event, "SESSION EVENT ID", as the named sessions say.
sessions() {
    python3 - "$1" <<'PY'
import sys
session = None
for block in open(sys.argv[1]).read().split("\n\n"):
    fields = {}
    for line in block.split("\n"):
        if ":" in line and not line.startswith(":"):
            key, _, value = line.partition(":")
            fields[key] = value[1:] if value.startswith(" ") else value
    if fields.get("event") == "session":
        session = fields["data"]
    elif "event" in fields:
        print(session, fields["event"], fields.get("id", "-"))
PY
}
sleep 0.2
expect "each session's snapshot comes after its name" "$(sessions "$WORK/shared" | cut -d' ' -f1,2 | tr '\n' ';')" "$a state;$b state;"

sample "$b" 1 30 >/dev/null
sample "$a" 1 60 >/dev/null
wait_for "$WORK/shared" '"seq":1.*' 30
until [ "$(sessions "$WORK/shared" | wc -l)" -ge 4 ]; do sleep 0.05; done
expect "samples of either session reach the shared stream, each named" "$(sessions "$WORK/shared" | sed -n '3,4p' | cut -d' ' -f1,2 | tr '\n' ';')" "$b state;$a state;"
last_a=$(sessions "$WORK/shared" | awk -v s="$a" '$1 == s {id = $3} END {print id}')
last_b=$(sessions "$WORK/shared" | awk -v s="$b" '$1 == s {id = $3} END {print id}')

# Back with each session's last id, after a refresh of b: only b's refresh comes.
expect "a refresh of b" "$(status POST "/api/sessions/$b/refresh")" 202
curl -sN "$BASE/api/events?session=$a:$last_a&session=$b:$last_b" >"$WORK/back" &
wait_for "$WORK/back" '^event: done' 30
expect "  the reader back with each last id gets b's refresh, none of a's again" \
    "$(sessions "$WORK/back" | awk -v a="$a" -v la="$last_a" -v lb="$last_b" '($1 == a && $3 <= la) || ($1 != a && $3 <= lb) {print "again"}' | wc -l)" 0
expect "  and nothing of a" "$(sessions "$WORK/back" | awk -v a="$a" '$1 == a' | wc -l)" 0

expect "a's session ended" "$(status DELETE "/api/sessions/$a")" 204
wait_for "$WORK/shared" '^event: ended' 30 && pass "the shared stream is told"
expect "  naming a" "$(sessions "$WORK/shared" | grep ended | cut -d' ' -f1)" "$a"
sample "$b" 2 10 >/dev/null
wait_for "$WORK/shared" '"seq":2' 30 && pass "b's events go on on the same stream"

# Refusals: JSON, and nothing streamed.
for target in "" "?session=" "?session=$b&session=$b" "?session=$b:x" "?session=$b&session=nobody"; do
    code=$(curl -s -o "$WORK/refused" -w '%{http_code}' "$BASE/api/events$target")
    expect "GET /api/events$target is refused" "$([ "$code" -ge 400 ] && [ "$code" -lt 500 ] && echo refused)" refused
    expect_match "  with a JSON error" "$(json 'd["error"]' <"$WORK/refused" 2>/dev/null)" '^(missing_field|invalid_value|session_not_found)$'
done
expect "an unknown session among them is 404 session_not_found" "$(curl -s "$BASE/api/events?session=$b&session=nobody" | json 'd["error"]')" session_not_found
finish
