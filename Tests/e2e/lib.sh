# Shared helpers for the end-to-end scripts: start the built server on a free port, talk
# to it with curl, and count checks. Source it; call `finish` at the end.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BIN=${REFRESH_SERVER:-$ROOT/.build/debug/refresh-server}
WORK=$(mktemp -d)
SERVER_PID=""
PASSED=0
FAILED=0
NAME=$(basename "$0" .sh)

cleanup() {
    [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null || true
    jobs -p | xargs -r kill 2>/dev/null || true
    # Every event stream read, for run.sh to validate against the document's schemas.
    if [ -n "${E2E_EVENTS:-}" ]; then
        # (A script that read no stream has none: grep's "no match" is not a failure.)
        { grep -lsa '^event: ' "$WORK"/* || true; } | while read -r file; do
            cp "$file" "$E2E_EVENTS/$NAME-$(basename "$file")"
        done
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT

# start_server [flags…]: runs refresh-server on port 0 and sets BASE to its URL.
start_server() {
    # Emptied here, not by the background redirection: the address read below is then never
    # an earlier server's.
    : >"$WORK/server.log"
    "$BIN" --port 0 --public "$ROOT/Public" --min-refresh-ms 0 --database "${DATABASE:-:memory:}" "$@" >"$WORK/server.log" 2>&1 &
    SERVER_PID=$!
    wait_for_address
}

# wait_for_address: sets BASE to the URL the server just started prints in
# $WORK/server.log (emptied before it started): the address line in text, its `url` field
# in JSON; exits with its log if it never does.
wait_for_address() {
    # A minute at most: a debug build on a busy machine starts in seconds, not tenths.
    for _ in $(seq 600); do
        BASE=$(grep -o 'http://[0-9.:]*' "$WORK/server.log" | head -n1 || true)
        [ -n "$BASE" ] && return 0
        sleep 0.1
    done
    echo "the server did not start:" >&2
    cat "$WORK/server.log" >&2
    exit 1
}

pass() { PASSED=$((PASSED + 1)); echo "  ok   $1"; }
fail() { FAILED=$((FAILED + 1)); echo "  FAIL $1" >&2; }

# expect DESCRIPTION ACTUAL EXPECTED
expect() {
    if [ "$2" = "$3" ]; then pass "$1"; else fail "$1: got '$2', expected '$3'"; fi
}

# expect_match DESCRIPTION TEXT REGEX
expect_match() {
    if printf '%s' "$2" | grep -Eq -- "$3"; then pass "$1"; else fail "$1: '$2' does not match /$3/"; fi
}

# json EXPRESSION: evaluates a Python expression over the JSON on stdin, bound to `d`.
json() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }

# The API takes JSON bodies only, declared so: curl's --data-binary alone says
# application/x-www-form-urlencoded, which is refused (415).
JSON_TYPE=(-H 'Content-Type: application/json')

# status METHOD PATH [BODY]: the HTTP status; the body goes to $WORK/body.
status() {
    local args=(-s -o "$WORK/body" -w '%{http_code}' -X "$1" "$BASE$2")
    [ $# -ge 3 ] && args+=("${JSON_TYPE[@]}" --data-binary "$3")
    curl "${args[@]}"
}

new_session() { curl -s -X POST "$BASE/api/sessions" "${JSON_TYPE[@]}" --data-binary "${1:-{\}}" | json 'd["id"]'; }

# sample SESSION SEQ Y [PHASE] [EXTRA JSON FIELDS]: posts one sample, prints the state.
sample() {
    curl -s -X POST "$BASE/api/sessions/$1/samples" "${JSON_TYPE[@]}" \
        --data-binary "{\"seq\":$2,\"y\":$3,\"phase\":\"${4:-drag}\"${5:+,$5}}"
}

# listen SESSION FILE [curl flags…]: follows the event stream into FILE in the background.
listen() {
    local session=$1 file=$2
    shift 2
    curl -sN "$@" "$BASE/api/sessions/$session/events" >"$file" &
    wait_for "$file" '^event: state' 30
}

# wait_for FILE REGEX SECONDS: waits until a line of FILE matches; SECONDS bounds the wait
# (half a minute where the suite waits for what the server does at once: a bound, not a
# measure of the machine).
wait_for() {
    local deadline=$((SECONDS + $3))
    until grep -Eq -- "$2" "$1" 2>/dev/null; do
        if [ $SECONDS -ge $deadline ]; then
            fail "no line matching /$2/ in $(basename "$1") within $3 s"
            return 1
        fi
        sleep 0.05
    done
}

# events FILE: one line per event, "ID EVENT DATA".
events() {
    python3 - "$1" <<'PY'
import sys
blocks = open(sys.argv[1]).read().split("\n\n")
for block in blocks:
    fields = {}
    for line in block.split("\n"):
        if ":" in line and not line.startswith(":"):
            key, _, value = line.partition(":")
            fields[key] = value[1:] if value.startswith(" ") else value
    if "event" in fields:
        print(fields.get("id", "-"), fields["event"], fields.get("data", ""))
PY
}

# exchange SECONDS BYTES [half-close]: sends the request bytes on one connection (then, with
# a third argument, closes its sending side), prints what came back until the server
# closed it, or that and "(still open)" after SECONDS of silence.
exchange() {
    python3 - "${BASE##*:}" "$1" "$2" "${3:-}" <<'PY'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.settimeout(float(sys.argv[2]))
s.sendall(sys.argv[3].encode().decode("unicode_escape").encode("latin-1"))
if sys.argv[4]:
    s.shutdown(socket.SHUT_WR)
data = b""
try:
    while chunk := s.recv(65536):
        data += chunk
except socket.timeout:
    data += b"(still open)"
except ConnectionResetError:
    pass
sys.stdout.write(data.decode("latin-1"))
PY
}

# stream_until SESSION FILE REGEX [HEADER]: reads the session's event stream into FILE until
# a line matches REGEX (half a minute at most), then hangs up: a reader that stops when it
# has what it came for, not after a fixed time.
stream_until() {
    python3 - "${BASE##*:}" "$1" "$3" "${4:-}" >"$2" <<'PY'
import http.client, re, sys, time
port, session, pattern, header = sys.argv[1:5]
connection = http.client.HTTPConnection("127.0.0.1", int(port), timeout=30)
headers = dict([header.split(": ", 1)]) if header else {}
connection.request("GET", f"/api/sessions/{session}/events", headers=headers)
response = connection.getresponse()
ends = time.monotonic() + 30
while time.monotonic() < ends:
    line = response.readline()
    if not line:
        break
    sys.stdout.write(line.decode("utf-8", "replace"))
    if re.search(pattern, line.decode("utf-8", "replace")):
        break
connection.close()
PY
}

finish() {
    echo "$NAME: $PASSED passed, $FAILED failed"
    if [ "$PASSED" -eq 0 ]; then
        echo "$NAME: no expectation was checked" >&2
        exit 1
    fi
    [ "$FAILED" -eq 0 ]
}
