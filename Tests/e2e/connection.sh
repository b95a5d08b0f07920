#!/usr/bin/env bash
# HTTP/1.1 on one connection: pipelined requests answered in order whichever part of the
# server answers them, Connection: close honoured, chunked bodies over the limit refused,
# garbage answered with 400, and idle connections closed on SIGTERM.
source "$(dirname "$0")/lib.sh"
start_server --max-body-bytes 4096
session=$(new_session)
port=${BASE##*:}

# raw BYTES...: sends the request bytes on one connection, prints what came back before
# close or a second of silence.
raw() { exchange 1 "$(printf '%s' "$@")"; }

get="GET /api/sessions/$session HTTP/1.1\r\nHost: localhost\r\n\r\n"
body='{"seq":1,"y":-30}'
post="POST /api/sessions/$session/samples HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: ${#body}\r\n\r\n$body"
health="GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n"
replies=$(raw "$get" "$post" "$health" "$post")
expect "four pipelined requests, four answers" "$(grep -o 'HTTP/1.1 200' <<<"$replies" | wc -l)" 4
order=$(grep -o '"openStreams"\|{"state":{\|"status":"ok"' <<<"$replies" | tr '\n' ' ')
expect "in the order asked, router and hot routes mixed" "$order" '"openStreams" {"state":{ "status":"ok" {"state":{ '
expect "the repeated seq was ignored, not applied twice" "$(curl -s "$BASE/api/sessions/$session" | json 'd["ignoredSamples"]')" 1

closing=$(raw "GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
expect_match "Connection: close is answered" "$closing" '[Cc]onnection: close'

chunked="POST /api/sessions/$session/samples HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
big=$(python3 -c 'print("{\"seq\":2,\"y\":0,\"pad\":\"" + "x"*5000 + "\"}", end="")')
chunked+=$(printf '%x' "${#big}")"\r\n$big\r\n0\r\n\r\n$health"
replies=$(raw "$chunked")
expect_match "a chunked body over the limit → 413" "$replies" '^HTTP/1.1 413'
expect_match "and the connection still answers the next request" "$replies" '"status":"ok"'

expect_match "garbage → 400" "$(raw "NOT HTTP AT ALL\r\n\r\n")" '^HTTP/1.1 400'
expect_match "the date is given" "$(curl -s -D - -o /dev/null "$BASE/healthz")" '[Dd]ate: [A-Z][a-z]{2}, [0-9]{2} [A-Z][a-z]{2} [0-9]{4} [0-9:]{8} GMT'

# halfclose BYTES: sends them, closes the sending side, prints what came back before EOF
# (or "(still open)" after two seconds).
halfclose() { exchange 2 "$1" half-close; }
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
for _ in $(seq 40); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.05; done
if kill -0 "$SERVER_PID" 2>/dev/null; then fail "SIGTERM waited for an idle connection"; else pass "an idle connection is closed on SIGTERM"; fi
SERVER_PID=""
finish
