#!/usr/bin/env bash
# Live news with curl: a publish reaches every open page at once, as `news` in badge mode
# and as prepended items for a live page at rest at the top; a refresh brings exactly the
# new items, never twice; `off` hears nothing.
source "$(dirname "$0")/lib.sh"
start_server --demo

badge=$(new_session '{"config":{"news":"badge"}}')
live=$(new_session '{"config":{"news":"live"}}')
off=$(new_session '{"config":{"news":"off"}}')
for session in "$badge" "$live" "$off"; do
    listen "$session" "$WORK/$session"
    # A page hears of news once it shows a first page.
    expect "a first page is asked for" "$(status POST "/api/sessions/$session/load-more")" 202
    wait_for "$WORK/$session" '^event: done' 30
done
sample "$live" 1 0 scroll >/dev/null

published=$(status POST /api/items '{"items":[{"id":"e2e-1","title":"First of two"},{"id":"e2e-2","title":"Second of two"}]}')
expect "a publish is answered 201 once committed" "$published" 201

wait_for "$WORK/$badge" '^event: news' 30
news=$(events "$WORK/$badge" | awk '$2 == "news"' | tail -n1 | cut -d' ' -f3-)
expect "badge: the news counts two items" "$(echo "$news" | json 'd["count"]')" 2
expect_match "badge: the news names the newest" "$(echo "$news" | json 'd["newest"]["title"]')" '^(First|Second) of two$'

wait_for "$WORK/$live" '"op":"prepend"' 30
prepend=$(events "$WORK/$live" | awk '$2 == "items"' | tail -n1 | cut -d' ' -f3-)
expect "live at rest: both items prepended without a refresh" "$(echo "$prepend" | json 'len(d["items"])')" 2
expect "live at rest: no action behind them" "$(echo "$prepend" | json 'd["actionId"]')" None
expect "live at rest: no news" "$(events "$WORK/$live" | awk '$2 == "news"' | wc -l)" 0

# Every page is told before the publish is answered: a sample now comes after any news.
sample "$off" 1 0 scroll >/dev/null
wait_for "$WORK/$off" '"seq":1' 30
expect "off: no news" "$(events "$WORK/$off" | awk '$2 == "news"' | wc -l)" 0

status POST "/api/sessions/$badge/refresh" >/dev/null
wait_for "$WORK/$badge" '"op":"prepend"' 30
brought=$(events "$WORK/$badge" | awk '$2 == "items"' | tail -n1 | cut -d' ' -f3-)
expect "badge: the refresh brings exactly the two" "$(echo "$brought" | json '" ".join(sorted(i["id"] for i in d["items"]))')" "e2e-1 e2e-2"
wait_for "$WORK/$badge" '"outcome":"completed"' 30
before=$(events "$WORK/$badge" | awk '$2 == "done"' | wc -l)
status POST "/api/sessions/$badge/refresh" >/dev/null
for _ in $(seq 600); do
    [ "$(events "$WORK/$badge" | awk '$2 == "done"' | wc -l)" -gt "$before" ] && break
    sleep 0.05
done
again=$(events "$WORK/$badge" | awk '$2 == "items"' | tail -n1 | cut -d' ' -f3-)
expect "badge: a second refresh brings nothing twice" "$(echo "$again" | json 'len(d["items"])')" 0

expect "a republished id is no news" "$(status POST /api/items '{"id":"e2e-1","title":"Edited"}')" 201
sample "$badge" 1 0 scroll >/dev/null
wait_for "$WORK/$badge" '"seq":1' 30
expect "the badge page heard of two items only" "$(events "$WORK/$badge" | awk '$2 == "news"' | wc -l)" 1
finish
