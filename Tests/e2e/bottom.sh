#!/usr/bin/env bash
# Pulling up past the end (uikit-bottom) loads the next older page, appended.
source "$(dirname "$0")/lib.sh"
start_server --page-size 5

session=$(new_session '{"preset":"uikit-bottom"}')
listen "$session" "$WORK/events"
expect "refresh accepted" "$(status POST "/api/sessions/$session/refresh")" 202
wait_for "$WORK/events" '^event: done' 30
newest=$(events "$WORK/events" | awk '$2=="items"' | cut -d' ' -f3- | json '[i["id"] for i in d["items"]][-1]')

sample "$session" 1 0 scroll '"contentHeight":1000,"viewportHeight":800' >/dev/null
expect "119 px past the end pulls" "$(sample "$session" 2 319 | json 'd["state"]["phase"]')" pulling
expect "120 px past the end loads" "$(sample "$session" 3 320 | json 'd["state"]["phase"]')" loading
wait_for "$WORK/events" '"kind":"loadMore","outcome"' 30
appended=$(events "$WORK/events" | awk '$2=="items"' | tail -n1 | cut -d' ' -f3-)
expect "appended" "$(echo "$appended" | json 'd["op"]')" append
expect "five older items" "$(echo "$appended" | json 'len(d["items"])')" 5
older=$(curl -s "$BASE/api/items?before=$newest&limit=5" | json '[i["id"] for i in d["items"]]')
expect "they follow the first page" "$(echo "$appended" | json '[i["id"] for i in d["items"]]')" "$older"
finish
