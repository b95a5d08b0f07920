#!/usr/bin/env bash
# Every bad input of the contract answers its 4xx with a JSON error and changes nothing.
source "$(dirname "$0")/lib.sh"
start_server --max-samples-per-request 8 --max-sessions 3 --max-body-bytes 4096 --max-samples-per-second 40

session=$(new_session)
sample "$session" 1 -40 >/dev/null
before=$(curl -s "$BASE/api/sessions/$session" | json 'd["state"]')

refuse() { # DESCRIPTION EXPECTED-STATUS EXPECTED-CODE BODY
    local code
    code=$(status POST "/api/sessions/$session/samples" "$4")
    expect "$1 → $2" "$code $(json 'd["error"]' <"$WORK/body")" "$2 $3"
}
refuse "malformed JSON" 400 malformed_json '{"seq":'
refuse "empty body" 400 malformed_json ''
refuse "y as a string" 400 invalid_type '{"seq":2,"y":"-90"}'
refuse "seq missing" 400 missing_field '{"y":-90}'
refuse "unknown phase" 400 invalid_value '{"seq":2,"y":-90,"phase":"fling"}'
refuse "NaN" 422 out_of_range '{"seq":2,"y":NaN}'
refuse "Infinity" 422 out_of_range '{"seq":2,"y":-Infinity}'
refuse "1e999" 422 out_of_range '{"seq":2,"y":-1e999}'
refuse "|y| > 10^7" 422 out_of_range '{"seq":2,"y":-10000001}'
refuse "negative height" 422 out_of_range '{"seq":2,"y":0,"contentHeight":-1}'
refuse "one bad sample in a batch" 422 out_of_range '{"samples":[{"seq":2,"y":-90},{"seq":3,"y":-90,"phase":"release"},{"seq":4,"y":NaN}]}'
many=$(python3 -c 'import json; print(json.dumps({"samples":[{"seq":i,"y":0} for i in range(2,12)]}))')
refuse "too many samples" 429 too_many_samples "$many"
big=$(python3 -c 'print("{\"seq\":2,\"y\":0,\"pad\":\"" + "x"*5000 + "\"}")')
refuse "a body over the limit" 413 body_too_large "$big"
retry=$(curl -s -D - -o /dev/null -X POST "$BASE/api/sessions/$session/samples" -H "Content-Type: application/json" --data-binary "$many" | grep -i '^retry-after' | tr -d '\r')
expect_match "429 says when to retry" "$retry" '^[Rr]etry-[Aa]fter: [0-9]+$'
expect "unknown session → 404" "$(status POST /api/sessions/0000/samples '{"seq":1,"y":0}') $(json 'd["error"]' <"$WORK/body")" "404 session_not_found"
expect "the state is unchanged" "$(curl -s "$BASE/api/sessions/$session" | json 'd["state"]')" "$before"
expect "no refresh started" "$(curl -s "$BASE/api/sessions/$session" | json 'd["state"]["phase"]')" pulling

expect "bad preset → 400" "$(status POST /api/sessions '{"preset":"android"}')" 400
expect "bad config → 422" "$(status POST /api/sessions '{"config":{"top":{"threshold":-1}}}')" 422
new_session >/dev/null
new_session >/dev/null
expect "too many sessions → 503" "$(status POST /api/sessions '{}') $(json 'd["error"]' <"$WORK/body")" "503 too_many_sessions"
expect "with Retry-After" "$(curl -s -D - -o /dev/null -X POST "$BASE/api/sessions" | grep -ci '^retry-after')" 1

# Twenty batches of 8 from one curl process, back to back on one connection: 160 samples in
# far less than the three seconds a 40/s bucket would need, however slow the machine.
rate_args=()
for i in $(seq 1 20); do
    first=$((1000 + i * 8))
    body=$(python3 -c "import json,sys; print(json.dumps({'samples':[{'seq':i,'y':-1} for i in range(int(sys.argv[1]), int(sys.argv[1])+8)]}))" "$first")
    [ "$i" -gt 1 ] && rate_args+=(--next)
    rate_args+=(-s -o "$WORK/rate.$i" -w '%{http_code}\n' -X POST "$BASE/api/sessions/$session/samples" -H "Content-Type: application/json" --data-binary "$body")
done
codes=$(curl "${rate_args[@]}")
first_429=$(echo "$codes" | grep -n "^429$" | head -1 | cut -d: -f1 || true)
expect "samples too fast → 429" "$([ -n "$first_429" ] && echo 429) $(json 'd["error"]' <"$WORK/rate.${first_429:-1}")" "429 rate_limited"
expect "the server never answered 500" "$(grep -c ' 500 ' "$WORK/server.log" || true)" 0
expect_match "each refusal is logged on one line" "$(grep -c 'refused POST' "$WORK/server.log")" '^[1-9][0-9]*$'
kill -0 "$SERVER_PID" && pass "the server is still running"
finish
