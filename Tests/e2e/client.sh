#!/usr/bin/env bash
# refresh-client as a user runs it: publish (then read with curl), tail while another
# publishes, pull to a completed refresh, edit and remove under a version; a refused publish and an unreachable server end
# with the server's words on standard error and the status the help promises. It runs the
# refresh-client beside the server when there is one, else the debug build (a command-line
# tool's speed is not what is tested; REFRESH_CLIENT picks another).
source "$(dirname "$0")/lib.sh"
CLIENT=${REFRESH_CLIENT:-$(dirname "$BIN")/refresh-client}
[ -x "$CLIENT" ] || CLIENT=$ROOT/.build/debug/refresh-client
PUBLISH_TOKEN=e2e-publish-token
start_server --publish-token "$PUBLISH_TOKEN"
export PTR_SERVER=$BASE PTR_TOKEN=$PUBLISH_TOKEN

# client ARGS…: runs refresh-client; its output goes to $WORK/out, its errors to $WORK/err;
# prints its exit status.
client() {
    local code=0
    "$CLIENT" "$@" >"$WORK/out" 2>"$WORK/err" || code=$?
    echo "$code"
}
sessions() { curl -s "$BASE/metrics" | awk '$1 == "ptr_sessions" {print $2 + 0}'; }

# publish
expect "publish exits 0" "$(client publish --feed team.eng --title 'Standup moved' --summary 'To 10:00' \
    --link https://example.com/standup --author Ann --id s1)" 0
expect "  prints the stored item, one JSON line" "$(wc -l <"$WORK/out")" 1
expect "  with the server's publication time" "$(json '"published" in d and d["id"]' <"$WORK/out")" s1
expect "curl reads it from the feed" "$(curl -s "$BASE/api/feeds/team.eng/items" |
    json '[(i["id"], i["title"], i["summary"], i["link"], i["author"]) for i in d["items"]]')" \
    "[('s1', 'Standup moved', 'To 10:00', 'https://example.com/standup', 'Ann')]"
expect "an item without --id is given one" "$(client publish --feed team.eng --title Lunch)" 0
expect "  which curl finds" "$(curl -s "$BASE/api/feeds/team.eng/items" | json 'd["items"][0]["id"]')" \
    "$(json 'd["id"]' <"$WORK/out")"

# tail: a publish made meanwhile arrives, as items, and --count ends it.
"$CLIENT" tail --feed team.eng --json --count 1 >"$WORK/tail" 2>"$WORK/tail.err" &
tail_pid=$!
for _ in $(seq 600); do [ "$(sessions)" = 1 ] && break; sleep 0.05; done
expect "tail opened a session" "$(sessions)" 1
curl -s -o /dev/null -X POST "$BASE/api/feeds/team.eng/items" "${JSON_TYPE[@]}" \
    -H "Authorization: Bearer $PUBLISH_TOKEN" --data-binary '{"id":"t1","title":"Fire drill at 3"}'
tail_code=0
# Never waited for without bound: a tail that missed the publish is stopped (and fails).
timeout 10 tail --pid "$tail_pid" -f /dev/null || kill "$tail_pid" 2>/dev/null
wait "$tail_pid" || tail_code=$?
expect "tail --count 1 exits 0 after one event" "$tail_code" 0
expect "  one JSON line" "$(wc -l <"$WORK/tail")" 1
expect "  the published item, prepended" "$(json '(d["event"], d["op"], [i["title"] for i in d["items"]])' <"$WORK/tail")" \
    "('items', 'prepend', ['Fire drill at 3'])"
expect "  and its session closed" "$(sessions)" 0

# tail in text until interrupted: it closes its session and exits as interrupted.
"$CLIENT" tail --feed team.eng >"$WORK/tail" 2>"$WORK/tail.err" &
tail_pid=$!
for _ in $(seq 600); do [ "$(sessions)" = 1 ] && break; sleep 0.05; done
curl -s -o /dev/null -X POST "$BASE/api/feeds/team.eng/items" "${JSON_TYPE[@]}" \
    -H "Authorization: Bearer $PUBLISH_TOKEN" --data-binary '{"id":"t2","title":"Coffee is back"}'
wait_for "$WORK/tail" 'Coffee is back' 30 && pass "tail prints the item as text"
expect_match "  title, id and time" "$(cat "$WORK/tail")" '^\+ Coffee is back \[t2\] 20[0-9-]+T'
kill -INT "$tail_pid"
tail_code=0
timeout 10 tail --pid "$tail_pid" -f /dev/null || kill -KILL "$tail_pid" 2>/dev/null
wait "$tail_pid" || tail_code=$?
expect "an interrupted tail exits 130" "$tail_code" 130
expect "  having closed its session" "$(sessions)" 0

# pull: the gesture's states, the refresh's progress, its end.
expect "pull --distance 120 exits 0" "$(client pull --feed team.eng --distance 120 --json)" 0
events_seen=$(python3 -c '
import json, sys
print({"state", "progress", "done"} <= {json.loads(line)["event"] for line in open(sys.argv[1])})' "$WORK/out")
expect "  prints states, progress and done" "$events_seen" True
phases=$(python3 -c '
import json, sys
seen = []
for line in open(sys.argv[1]):
    d = json.loads(line)
    if d["event"] == "state" and (not seen or seen[-1] != d["phase"]):
        seen.append(d["phase"])
print(" ".join(seen))' "$WORK/out")
expect_match "  pulling, armed, refreshing" "$phases" 'pulling armed refreshing'
expect "  its last line: the refresh completed" "$(tail -n1 "$WORK/out" | json '(d["event"], d["kind"], d["outcome"])')" \
    "('done', 'refresh', 'completed')"
expect "pull in text" "$(client pull --feed team.eng)" 0
expect_match "  ends with done" "$(tail -n1 "$WORK/out")" '^done refresh completed, 0 added$'
expect "a pull short of the threshold exits 1" "$(client pull --feed team.eng --distance 40)" 1
expect "  saying so in one line" "$(cat "$WORK/err")" \
    "refresh-client: the pull of 40 started no refresh (the top edge's threshold is 80)"
expect "a pull with a preset that never refreshes from the top exits 1" "$(client pull --preset uikit-bottom)" 1
expect "  saying why" "$(cat "$WORK/err")" \
    "refresh-client: the pull of 120 started no refresh (the preset does not refresh from the top)"
expect "pull --preset ios15 --distance 160 exits 0" "$(client pull --feed team.eng --preset ios15 --distance 160)" 0
expect_match "  ends with done" "$(tail -n1 "$WORK/out")" '^done refresh completed'
expect "a pull that cannot end in time exits 4" "$(client pull --distance 120 --timeout 0.05)" 4
expect "  saying so" "$(cat "$WORK/err")" "refresh-client: no refresh ended within 0.05 s"
"$CLIENT" pull --feed team.eng --json 2>"$WORK/err" | head -n 2 >/dev/null
expect "a pull whose reader stopped reading ends quietly, 0" "${PIPESTATUS[0]}" 0
expect "  nothing on standard error" "$(wc -c <"$WORK/err")" 0
expect "no session is left open" "$(sessions)" 0

# edit and remove: in place, under the version read; tail prints what changed.
"$CLIENT" tail --feed team.eng --json --count 2 >"$WORK/tail" 2>"$WORK/tail.err" &
tail_pid=$!
for _ in $(seq 600); do [ "$(sessions)" = 1 ] && break; sleep 0.05; done
expect "edit exits 0" "$(client edit --feed team.eng --id s1 --title 'Standup at 10:00' --clear link)" 0
expect "  prints the item as stored, in place, at its next version" "$(json '(d["id"], d["title"], d.get("link"), d["summary"], d["position"])' <"$WORK/out")" \
    "('s1', 'Standup at 10:00', None, 'To 10:00', 1)"
edited_version=$(json 'd["version"]' <"$WORK/out")
expect "an edit of another version exits 1" "$(client edit --feed team.eng --id s1 --title x --if-version 1)" 1
expect_match "  precondition_failed" "$(cat "$WORK/err")" '^refresh-client: 412 precondition_failed: '
expect "remove exits 0" "$(client remove --feed team.eng --id s1 --if-version "$edited_version")" 0
expect "  curl no longer finds it" "$(curl -s -o /dev/null -w '%{http_code}' "$BASE/api/feeds/team.eng/items/s1")" 404
expect "removing it again exits 1, not_found" "$(client remove --feed team.eng --id s1)" 1
expect_match "  saying so" "$(cat "$WORK/err")" '^refresh-client: 404 not_found: '
expect "an edit that changes nothing is a usage error: 64" "$(client edit --id s1)" 64
tail_code=0
timeout 10 tail --pid "$tail_pid" -f /dev/null || kill "$tail_pid" 2>/dev/null
wait "$tail_pid" || tail_code=$?
expect "tail --count 2 saw the edit and the removal" "$tail_code" 0
expect "  as changes" "$(python3 -c '
import json, sys
print([[(c["op"], c.get("id") or c["item"]["id"]) for c in json.loads(line)["changes"]] for line in open(sys.argv[1])])' "$WORK/tail")" \
    "[[('update', 's1')], [('remove', 's1')]]"

# Refusals and failures.
main_items=$(curl -s "$BASE/api/feeds/main/items" | json 'len(d["items"])')
expect "a publish without the token exits 1" "$(PTR_TOKEN='' client publish --title x)" 1
expect "  with the server's message, one line" "$(cat "$WORK/err")" \
    "refresh-client: 401 unauthorized: Publishing needs the header Authorization: Bearer <publish token>."
expect "  and prints nothing" "$(wc -c <"$WORK/out")" 0
expect "a publish with a wrong token exits 1" "$(client publish --token wrong --title x)" 1
expect_match "  401" "$(cat "$WORK/err")" '^refresh-client: 401 '
expect "a bad feed name exits 1" "$(client publish --feed 'no spaces' --title x)" 1
expect_match "  invalid_feed" "$(cat "$WORK/err")" '^refresh-client: 400 invalid_feed: '
expect "nothing refused was stored" "$(curl -s "$BASE/api/feeds/main/items" | json 'len(d["items"])')" "$main_items"
expect "an unreachable server exits 3" "$(client publish --server http://127.0.0.1:1 --title x)" 3
expect_match "  saying which" "$(cat "$WORK/err")" '^refresh-client: cannot reach http://127.0.0.1:1'
expect "  in one line" "$(wc -l <"$WORK/err")" 1
expect "a missing --title is a usage error: 64" "$(client publish)" 64
expect "a bad --server is a usage error: 64" "$(client tail --server ftp://x)" 64
expect "--help exits 0" "$(client --help)" 0
expect_match "  names the commands" "$(tr '\n' ' ' <"$WORK/out")" 'publish .*edit .*remove .*tail .*pull '
expect_match "  and the exit statuses" "$(tr '\n' ' ' <"$WORK/out")" 'cannot +be +reached'
finish
