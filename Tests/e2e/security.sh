#!/usr/bin/env bash
# What a web page the user visits cannot do to a server on the user's machine: publish with
# a text/plain or form body (415), change state from another origin (403), reach it under a
# rebound DNS name (421); what the page is served with (CSP, nosniff, no referrer); CORS for
# listed origins only; log lines no request can forge; labels that stay one event line.
source "$(dirname "$0")/lib.sh"
start_server --log-level info --cors-origin http://app.example:3000
PORT=${BASE##*:}
EVIL=(-H 'Origin: https://attacker.example')

# stop_server: ends the running server and drops its log, so the next start_server reads
# the new server's address, not the old one's.
stop_server() {
    kill "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
    rm -f "$WORK/server.log"
}

# The attack as a page would send it: a "simple" cross-site fetch needs no preflight.
code=$(curl -s -o "$WORK/body" -w '%{http_code}' -X POST "$BASE/api/items" -H 'Content-Type: text/plain' \
    --data-binary '{"id":"demo-1","title":"overwritten"}')
expect "a text/plain publish is refused" "$code" 415
expect "as unsupported_media_type" "$(json 'd["error"]' <"$WORK/body")" unsupported_media_type
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST "$BASE/api/items" --data-binary '{"title":"form"}')
expect "a form-encoded publish (curl's default) is refused" "$code" 415
session=$(new_session)
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST "$BASE/api/sessions/$session/samples" -H 'Content-Type: text/plain' \
    --data-binary '{"seq":1,"y":-10,"phase":"drag"}')
expect "a text/plain sample is refused" "$code" 415
expect "a refresh without a body needs no type" "$(curl -s -o /dev/null -w '%{http_code}' -X POST "$BASE/api/sessions/$session/refresh")" 202
expect "a JSON body with a charset is taken" "$(curl -s -o /dev/null -w '%{http_code}' -X POST "$BASE/api/sessions" \
    -H 'Content-Type: application/json; charset=utf-8' --data-binary '{}')" 201

code=$(curl -s -o "$WORK/body" -w '%{http_code}' "${EVIL[@]}" -X POST "$BASE/api/items" "${JSON_TYPE[@]}" --data-binary '{"title":"x"}')
expect "a publish from another origin is refused" "$code" 403
expect "as cross_origin" "$(json 'd["error"]' <"$WORK/body")" cross_origin
expect "Origin: null is refused" "$(curl -s -o /dev/null -w '%{http_code}' -H 'Origin: null' -X DELETE "$BASE/api/sessions/$session")" 403
expect "Sec-Fetch-Site: cross-site is refused" \
    "$(curl -s -o /dev/null -w '%{http_code}' -H 'Sec-Fetch-Site: cross-site' -X POST "$BASE/api/sessions/$session/load-more")" 403
expect "the page's own origin is served" "$(curl -s -o /dev/null -w '%{http_code}' -H "Origin: http://127.0.0.1:$PORT" \
    -X POST "$BASE/api/sessions/$session/samples" "${JSON_TYPE[@]}" --data-binary '{"seq":2,"y":0,"phase":"drag"}')" 200
expect "no item was overwritten" "$(curl -s "$BASE/api/items?limit=200" | json 'sum(i["title"] in ("overwritten", "form", "x") for i in d["items"])')" 0

# DNS rebinding: the attacker's name, whatever the route.
for path in / /app.js /healthz /api/items "/api/sessions/$session/events"; do
    code=$(curl -s --max-time 3 -o "$WORK/body" -w '%{http_code}' -H 'Host: attacker.example' "$BASE$path" || true)
    expect "Host attacker.example on $path is misdirected" "$code $(json 'd["error"]' <"$WORK/body")" "421 unknown_host"
done
expect "a sample under another name is misdirected" "$(curl -s -o /dev/null -w '%{http_code}' -H 'Host: attacker.example' \
    -X POST "$BASE/api/sessions/$session/samples" "${JSON_TYPE[@]}" --data-binary '{"seq":3,"y":0,"phase":"drag"}')" 421
expect "localhost with any port is served" "$(curl -s -o /dev/null -w '%{http_code}' -H 'Host: localhost:1' "$BASE/healthz")" 200
answer=$(exchange 3 "GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n")
expect "HTTP/1.1 without Host is a 400" "$(head -n1 <<<"$answer" | tr -d '\r')" "HTTP/1.1 400 Bad Request"

# Headers of the page and of every answer.
curl -s -D "$WORK/page.headers" -o /dev/null "$BASE/"
header() { grep -i "^$1:" "$2" | head -n1 | cut -d: -f2- | tr -d '\r' | sed 's/^ *//' || true; }
expect_match "the page has a strict CSP" "$(header Content-Security-Policy "$WORK/page.headers")" "^default-src 'self'; script-src 'self';.*frame-ancestors 'none'"
expect "the page is not sniffed" "$(header X-Content-Type-Options "$WORK/page.headers")" nosniff
expect "the page sends no referrer" "$(header Referrer-Policy "$WORK/page.headers")" no-referrer
curl -s -D "$WORK/json.headers" -o /dev/null "$BASE/api/items"
expect "JSON is not sniffed either" "$(header X-Content-Type-Options "$WORK/json.headers")" nosniff

# CORS: the listed origin gets preflights and the header, others nothing.
curl -s -D "$WORK/preflight.headers" -o /dev/null -X OPTIONS "$BASE/api/sessions/$session/samples" \
    -H 'Origin: http://app.example:3000' -H 'Access-Control-Request-Method: POST' -H 'Access-Control-Request-Headers: content-type'
expect "a listed origin's preflight is answered" "$(head -n1 "$WORK/preflight.headers" | tr -d '\r')" "HTTP/1.1 204 No Content"
expect "with its origin" "$(header Access-Control-Allow-Origin "$WORK/preflight.headers")" "http://app.example:3000"
expect "and the path's methods" "$(header Access-Control-Allow-Methods "$WORK/preflight.headers")" POST
expect "and credentials allowed (the page's cookie)" "$(header Access-Control-Allow-Credentials "$WORK/preflight.headers")" true
# The stream's head, read until its blank line; the stream itself is then let go.
curl -s -N -D "$WORK/stream.headers" -o /dev/null --max-time 5 -H 'Origin: http://app.example:3000' "$BASE/api/sessions/$session/events" &
wait_for "$WORK/stream.headers" $'^\r$' 30 || true
kill $! 2>/dev/null || true
expect "its event stream carries the header" "$(header Access-Control-Allow-Origin "$WORK/stream.headers")" "http://app.example:3000"
expect "and allows credentials" "$(header Access-Control-Allow-Credentials "$WORK/stream.headers")" true
expect "another origin's preflight is not" "$(curl -s -o /dev/null -w '%{http_code}' -X OPTIONS "${EVIL[@]}" \
    -H 'Access-Control-Request-Method: POST' "$BASE/api/items")" 405
curl -s -D "$WORK/evil.headers" -o /dev/null "${EVIL[@]}" "$BASE/api/items"
expect "another origin's read gets no CORS header" "$(header Access-Control-Allow-Origin "$WORK/evil.headers")" ""
expect "nor credentials" "$(header Access-Control-Allow-Credentials "$WORK/evil.headers")" ""
# Two Origin fields, another origin's first: refused at once, not left unanswered.
# (It asks to close, so the answer ends the exchange rather than 3 s of silence.)
twice=$(exchange 3 "OPTIONS /api/sessions HTTP/1.1\r\nHost: localhost\r\nOrigin: https://attacker.example\r\nOrigin: http://app.example:3000\r\nAccess-Control-Request-Method: POST\r\nConnection: close\r\n\r\n")
expect "a preflight with two Origin fields → 400 bad_origin" "$(head -n1 <<<"$twice" | tr -d '\r') $(grep -c '"bad_origin"' <<<"$twice")" "HTTP/1.1 400 Bad Request 1"
expect "and no CORS header" "$(grep -ci '^access-control-allow-origin' <<<"$twice")" 0

# Labels a client chose stay one data: line each and never markup.
label='Pull\n\ndata: {\"forged\":true}\r\n</script><img src=x onerror=alert(1)>\u2028end'
hostile=$(new_session "{\"config\":{\"top\":{\"labels\":{\"pull\":\"$label\"}}}}")
listen "$hostile" "$WORK/hostile.events"
sample "$hostile" 1 -20 >/dev/null
wait_for "$WORK/hostile.events" '"seq":1' 30
block=$(python3 -c 'import sys; print([b for b in open(sys.argv[1], encoding="utf-8").read().split("\n\n") if "\"seq\":1" in b][0])' "$WORK/hostile.events")
expect "the label's event has one data: line" "$(grep -c '^data:' <<<"$block")" 1
expect "and no other kind of line" "$(grep -cv '^\(id\|event\|data\):' <<<"$block")" 0
expect "and no markup" "$(grep -c '[<>]' <<<"$block")" 0
expect "the label arrives as it was given" "$(grep '^data:' <<<"$block" | cut -d: -f2- | json 'd["label"] == "Pull\n\ndata: {\"forged\":true}\r\n</script><img src=x onerror=alert(1)>\u2028end"')" True

# Log lines: %0A and %0D in a path or a query become \n and \r, never a line of their own,
# in the text format and in JSON.
for format in text json; do
    stop_server
    start_server --log-format "$format" --log-level info
    forged='%0A2026-01-01T00:00:00%2B0000%20critical%20refresh-server%3A%20forged%0D%0A'
    curl -s -o /dev/null "$BASE/api/items?before=x$forged"
    curl -s -o /dev/null "$BASE/nothing$forged"
    curl -s -o /dev/null "$BASE/api/sessions/abc$forged%1B%5B31m"
    for _ in $(seq 50); do [ "$(grep -c 'refused' "$WORK/server.log")" -ge 3 ] && break; sleep 0.1; done
    expect "$format: three refusals, three lines" "$(grep -c 'refused' "$WORK/server.log")" 3
    expect "$format: no line was forged" "$(grep -c '^2026-01-01T00:00:00+0000 critical' "$WORK/server.log")" 0
    expect "$format: no raw carriage return or escape" "$(grep -c $'[\r\x1b]' "$WORK/server.log")" 0
    if [ "$format" = json ]; then
        expect "json: every line parses" "$(grep -v '^refresh-server listening' "$WORK/server.log" | python3 -c '
import json, sys
print(all(json.loads(line) for line in sys.stdin))')" True
    else
        expect_match "text: the newline is written as \\n" "$(grep 'refused GET /api/items' "$WORK/server.log")" 'x\\n2026-01-01T00:00:00\+0000 critical refresh-server: forged\\r\\n'
    fi
done

# Beyond loopback the server needs a publish token, or to be told it takes no publishes.
set +e
"$BIN" --host 0.0.0.0 --port 0 --database :memory: --public "$ROOT/Public" >"$WORK/open.log" 2>&1
code=$?
set -e
expect "--host 0.0.0.0 without a token does not start" "$code" 78
expect_match "and says why" "$(cat "$WORK/open.log")" '^Error: --host 0.0.0.0: listening beyond loopback needs --publish-token'
stop_server
start_server --host 0.0.0.0 --disable-publishing
BASE=http://127.0.0.1:${BASE##*:}
code=$(curl -s -o "$WORK/body" -w '%{http_code}' -X POST "$BASE/api/items" "${JSON_TYPE[@]}" --data-binary '{"title":"x"}')
expect "--disable-publishing starts and refuses publishes" "$code $(json 'd["error"]' <"$WORK/body")" "403 publishing_disabled"
expect "a wildcard server answers an IP literal" "$(curl -s -o /dev/null -w '%{http_code}' -H 'Host: 192.0.2.7:8080' "$BASE/healthz")" 200
expect "and refuses a name it was not given" "$(curl -s -o /dev/null -w '%{http_code}' -H 'Host: attacker.example' "$BASE/healthz")" 421
stop_server
PTR_PUBLIC_HOST=b.example start_server --public-host app.example
expect "a --public-host name is served" "$(curl -s -o /dev/null -w '%{http_code}' -H 'Host: app.example' "$BASE/healthz")" 200
expect "the flag wins over PTR_PUBLIC_HOST" "$(curl -s -o /dev/null -w '%{http_code}' -H 'Host: b.example' "$BASE/healthz")" 421
stop_server
PTR_PUBLIC_HOST=b.example,c.example start_server
expect "PTR_PUBLIC_HOST names are served" "$(curl -s -o /dev/null -w '%{http_code}' -H 'Host: c.example' "$BASE/healthz")" 200
stop_server
# --host localhost binds a loopback address, which a browser may well be pointed at by number.
start_server --host localhost
# The address line says localhost, which wait_for_address does not read.
for _ in $(seq 50); do port=$(grep -o 'localhost:[0-9]*' "$WORK/server.log" | cut -d: -f2 || true); [ -n "$port" ] && break; sleep 0.1; done
BASE=http://localhost:$port
for name in "127.0.0.1:$port" "[::1]:$port" "localhost:$port"; do
    expect "--host localhost answers Host $name, the page included" \
        "$(curl -s -o /dev/null -w '%{http_code}' -H "Host: $name" "$BASE/healthz") $(curl -s -o /dev/null -w '%{http_code}' -H "Host: $name" "$BASE/")" "200 200"
done
expect "and still refuses another name" "$(curl -s -o /dev/null -w '%{http_code}' -H 'Host: attacker.example' "$BASE/healthz")" 421
finish
