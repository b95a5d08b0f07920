#!/usr/bin/env bash
# Changes with curl: one item read with its ETag (304 when unchanged), edited in place by a
# merge patch and by a replacement (its position kept, its version bumped), guarded by
# If-Match, refused whole when the patch is bad, removed; a page showing the feed hears of
# each change once, a page of another feed of none; news stops counting a removed item; a
# stream back past the replay buffer is told the net changes instead of reset.
source "$(dirname "$0")/lib.sh"
TOKEN=e2e-edit-token
AUTH=(-H "Authorization: Bearer $TOKEN")
PATCH_TYPE=(-H 'Content-Type: application/merge-patch+json')
# Small, so that a few edits push a closed stream's last event out of it.
BUFFER=8
start_server --publish-token "$TOKEN" --replay-buffer "$BUFFER"

# call METHOD PATH [curl flags…]: the status; the body goes to $WORK/body, the head to
# $WORK/head.
call() {
    local method=$1 path=$2
    shift 2
    # (curl writes no file for an answer without a body: an earlier body must not stay.)
    : >"$WORK/body"
    curl -s -o "$WORK/body" -D "$WORK/head" -w '%{http_code}' -X "$method" "$@" "$BASE$path"
}
etag() { tr -d '\r' <"$WORK/head" | sed -n 's/^etag: //Ip'; }
error_code() { json 'd["error"]' <"$WORK/body"; }
# item ID FIELD: one field of the stored item of the feed board, as GET answers it.
item() { curl -s "$BASE/api/feeds/board/items/$1" | json "d.get('$2')"; }
# changes FILE: one line per change the stream told, "EVENT-VERSION OP ID ITEM-VERSION".
changes() {
    events "$1" | awk '$2 == "changes"' | cut -d' ' -f3- | python3 -c '
import json, sys
for line in sys.stdin:
    event = json.loads(line)
    for change in event["changes"]:
        item = change.get("item", change)
        print(event["version"], change["op"], item["id"], item["version"])'
}

expect "a publish to board" "$(call POST /api/feeds/board/items "${AUTH[@]}" "${JSON_TYPE[@]}" \
    --data-binary '{"items":[{"id":"a","title":"Alpha"},{"id":"b","title":"Bravo"},{"id":"c","title":"Charlie"}]}')" 201
expect "a publish to other" "$(call POST /api/feeds/other/items "${AUTH[@]}" "${JSON_TYPE[@]}" --data-binary '{"id":"x","title":"X-ray"}')" 201

expect "GET one item" "$(call GET /api/feeds/board/items/b)" 200
version=$(json 'd["version"]' <"$WORK/body")
expect "  with its position" "$(json 'd["position"]' <"$WORK/body")" 2
expect "  and its version as ETag" "$(etag)" "\"$version\""
expect "If-None-Match with its ETag is 304" "$(call GET /api/feeds/board/items/b -H "If-None-Match: \"$version\"")" 304
expect "  with no body" "$(wc -c <"$WORK/body")" 0
expect "  and the ETag" "$(etag)" "\"$version\""
expect "an unknown id is 404" "$(call GET /api/feeds/board/items/nobody)" 404
expect "  not_found" "$(error_code)" not_found
expect "/api/items/{id} is main's: board's b is not there" "$(call GET /api/items/b)" 404

board=$(curl -s -X POST "$BASE/api/sessions" "${JSON_TYPE[@]}" --data-binary '{"feed":"board","firstPage":true}')
expect "a page of board shows its three items" "$(echo "$board" | json '[i["id"] for i in d["firstPage"]["items"]]')" "['c', 'b', 'a']"
board=$(echo "$board" | json 'd["id"]')
other=$(new_session '{"feed":"other","firstPage":true}')
listen "$board" "$WORK/$board"
listen "$other" "$WORK/$other"

expect "an edit without the publish right is 401" "$(call PATCH /api/feeds/board/items/b "${PATCH_TYPE[@]}" --data-binary '{"title":"Nope"}')" 401
expect "  and changes nothing" "$(item b version)" "$version"

expect "PATCH with a merge patch and the right If-Match" "$(call PATCH /api/feeds/board/items/b "${AUTH[@]}" "${PATCH_TYPE[@]}" \
    -H "If-Match: \"$version\"" --data-binary '{"title":"Bravo, corrected","summary":"Read"}')" 200
patched=$(json 'd["version"]' <"$WORK/body")
expect "  answers the stored item" "$(json '(d["title"], d["summary"])' <"$WORK/body")" "('Bravo, corrected', 'Read')"
expect "  where it stood" "$(json 'd["position"]' <"$WORK/body")" 2
expect "  at a later version" "$([ "$patched" -gt "$version" ] && echo later)" later
expect "  told by its ETag" "$(etag)" "\"$patched\""
expect "  and GET shows it" "$(item b title)" "Bravo, corrected"

expect "PUT replaces the fields" "$(call PUT /api/feeds/board/items/b "${AUTH[@]}" "${JSON_TYPE[@]}" \
    --data-binary '{"title":"Bravo again","author":"Editor"}')" 200
replaced=$(json 'd["version"]' <"$WORK/body")
expect "  the summary is gone, the author there" "$(json '(d.get("summary"), d["author"])' <"$WORK/body")" "(None, 'Editor')"
expect "  where it stood" "$(json 'd["position"]' <"$WORK/body")" 2
expect "  at a later version" "$([ "$replaced" -gt "$patched" ] && echo later)" later

expect "If-Match of an older version is 412" "$(call PATCH /api/feeds/board/items/b "${AUTH[@]}" "${PATCH_TYPE[@]}" \
    -H "If-Match: \"$patched\"" --data-binary '{"title":"Lost update"}')" 412
expect "  precondition_failed" "$(error_code)" precondition_failed
expect "  and nothing changed" "$(item b title) $(item b version)" "Bravo again $replaced"
expect "DELETE with an older If-Match is 412 too" "$(call DELETE /api/feeds/board/items/b "${AUTH[@]}" -H "If-Match: \"$patched\"")" 412
expect "  and b is there" "$(item b version)" "$replaced"
expect "an If-Match not quoted is 400" "$(call PUT /api/feeds/board/items/b "${AUTH[@]}" "${JSON_TYPE[@]}" \
    -H "If-Match: $replaced" --data-binary '{"title":"Unquoted"}')" 400
expect "  invalid_precondition" "$(error_code)" invalid_precondition
expect "  and nothing changed" "$(item b title) $(item b version)" "Bravo again $replaced"

long=$(printf 'x%.0s' $(seq 501))
for patch in '[1]' '{"title":null}' '{"id":"z"}' '{"colour":"red"}' "{\"title\":\"$long\"}" '{"title":"Half","colour":"red"}'; do
    expect "a bad patch is 400: ${patch:0:40}" "$(call PATCH /api/feeds/board/items/b "${AUTH[@]}" "${PATCH_TYPE[@]}" --data-binary "$patch")" 400
done
expect "  and none changed anything" "$(item b title) $(item b version)" "Bravo again $replaced"

expect "DELETE is 204" "$(call DELETE /api/feeds/board/items/c "${AUTH[@]}")" 204
expect "  then GET is 404" "$(call GET /api/feeds/board/items/c)" 404
expect "  not_found" "$(error_code)" not_found
expect "  and DELETE again is 404" "$(call DELETE /api/feeds/board/items/c "${AUTH[@]}")" 404
expect "the list no longer holds it" "$(curl -s "$BASE/api/feeds/board/items" | json '[i["id"] for i in d["items"]]')" "['b', 'a']"

# Every page is told before an edit is answered: a sample now comes after any change.
for session in "$board" "$other"; do
    sample "$session" 1 0 scroll >/dev/null
    wait_for "$WORK/$session" '"seq":1' 30
done
expect "the page of board heard each change once, in version order" "$(changes "$WORK/$board" | tr '\n' ';')" \
    "$patched update b $patched;$replaced update b $replaced;$((replaced + 1)) remove c $((replaced + 1));"
expect "  one event for each" "$(events "$WORK/$board" | awk '$2 == "changes"' | wc -l)" 3
expect "the page of other heard none of them" "$(events "$WORK/$other" | awk '$2 == "changes"' | wc -l)" 0

expect "an edit in other" "$(call PATCH /api/feeds/other/items/x "${AUTH[@]}" "${PATCH_TYPE[@]}" --data-binary '{"title":"X-ray, edited"}')" 200
wait_for "$WORK/$other" 'X-ray, edited' 30
for session in "$board" "$other"; do
    sample "$session" 2 0 scroll >/dev/null
    wait_for "$WORK/$session" '"seq":2' 30
done
expect "reaches the page of other once" "$(changes "$WORK/$other" | cut -d' ' -f2,3 | tr '\n' ';')" "update x;"
expect "and the page of board not at all" "$(events "$WORK/$board" | awk '$2 == "changes"' | wc -l)" 3

# News counts only items that still exist: a new item is news until it is removed.
expect "a new item in board" "$(call POST /api/feeds/board/items "${AUTH[@]}" "${JSON_TYPE[@]}" --data-binary '{"id":"d","title":"Delta"}')" 201
expect "  at the next position: c's is never taken again" "$(json 'd["items"][0]["position"]' <"$WORK/body")" 4
wait_for "$WORK/$board" '"count":1,' 30
expect "  removed" "$(call DELETE /api/feeds/board/items/d "${AUTH[@]}")" 204
wait_for "$WORK/$board" '"count":0,' 30 && pass "the news is corrected to none"
expect "  and the page was told no change of a row it does not show" "$(events "$WORK/$board" | awk '$2 == "changes"' | wc -l)" 3

# Back past the replay buffer: a page that reads its stream to an event, goes away while
# more changes than the buffer holds happen (a second stream keeps the session listening),
# and comes back with that event's id is told the net changes in one event.
away=$(new_session '{"feed":"board","firstPage":true}')
listen "$away" "$WORK/away-kept"
expect "an edit of a" "$(call PATCH /api/feeds/board/items/a "${AUTH[@]}" "${PATCH_TYPE[@]}" --data-binary '{"title":"Alpha 0"}')" 200
stream_until "$away" "$WORK/away-read" '^data: .*"Alpha 0"' "Last-Event-ID: 0"
read_to=$(events "$WORK/away-read" | awk '$2 == "changes"' | tail -n1 | cut -d' ' -f1)
expect_match "the page read its stream to the change" "$read_to" '^[0-9]+$'
for n in $(seq "$BUFFER"); do
    call PATCH /api/feeds/board/items/a "${AUTH[@]}" "${PATCH_TYPE[@]}" --data-binary "{\"title\":\"Alpha $n\"}" >/dev/null
done
final=$(json 'd["version"]' <"$WORK/body")
expect "b removed meanwhile" "$(call DELETE /api/feeds/board/items/b "${AUTH[@]}")" 204
wait_for "$WORK/away-kept" '"op":"remove","id":"b"' 30
expect "more events came than the buffer holds" \
    "$([ $(($(events "$WORK/away-kept" | tail -n1 | cut -d' ' -f1) - read_to)) -gt "$BUFFER" ] && echo more)" more
stream_until "$away" "$WORK/away-back" '^data: ' "Last-Event-ID: $read_to"
back=$(events "$WORK/away-back" | head -n1)
expect "the first event back is changes, not reset" "$(echo "$back" | cut -d' ' -f2)" changes
expect "  holding the net changes: a as it is now, b removed" \
    "$(echo "$back" | cut -d' ' -f3- | json '[(c["op"], c.get("item", c)["id"], c.get("item", {}).get("title"), c.get("item", c)["version"]) for c in d["changes"]]')" \
    "[('update', 'a', 'Alpha $BUFFER', $final), ('remove', 'b', None, $((final + 1)))]"
expect "  as of the feed's version" "$(echo "$back" | cut -d' ' -f3- | json 'd["version"]')" $((final + 1))
expect "  counted as such" "$(curl -s "$BASE/metrics" | awk '$1 == "ptr_replay_changes_total" {print $2 + 0}')" 1
finish
