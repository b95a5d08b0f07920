#!/usr/bin/env bash
# Settings from the environment only, from a configuration file only, and from all three
# with a flag winning over the variable and the variable over the file; each proven by a
# limit that takes effect (the session past --max-sessions is refused). A bad value in a
# flag, a variable or the file stops the server at once with one line naming it.
source "$(dirname "$0")/lib.sh"

# Only what each case sets: nothing inherited from the shell running the tests.
while read -r variable; do unset "$variable"; done < <(compgen -e | grep '^PTR_' || true)
unset DATABASE_URL

# serve [VAR=VALUE…] [flags…]: starts the server with exactly these variables and flags
# (none of start_server's), and sets BASE.
serve() {
    local variables=()
    while [ $# -gt 0 ] && [[ $1 == [A-Z]*=* ]]; do variables+=("$1"); shift; done
    : >"$WORK/server.log"  # so the address read below is never an earlier server's
    env "${variables[@]}" "$BIN" "$@" >"$WORK/server.log" 2>&1 &
    SERVER_PID=$!
    wait_for_address
}

stop() {
    kill -TERM "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
    SERVER_PID=""
}

# sessions N: the statuses of N new sessions, one after the other.
sessions() {
    local statuses=()
    for _ in $(seq "$1"); do statuses+=("$(status POST /api/sessions '{}')"); done
    echo "${statuses[*]}"
}

# refused DESCRIPTION STATUS EXPECTED-LINE [VAR=VALUE…] [flags…]: the server must exit at
# once with that status (78, EX_CONFIG, for a setting that cannot work; 64 for a flag that
# does not parse) and exactly that one line on standard error.
refused() {
    local description=$1 expected=$2 line=$3 variables=()
    shift 3
    while [ $# -gt 0 ] && [[ $1 == [A-Z]*=* ]]; do variables+=("$1"); shift; done
    local code=0
    env "${variables[@]}" timeout 20 "$BIN" "$@" >"$WORK/refused.out" 2>"$WORK/refused.err" || code=$?
    expect "$description: exit status" "$code" "$expected"
    expect "$description: one line on standard error" "$(cat "$WORK/refused.err")" "$line"
}

public=(PTR_PUBLIC="$ROOT/Public" PTR_DATABASE=:memory: PTR_PORT=0)

echo "-- the environment only"
serve "${public[@]}" PTR_MAX_SESSIONS=1 PTR_MIN_REFRESH_MS=0
expect "PTR_MAX_SESSIONS=1: the second session is refused" "$(sessions 2)" "201 503"
stop
serve PTR_PUBLIC="$ROOT/Public" PTR_PORT=0 DATABASE_URL="$WORK/url.sqlite"
expect "DATABASE_URL names the store" "$(test -f "$WORK/url.sqlite" && echo created)" created
stop
serve PTR_PUBLIC="$ROOT/Public" PTR_PORT=0 DATABASE_URL="$WORK/url2.sqlite" PTR_DATABASE="$WORK/ptr.sqlite"
expect "PTR_DATABASE wins over DATABASE_URL" "$(test -f "$WORK/ptr.sqlite" && ! test -e "$WORK/url2.sqlite" && echo yes)" yes
stop

echo "-- a configuration file only"
cat >"$WORK/config.json" <<JSON
{
    "port": 0,
    "public": "$ROOT/Public",
    "database": ":memory:",
    "max-sessions": 1,
    "trusted-proxy": ["10.0.0.1", "fd00::/8"]
}
JSON
serve --config "$WORK/config.json"
expect "--config: the second session is refused" "$(sessions 2)" "201 503"
stop
serve PTR_CONFIG="$WORK/config.json"
expect "PTR_CONFIG: the second session is refused" "$(sessions 2)" "201 503"
stop

echo "-- a flag over a variable over the file"
serve PTR_CONFIG="$WORK/config.json" PTR_MAX_SESSIONS=2
expect "the variable wins over the file" "$(sessions 3)" "201 201 503"
stop
serve PTR_CONFIG="$WORK/config.json" PTR_MAX_SESSIONS=2 --max-sessions 3
expect "the flag wins over the variable and the file" "$(sessions 4)" "201 201 201 503"
stop

echo "-- a bad value in each source"
refused "a flag" 78 "Error: --port 70000: must be 0…65535" "${public[@]}" --port 70000
refused "a flag that is not a number" 64 "Error: The value 'abc' is invalid for '--max-streams <count>'" "${public[@]}" --max-streams abc
refused "a variable" 78 "Error: PTR_MAX_STREAMS=abc: not a whole number" "${public[@]}" PTR_MAX_STREAMS=abc
refused "a variable out of range" 78 "Error: PTR_HEAD_POLL=0: must be at least 0.1 and at most 31536000 seconds (a year)" "${public[@]}" PTR_HEAD_POLL=0
echo '{"max-streams": 0}' >"$WORK/bad.json"
refused "the file" 78 "Error: $WORK/bad.json: max-streams: must be at least 1" "${public[@]}" --config "$WORK/bad.json"
echo '{"max-stream": 10}' >"$WORK/misspelt.json"
refused "a misspelt key in the file" 78 \
    "Error: $WORK/misspelt.json: max-stream: not a setting (a key is a flag's name without the dashes, such as \"max-streams\")" \
    "${public[@]}" PTR_CONFIG="$WORK/misspelt.json"
refused "a file that is not there" 78 "Error: $WORK/none.json: no such file" "${public[@]}" --config "$WORK/none.json"
refused "a trusted proxy" 78 "Error: --trusted-proxy: 10.0.0.300 is not an IP address or a CIDR network (such as 10.0.0.0/8)" \
    "${public[@]}" --trusted-proxy 10.0.0.300
refused "an instance name" 78 "Error: PTR_INSTANCE=eu_1: must be 1 to 32 letters, digits or '-'" "${public[@]}" PTR_INSTANCE=eu_1

echo "-- an unusable --database"
mkdir -p "$WORK/db-folder"
refused "a folder" 78 "Error: database $WORK/db-folder: is a folder; name a file in it, such as $WORK/db-folder/refresh.sqlite" \
    PTR_PUBLIC="$ROOT/Public" PTR_PORT=0 --database "$WORK/db-folder"
echo "not a database" >"$WORK/db-file"
refused "a path under a file" 78 "Error: database $WORK/db-file/refresh.sqlite: $WORK/db-file is a file, not a folder" \
    PTR_PUBLIC="$ROOT/Public" PTR_PORT=0 PTR_DATABASE="$WORK/db-file/refresh.sqlite"

echo "-- values that passed once and then trapped, spun or misled"
refused "a page size whose page + 1 overflows" 78 "Error: --page-size 9223372036854775807: must be 1…1000" "${public[@]}" --page-size 9223372036854775807
refused "a rate under one sample a second" 78 "Error: --max-samples-per-second 1e-19: must be a number from 1 to 1000000000000" \
    "${public[@]}" --max-samples-per-second 1e-19
refused "a keepalive tick that spins" 78 "Error: --keepalive 1e-06: must be at least 1 and at most 31536000 seconds (a year)" \
    "${public[@]}" --keepalive 0.000001
refused "a replay buffer under a kilobyte" 78 "Error: PTR_REPLAY_BUFFER_BYTES=100: must be at least 1024" "${public[@]}" PTR_REPLAY_BUFFER_BYTES=100
refused "a public folder that is not there" 78 "Error: --public $WORK/nowhere: no such folder" PTR_DATABASE=:memory: PTR_PORT=0 --public "$WORK/nowhere"
refused "a public folder that is a file" 78 "Error: PTR_PUBLIC=$WORK/config.json: is not a folder" PTR_DATABASE=:memory: PTR_PORT=0 PTR_PUBLIC="$WORK/config.json"

# The default folder missing: the server starts (the API works), with one warning naming --public.
mkdir -p "$WORK/elsewhere"
(cd "$WORK/elsewhere" && exec env PTR_DATABASE=:memory: PTR_PORT=0 "$BIN" >"$WORK/server.log" 2>&1) &
SERVER_PID=$!
wait_for_address
expect "without Public the API answers" "$(status GET /healthz)" 200
expect "and the page is 404" "$(status GET /)" 404
expect "one warning line, naming --public" "$(grep -c 'warning' "$WORK/server.log") $(grep -c -- '--public' "$WORK/server.log")" "1 1"
stop

# A mistyped variable is named at start, with the setting it most likely meant.
serve "${public[@]}" PTR_MAX_STREAM=5 PTR_MAX_SESSION=1
expect "one warning line for the unknown variables" "$(grep -c 'warning' "$WORK/server.log")" 1
expect_match "naming each, with a suggestion" "$(cat "$WORK/server.log")" 'PTR_MAX_SESSION \(PTR_MAX_SESSIONS\?\), PTR_MAX_STREAM \(PTR_MAX_STREAMS\?\) are not settings and are ignored'
expect "and the server runs with its defaults" "$(sessions 2)" "201 201"
stop

echo "-- --help"
help=$("$BIN" --help)
# Its lines are wrapped at 80 columns: what a line break may split is read as words.
help_words=$(printf '%s' "$help" | tr -s ' \n' ' ')
expect_match "--help shows a default and its variable" "$help_words" 'default: 8080; env: PTR_PORT'
expect_match "--help names --instance" "$help" '--instance <name>'
expect_match "--help names --head-poll" "$help" '--head-poll <seconds>'
expect_match "--help names --replay-buffer-bytes with its default" "$help_words" 'default: 1048576; env: PTR_REPLAY_BUFFER_BYTES'
finish
