#!/usr/bin/env bash
# A refresh asked for without a gesture, then cancelled: done arrives as cancelled.
source "$(dirname "$0")/lib.sh"
start_server --min-refresh-ms 5000

session=$(new_session)
listen "$session" "$WORK/events"
code=$(status POST "/api/sessions/$session/refresh")
expect "refresh accepted" "$code" 202
action=$(json 'd["actionId"]' <"$WORK/body")
status POST "/api/sessions/$session/refresh" >/dev/null
expect "a second request joins it" "$(json 'd["actionId"]' <"$WORK/body")" "$action"
wait_for "$WORK/events" '"phase":"refreshing"' 30
expect "load-more waits for the refresh" "$(status POST "/api/sessions/$session/load-more")" 409
expect "cancel answers 200" "$(status DELETE "/api/sessions/$session/refresh")" 200
expect "it names the action" "$(json 'd["actionId"]' <"$WORK/body")" "$action"
wait_for "$WORK/events" '^event: done' 30
done_event=$(events "$WORK/events" | awk '$2=="done"' | cut -d' ' -f3-)
expect "done is cancelled" "$(echo "$done_event" | json 'd["outcome"]')" cancelled
expect "for that action" "$(echo "$done_event" | json 'd["actionId"]')" "$action"
expect "no items were sent" "$(events "$WORK/events" | awk '$2=="items"' | wc -l)" 0
expect "nothing left to cancel" "$(status DELETE "/api/sessions/$session/refresh"; json 'd["cancelled"]' <"$WORK/body")" "200False"
finish
