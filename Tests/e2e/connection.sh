#!/usr/bin/env bash
# HTTP/1.1 on one connection: pipelined requests answered in order whichever part of the
# server answers them, Connection: close honoured, chunked bodies over the limit refused,
# garbage answered with 400, an Upgrade answered as if absent, CONNECT refused, absolute
# targets checked by their authority, HEAD on the stream, and idle connections closed on
# SIGTERM.
source "$(dirname "$0")/lib.sh"
start_server --max-body-bytes 4096
session=$(new_session)
port=${BASE##*:}

# raw BYTES...: sends the request bytes on one connection, prints what came back before
# close or ten seconds of silence. (The last request of a pipeline asks to close, so its
# answer ends the exchange instead of the silence.)
raw() { exchange 10 "$(printf '%s' "$@")"; }

get="GET /api/sessions/$session HTTP/1.1\r\nHost: localhost\r\n\r\n"
body='{"seq":1,"y":-30}'
post="POST /api/sessions/$session/samples HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: ${#body}\r\n\r\n$body"
health="GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n"
last="GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
replies=$(raw "$get" "$post" "$health" "$post" "$last")
expect "five pipelined requests, five answers" "$(grep -o 'HTTP/1.1 200' <<<"$replies" | wc -l)" 5
order=$(grep -o '"openStreams"\|{"state":{\|"status":"ok"' <<<"$replies" | tr '\n' ' ')
expect "in the order asked, router and hot routes mixed" "$order" '"openStreams" {"state":{ "status":"ok" {"state":{ "status":"ok" '
expect "the repeated seq was ignored, not applied twice" "$(curl -s "$BASE/api/sessions/$session" | json 'd["ignoredSamples"]')" 1

closing=$(raw "GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
expect_match "Connection: close is answered" "$closing" '[Cc]onnection: close'

chunked="POST /api/sessions/$session/samples HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
big=$(python3 -c 'print("{\"seq\":2,\"y\":0,\"pad\":\"" + "x"*5000 + "\"}", end="")')
chunked+=$(printf '%x' "${#big}")"\r\n$big\r\n0\r\n\r\n$last"
replies=$(raw "$chunked")
expect_match "a chunked body over the limit → 413" "$replies" '^HTTP/1.1 413'
expect_match "and the connection still answers the next request" "$replies" '"status":"ok"'

expect_match "garbage → 400" "$(raw "NOT HTTP AT ALL\r\n\r\n")" '^HTTP/1.1 400'
expect_match "the date is given" "$(curl -s -D - -o /dev/null "$BASE/healthz")" '[Dd]ate: [A-Z][a-z]{2}, [0-9]{2} [A-Z][a-z]{2} [0-9]{4} [0-9:]{8} GMT'

# An upgrade is answered as if it were not asked for, and the connection goes on: curl's h2c
# attempt on the first URL, then the second on the same connection, both at once.
started=$(date +%s%N)
codes=$(timeout 10 curl -s --http2 -o /dev/null -o /dev/null -w '%{http_code} %{http_version} %{num_connects}\n' "$BASE/healthz" "$BASE/readyz" || true)
elapsed=$(( ($(date +%s%N) - started) / 1000000 ))
expect "curl --http2 with two URLs: both answered in HTTP/1.1 on one connection" "$(tr '\n' ' ' <<<"$codes")" "200 1.1 1 200 1.1 0 "
if [ "$elapsed" -lt 8000 ]; then pass "and without waiting for an upgrade (${elapsed} ms)"; else fail "curl --http2 took ${elapsed} ms"; fi
replies=$(raw "GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n" "$post" "$last")
expect "an Upgrade then two pipelined requests: three answers" "$(grep -o 'HTTP/1.1 200' <<<"$replies" | wc -l)" 3

# CONNECT: refused with a JSON 405 and the connection closed at once, nothing after it read.
replies=$(raw "CONNECT localhost:443 HTTP/1.1\r\nHost: localhost:443\r\n\r\n$health")
expect "CONNECT → 405, closed, the request behind it unanswered" \
    "$(head -n1 <<<"$replies" | tr -d '\r') $(grep -c '"method_not_allowed"' <<<"$replies") $(grep -ci '^connection: close' <<<"$replies") $(grep -c 'status":"ok\|still open' <<<"$replies")" \
    "HTTP/1.1 405 Method Not Allowed 1 1 0"

# An absolute-form target is checked by its authority (RFC 9112 §3.2.2) and routed by its path.
expect_match "GET http://evil.example/healthz → 421" "$(raw "GET http://evil.example/healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")" '^HTTP/1.1 421'
expect_match "GET http://localhost/healthz → 200" "$(raw "GET http://localhost/healthz HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n")" '^HTTP/1.1 200.*'

# HEAD wherever GET is: the event stream's head, no stream opened.
head=$(timeout 5 curl -s -I "$BASE/api/sessions/$session/events" || true)
expect_match "HEAD on the event stream → 200 text/event-stream" "$head" '^HTTP/1.1 200'
expect_match "with the stream's content type" "$head" '[Cc]ontent-[Tt]ype: text/event-stream'
expect "and no stream stays open" "$(curl -s "$BASE/api/sessions/$session" | json 'd["openStreams"]')" 0

# halfclose BYTES: sends them, closes the sending side, prints what came back before EOF
# (or "(still open)" after ten seconds).
halfclose() { exchange 10 "$1" half-close; }
answer=$(halfclose "GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
expect_match "a request then a half-close is answered" "$answer" '"status":"ok"'
expect "and then the connection closes" "$(grep -c 'still open' <<<"$answer")" 0
half=$(halfclose "POST /api/sessions/$session/samples HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
expect "half a request then a half-close: a 400 and closed" "$(head -n1 <<<"$half" | tr -d '\r') $(grep -c 'still open' <<<"$half")" "HTTP/1.1 400 Bad Request 0"

# An idle keep-alive connection does not hold the server up on SIGTERM.
python3 -c "
import socket, time
s = socket.create_connection(('127.0.0.1', $port))
s.sendall(b'GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n')
time.sleep(30)
" &
sleep 0.5
kill -TERM "$SERVER_PID"
# The client holds it for 30 s: an exit within 15 s did not wait for it.
for _ in $(seq 300); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.05; done
if kill -0 "$SERVER_PID" 2>/dev/null; then fail "SIGTERM waited for an idle connection"; else pass "an idle connection is closed on SIGTERM"; fi
SERVER_PID=""
finish
