#!/usr/bin/env bash
# A 201 from POST /api/items means committed: SIGKILL right after it loses nothing.
source "$(dirname "$0")/lib.sh"
export DATABASE="$WORK/data/refresh.sqlite"
start_server --no-demo

code=$(status POST /api/items '{"id":"survivor","title":"Survives a crash"}')
expect "published" "$code" 201
kill -KILL "$SERVER_PID"
wait "$SERVER_PID" 2>/dev/null || true
SERVER_PID=""
expect "the database file exists" "$(test -f "$DATABASE" && echo yes)" yes

start_server --no-demo
expect "the item is still there" "$(curl -s "$BASE/api/items" | json '[i["id"] for i in d["items"]]')" "['survivor']"
expect "with its title" "$(curl -s "$BASE/api/items" | json 'd["items"][0]["title"]')" "Survives a crash"
finish
