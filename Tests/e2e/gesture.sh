#!/usr/bin/env bash
# A pull down past the threshold and a release: the stream shows the state armed, then
# refreshing, progress up to 1, the new items, then done — in that order.
source "$(dirname "$0")/lib.sh"
start_server

session=$(new_session '{"preset":"default"}')
listen "$session" "$WORK/events"
curl -s -X POST "$BASE/api/items" -H 'Content-Type: application/json' --data-binary '{"title":"Published before the pull"}' >/dev/null

expect "40 px pulls" "$(sample "$session" 1 -40 | json 'd["state"]["phase"]')" pulling
expect "90 px arms" "$(sample "$session" 2 -90 | json 'd["state"]["label"]')" "Release to refresh"
expect "release refreshes" "$(sample "$session" 3 -90 release | json 'd["state"]["phase"]')" refreshing
wait_for "$WORK/events" '^event: done' 30

events "$WORK/events" >"$WORK/list"
order=$(python3 - "$WORK/list" <<'PY'
import json, sys
seen = []
fractions = []
for line in open(sys.argv[1]):
    _, event, data = line.rstrip("\n").split(" ", 2)
    payload = json.loads(data)
    if event == "state":
        seen.append(payload["phase"])
    elif event == "progress":
        fractions.append(payload["fraction"])
        if seen[-1] != "progress": seen.append("progress")
    else:
        seen.append(event)
        if event == "items": print("first item:", payload["items"][0]["title"], file=sys.stderr)
ok = fractions == sorted(fractions) and fractions[-1] == 1
print(" ".join(s for s in seen if s != "idle"), "monotonic" if ok else "NOT-monotonic")
PY
)
expect "event order" "$order" "pulling armed refreshing progress items done monotonic"
first=$(events "$WORK/events" | awk '$2=="items"' | cut -d' ' -f3- | json 'd["items"][0]["title"]')
expect "the published item is first" "$first" "Published before the pull"
expect "done completed" "$(events "$WORK/events" | awk '$2=="done"' | cut -d' ' -f3- | json 'd["outcome"]')" completed
ids=$(events "$WORK/events" | cut -d' ' -f1 | tr '\n' ' ')
expect "ids increase" "$(echo "$ids" | tr ' ' '\n' | grep -v '^$' | sort -n -c && echo sorted)" sorted
finish
