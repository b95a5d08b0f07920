#!/usr/bin/env bash
# Feeds with curl: two named feeds beside `main`, each with its own items, head and news;
# a session hears only its own feed; a bad name is refused in the same words everywhere.
source "$(dirname "$0")/lib.sh"
start_server --demo

main_head=$(curl -s "$BASE/api/feeds/main" | json 'd["head"]')
expect "/api/items is the feed main" "$(curl -s "$BASE/api/items" | json 'len(d["items"])')" \
    "$(curl -s "$BASE/api/feeds/main/items" | json 'len(d["items"])')"
expect "a feed nothing was published to is empty" "$(curl -s "$BASE/api/feeds/team.eng/items")" '{"items":[],"hasMore":false}'
expect "its head is 0" "$(curl -s "$BASE/api/feeds/team.eng")" '{"name":"team.eng","head":0}'

expect "a publish to team.eng" "$(status POST /api/feeds/team.eng/items '{"id":"a","title":"Standup moved"}')" 201
expect "the same id in user:42 is another item" "$(status POST /api/feeds/user:42/items '{"id":"a","title":"Order shipped"}')" 201
expect "team.eng holds its own" "$(curl -s "$BASE/api/feeds/team.eng/items" | json 'd["items"][0]["title"]')" "Standup moved"
expect "user:42 holds its own" "$(curl -s "$BASE/api/feeds/user:42/items" | json 'd["items"][0]["title"]')" "Order shipped"
expect "main did not move" "$(curl -s "$BASE/api/feeds/main" | json 'd["head"]')" "$main_head"

team=$(curl -s -X POST "$BASE/api/sessions" "${JSON_TYPE[@]}" --data-binary '{"feed":"team.eng","firstPage":true}')
expect "the session says its feed" "$(echo "$team" | json 'd["feed"]')" team.eng
team=$(echo "$team" | json 'd["id"]')
main=$(new_session '{"firstPage":true}')
listen "$team" "$WORK/team"
listen "$main" "$WORK/main"

status POST /api/feeds/user:42/items '{"items":[{"title":"Two"},{"title":"Three"}]}' >/dev/null
expect "a publish to team.eng is answered once its sessions are told" \
    "$(status POST /api/feeds/team.eng/items '{"id":"b","title":"Lunch at noon"}')" 201
wait_for "$WORK/team" '^event: news' 30
news=$(events "$WORK/team" | awk '$2 == "news"' | cut -d' ' -f3-)
expect "team.eng hears one news" "$(echo "$news" | wc -l)" 1
expect "of its own item" "$(echo "$news" | json 'd["newest"]["title"]')" "Lunch at noon"
expect "at its own head" "$(echo "$news" | json 'd["head"]')" 2
# Every session is told before a publish is answered: a sample now comes after any news.
sample "$main" 1 0 scroll >/dev/null
wait_for "$WORK/main" '"seq":1' 30
expect "main hears nothing of other feeds" "$(events "$WORK/main" | awk '$2 == "news"' | wc -l)" 0

status POST "/api/sessions/$team/refresh" >/dev/null
wait_for "$WORK/team" '"op":"prepend"' 30
brought=$(events "$WORK/team" | awk '$2 == "items"' | tail -n1 | cut -d' ' -f3-)
expect "a refresh brings its feed's new item only" "$(echo "$brought" | json '[i["title"] for i in d["items"]]')" "['Lunch at noon']"

for name in "-x" "a%20b" "$(printf 'x%.0s' $(seq 129))"; do
    expect "GET /api/feeds/$name/items is 400" "$(status GET "/api/feeds/$name/items")" 400
    expect "  invalid_feed" "$(json 'd["error"]' <"$WORK/body")" invalid_feed
done
expect "a session on a bad name is 400" "$(status POST /api/sessions '{"feed":"no spaces"}')" 400
expect "  invalid_feed" "$(json 'd["error"]' <"$WORK/body")" invalid_feed
expect "two feeds have sessions" "$(curl -s "$BASE/metrics" | awk '$1 == "ptr_feeds_active" {print $2 + 0}')" 2
finish
