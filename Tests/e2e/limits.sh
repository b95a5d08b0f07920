#!/usr/bin/env bash
# Connection limits: half request heads closed at the head deadline (a stalled body gets
# a 408) while /healthz stays fast, an oversized head refused with 431, idle keep-alive
# connections closed, running out of file descriptors handled without spinning a core, sessions and
# streams limited per client address (a stream over capacity gets 200 + retry: + close,
# never 503/429), and X-Forwarded-For believed only from a trusted proxy.
# Its bounds on time and CPU are the server's, so it runs the release build, brought up to
# date first: a debug build is several times slower at everything. Each bound tells a
# behaviour from its failure with room for a busy machine: /healthz answered within a second
# through a storm of stalled heads (one queued behind them would wait for their 2 s
# deadline), the heads closed by their deadline and not the idle one, under 20 % of a core
# of CPU time without file descriptors (a spinning accept loop takes a whole one).
if [ -z "${REFRESH_SERVER:-}" ]; then
    (cd "$(dirname "$0")/../.." && swift build -c release --product refresh-server >/dev/null)
    REFRESH_SERVER=$(cd "$(dirname "$0")/../.." && swift build -c release --show-bin-path)/refresh-server
    export REFRESH_SERVER
fi
source "$(dirname "$0")/lib.sh"

# Thousands of connections: this shell, the clients and the servers need the descriptors.
hard=$(ulimit -Hn)
if [ "$hard" = unlimited ] || [ "$hard" -ge 8192 ]; then ulimit -Sn 8192; else ulimit -Sn "$hard"; fi
fds=$(ulimit -Sn)
if [ "$fds" -lt 2600 ]; then
    echo "$NAME: needs 2600 file descriptors, the hard limit is $hard" >&2
    exit 1
fi

# stop_server: SIGTERM, then SIGKILL if it is still running two seconds later.
stop_server() {
    kill -TERM "$SERVER_PID" 2>/dev/null || true
    for _ in $(seq 40); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.05; done
    kill -KILL "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
    SERVER_PID=""
}

# below A B: A and B are decimals and A < B.
below() {
    [[ $1 =~ ^[0-9]+(\.[0-9]+)?$ && $2 =~ ^[0-9]+(\.[0-9]+)?$ ]] && awk -v a="$1" -v b="$2" 'BEGIN { exit !(a < b) }'
}

# check DESCRIPTION COMMAND…: passes when the command succeeds.
check() {
    local what=$1
    shift
    if "$@"; then pass "$what"; else fail "$what"; fi
}

# header NAME FILE: the value of a response header in a file written by curl -D.
header() { grep -i "^$1:" "$2" | head -n1 | cut -d: -f2- | tr -d '\r' | sed 's/^ *//' || true; }

# ---------------------------------------------------------------------------------------
echo "-- request heads: deadline and size"
start_server --request-head-timeout 2 --max-head-bytes 1024
port=${BASE##*:}

small=$(printf '%*s' 800 '' | tr ' ' a)
answer=$(exchange 3 "GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Pad: $small\r\n\r\n")
expect_match "a head under --max-head-bytes is answered" "$answer" '^HTTP/1.1 200'
large=$(printf '%*s' 2000 '' | tr ' ' a)
answer=$(exchange 10 "GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Pad: $large\r\n\r\n")
expect_match "a head over --max-head-bytes 1024 → 431" "$answer" '^HTTP/1.1 431'
expect_match "with a JSON error" "$answer" '"error" *:'
expect "and the connection is closed" "$(grep -c 'still open' <<<"$answer" || true)" 0

answer=$(exchange 15 "POST /api/sessions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
expect_match "a body that never arrives → 408 at the deadline" "$answer" '^HTTP/1.1 408'
expect "and the connection is closed" "$(grep -c 'still open' <<<"$answer" || true)" 0

# /healthz, one fresh connection every 100 ms until the stop file appears (30 s at most);
# prints how many probes ran, how many failed and the slowest in milliseconds.
python3 - "$port" "$WORK/probe.stop" "$WORK/probe.answered" >"$WORK/probe" <<'PY' &
import os, socket, sys, time
port, stop, answered = int(sys.argv[1]), sys.argv[2], open(sys.argv[3], "w")
request = b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
probes, failures, slowest = 0, 0, 0.0
ends = time.monotonic() + 30
while time.monotonic() < ends and not os.path.exists(stop):
    started = time.monotonic()
    reply = b""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
            s.sendall(request)
            while b'"status":"ok"' not in reply:
                chunk = s.recv(4096)
                if not chunk:
                    break
                reply += chunk
    except OSError:
        pass
    took = time.monotonic() - started
    probes += 1
    if not (reply.startswith(b"HTTP/1.1 200") and b'"status":"ok"' in reply):
        failures += 1
    else:
        # When it was answered, on the clock every process here shares.
        print(f"{time.monotonic():.6f}", file=answered, flush=True)
    slowest = max(slowest, took)
    time.sleep(max(0.0, 0.1 - took))
print(probes, failures, f"{slowest * 1000:.0f}")
PY
probe_pid=$!

# COUNT connections each send half a request head and then nothing; prints how many were
# opened, how many the server closed, the longest and shortest time from the half head to
# the close in seconds, how many got a 408, and how many of the first 50 got a 408 with a
# JSON body.
python3 - "$port" 2000 >"$WORK/halfheads" <<'PY'
import resource, selectors, socket, sys, time
port, count = int(sys.argv[1]), int(sys.argv[2])
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
wanted = count + 256 if hard == resource.RLIM_INFINITY else min(count + 256, hard)
if soft != resource.RLIM_INFINITY and soft < wanted:
    resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))

half = b"GET /healthz HTTP/1.1\r\nHo"
selector = selectors.DefaultSelector()
sent_at, closed_at, replies = {}, {}, {}

def drain(timeout):
    for key, _ in selector.select(timeout):
        s, i = key.fileobj, key.data
        try:
            chunk = s.recv(65536)
        except BlockingIOError:
            continue
        except OSError:
            chunk = b""
        if chunk:
            replies[i] += chunk
            continue
        closed_at[i] = time.monotonic()
        selector.unregister(s)
        s.close()

opening_ends = time.monotonic() + 60
for i in range(count):
    if time.monotonic() > opening_ends:
        break
    s = None
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=3)
        s.sendall(half)
    except OSError:
        if s is not None:
            s.close()
        continue
    sent_at[i] = time.monotonic()
    replies[i] = b""
    s.setblocking(False)
    selector.register(s, selectors.EVENT_READ, i)
    if i % 100 == 99:
        drain(0)
        time.sleep(0.01)  # a burst, not one deep accept queue: all are still open together

if sent_at:
    waiting_ends = max(sent_at.values()) + 20
    while len(closed_at) < len(sent_at) and time.monotonic() < waiting_ends:
        drain(max(0.0, waiting_ends - time.monotonic()))

def json_408(reply):
    head, _, body = reply.partition(b"\r\n\r\n")
    return head.startswith(b"HTTP/1.1 408") and b"application/json" in head.lower() and b'"error"' in body

lifetimes = [closed_at[i] - sent_at[i] for i in closed_at]
answered = sum(1 for i in closed_at if replies[i].startswith(b"HTTP/1.1 408"))
sample = sorted(sent_at)[:50]
print(len(sent_at), len(closed_at), f"{max(lifetimes, default=0):.2f}", f"{min(lifetimes, default=0):.2f}",
      answered, sum(1 for i in sample if json_408(replies[i])),
      f"{min(sent_at.values(), default=0):.6f}", f"{min(closed_at.values(), default=0):.6f}")
PY
touch "$WORK/probe.stop"
wait "$probe_pid" || true
read -r opened closed slowest earliest answered sampled first_sent first_closed <"$WORK/halfheads" || true
read -r probes failures worst <"$WORK/probe" || true
# Probes answered while every half head was still open: a server that waited behind them
# would answer none before the deadline closed the first.
meanwhile=$(awk -v from="${first_sent:-0}" -v to="${first_closed:-0}" '$1 > from && $1 < to' "$WORK/probe.answered" | wc -l)
expect "2000 connections sent half a head; the server closed them all" "$closed of $opened" "2000 of 2000"
check "by the 2 s head deadline, not the 60 s idle one (the last after ${slowest} s)" below "$slowest" 15
check "none before the deadline (the first after ${earliest} s)" below 1.5 "$earliest"
expect "closed without an answer: nothing was asked ($answered of $opened got a 408)" "$answered" 0
expect "/healthz answered throughout ($probes probes)" "$failures" 0
check "without waiting behind them: $meanwhile answered while they all stood open (the slowest ${worst} ms)" below 2 "$meanwhile"
[ "$probes" -ge 10 ] && pass "probed every 100 ms while waiting" || fail "only $probes probes ran"
stop_server

# ---------------------------------------------------------------------------------------
echo "-- out of file descriptors"
# The server alone runs under 1024 descriptors: the soft limit is lowered for its start only.
ulimit -Sn 1024
start_server
ulimit -Sn "$fds"
port=${BASE##*:}

# COUNT connection attempts held open while the server's CPU time is read from /proc over
# three seconds; prints how many were attempted, how many connected, and the CPU share of
# one core in percent (or "gone" if the server is not running).
python3 - "$port" "$SERVER_PID" 1500 >"$WORK/exhaust" <<'PY'
import errno, os, resource, socket, sys, time
port, pid, count = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
wanted = count + 256 if hard == resource.RLIM_INFINITY else min(count + 256, hard)
if soft != resource.RLIM_INFINITY and soft < wanted:
    resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))

held = []
for _ in range(count):
    s = socket.socket()
    s.setblocking(False)
    if s.connect_ex(("127.0.0.1", port)) in (0, errno.EINPROGRESS):
        held.append(s)
    else:
        s.close()
time.sleep(1.0)  # the server accepts what it can and runs out

ticks = os.sysconf("SC_CLK_TCK")
def cpu_seconds():
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / ticks  # utime, stime

try:
    used, started = cpu_seconds(), time.monotonic()
    time.sleep(3.0)
    used, took = cpu_seconds() - used, time.monotonic() - started
    share = f"{100 * used / took:.1f}"
except OSError:
    share = "gone"
connected = 0
for s in held:
    try:
        s.getpeername()
        connected += 1
    except OSError:
        pass
print(len(held), connected, share)
for s in held:
    s.close()
PY
read -r attempted connected share <"$WORK/exhaust" || true
expect "1500 connection attempts held against a server limited to 1024 descriptors" "$attempted" 1500
check "it uses under 20 % of a core meanwhile (${share} %, $connected connected)" below "$share" 20
logged=$(grep -ci 'file descriptors' "$WORK/server.log" || true)
[ "$logged" -ge 1 ] && pass "the log says it ran out of file descriptors" || fail "no log line about file descriptors"
[ "$logged" -le 6 ] && pass "per episode, not per refused accept ($logged lines)" || fail "$logged log lines about file descriptors"
started=$(date +%s%N)
recovered=""
for _ in $(seq 150); do
    if [ "$(curl -s -m 5 "$BASE/healthz" || true)" = '{"status":"ok"}' ]; then
        recovered=$((($(date +%s%N) - started) / 1000000))
        break
    fi
    [ $(($(date +%s%N) - started)) -ge 30000000000 ] && break
    sleep 0.2
done
[ -n "$recovered" ] && pass "served again once they are closed (after ${recovered} ms)" || fail "not served within 30 s after the connections closed"
stop_server

# ---------------------------------------------------------------------------------------
echo "-- sessions and streams per client address"
start_server --max-sessions-per-client 3 --max-streams-per-client 1 --max-streams 2

# create_from ADDRESS [curl flags…]: POST /api/sessions from ADDRESS; prints the status,
# leaves the head in $WORK/head and the body in $WORK/body.
create_from() {
    local address=$1
    shift
    curl -s --interface "$address" -D "$WORK/head" -o "$WORK/body" -w '%{http_code}' \
        -X POST "$BASE/api/sessions" -H 'Content-Type: application/json' --data-binary '{}' "$@"
}
created() { json 'd["id"]' <"$WORK/body"; }

codes=""
ids=()
for _ in 1 2 3; do
    codes+="$(create_from 127.0.0.1) "
    ids+=("$(created || true)")
done
expect "three sessions from 127.0.0.1" "$codes" "201 201 201 "
expect "a fourth from the same address → 429" "$(create_from 127.0.0.1)" 429
expect_match "with Retry-After" "$(header Retry-After "$WORK/head")" '^[0-9]+$'
expect "and a JSON error and message" "$(json '"error" in d and "message" in d' <"$WORK/body" || true)" True
expect "another address (127.0.0.2) still gets one → 201" "$(create_from 127.0.0.2)" 201
other=$(created || true)
create_from 127.0.0.3 >/dev/null || true
third=$(created || true)

# over_capacity SESSION [curl flags…]: asks for a stream; prints the status, curl's exit
# status (0: the body ended by itself, not cut by -m) and the seconds it took; the head
# goes to $WORK/over.head and the body to $WORK/over.body.
over_capacity() {
    local session=$1 out code=0
    shift
    out=$(curl -sN -m 10 -D "$WORK/over.head" -o "$WORK/over.body" -w '%{http_code} %{time_total}' \
        "$@" "$BASE/api/sessions/$session/events") || code=$?
    echo "${out% *} $code ${out#* }"
}

listen "${ids[0]}" "$WORK/stream-a" && pass "a stream from 127.0.0.1 is served" || true
first=$!
read -r code exited took <<<"$(over_capacity "${ids[1]}")"
expect "a second stream from 127.0.0.1 → 200 (not 503 or 429)" "$code" 200
expect_match "as text/event-stream" "$(header Content-Type "$WORK/over.head")" '^text/event-stream'
expect_match "with Connection: close" "$(header Connection "$WORK/over.head")" '^[Cc]lose$'
expect "with a retry: line" "$(grep -Ec '^retry: [0-9]+$' "$WORK/over.body" || true)" 1
check "and a comment" test "$(grep -c '^:' "$WORK/over.body" || true)" -ge 1
expect "and nothing else (no event)" "$(grep -Evc '^(:.*|retry: [0-9]+)?$' "$WORK/over.body" || true)" 0
expect "the body ends by itself (curl's exit status)" "$exited" 0
check "ended by the server, not by curl's 10 s (${took} s)" below "$took" 9
retries=$(sed -n 's/^retry: //p' "$WORK/over.body")
answers=""
for _ in 1 2 3 4 5; do
    read -r code exited _ <<<"$(over_capacity "${ids[1]}")"
    answers+="$code $exited "
    retries+=$'\n'$(sed -n 's/^retry: //p' "$WORK/over.body")
done
expect "five more: each 200 and ended" "$answers" "200 0 200 0 200 0 200 0 200 0 "
if kill -0 "$first" 2>/dev/null; then pass "the first stream is still open"; else fail "the first stream was closed"; fi

listen "$other" "$WORK/stream-b" --interface 127.0.0.2 && pass "a stream from 127.0.0.2 is still served" || true
read -r code exited _ <<<"$(over_capacity "$third" --interface 127.0.0.3)"
expect "a third stream from 127.0.0.3, over --max-streams 2 → 200, ended" "$code $exited" "200 0"
expect "with a retry: line and no event" "$(grep -c '^retry: [0-9]' "$WORK/over.body" || true) $(grep -c '^event:' "$WORK/over.body" || true)" "1 0"
retries+=$'\n'$(sed -n 's/^retry: //p' "$WORK/over.body")
distinct=$( (grep -E '^[0-9]+$' <<<"$retries" || true) | sort -u | wc -l)
check "the retry: delays are jittered ($distinct different of 7: $(tr '\n' ' ' <<<"$retries"))" test "$distinct" -gt 1

kill "$first" 2>/dev/null || true
served=no
started=$SECONDS
for _ in $(seq 100); do
    curl -sN -m 3 "$BASE/api/sessions/${ids[1]}/events" >"$WORK/again" 2>/dev/null || true
    if grep -q '^event: state' "$WORK/again"; then
        served=yes
        break
    fi
    [ $((SECONDS - started)) -ge 30 ] && break
    sleep 0.1
done
expect "once the first stream closes, 127.0.0.1 gets a stream again" "$served" yes
stop_server

# ---------------------------------------------------------------------------------------
echo "-- idle connections"
start_server --idle-timeout 3
port=${BASE##*:}
session=$(new_session)
listen "$session" "$WORK/stream-idle" && pass "a stream is open" || true
stream=$!

# Three connections side by side: one request then silence; nothing at all; a request every
# second for 4 s. Prints for the first its status, the seconds until the server closed it
# ("open" if it did not within 15 s) and how many bytes came after the answer; for the
# second the seconds and bytes; for the third how many answers came.
python3 - "$port" >"$WORK/idle" <<'PY'
import socket, sys, threading, time
port = int(sys.argv[1])
request = b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n"

def response(s):
    """One response, or what came before the server closed the connection."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(65536)
        if not chunk:
            return data
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    fields = {}
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        fields[name.strip().lower()] = value.strip()
    def complete():
        if b"content-length" in fields:
            return len(body) >= int(fields[b"content-length"])
        return (b"\r\n" + body).endswith(b"\r\n0\r\n\r\n")
    while not complete():
        chunk = s.recv(65536)
        if not chunk:
            break
        body += chunk
    return head + b"\r\n\r\n" + body

def until_closed(s, limit):
    """Seconds until the server closes the connection ("open" after `limit` of silence), and
    how many bytes it sent first."""
    started = time.monotonic()
    s.settimeout(limit)
    extra = 0
    try:
        while chunk := s.recv(65536):
            extra += len(chunk)
    except socket.timeout:
        return "open", extra
    except ConnectionResetError:
        pass
    return f"{time.monotonic() - started:.2f}", extra

results = {}

def idle():
    s = socket.create_connection(("127.0.0.1", port), timeout=15)
    s.sendall(request)
    reply = response(s)
    status = reply.split(b" ", 2)[1].decode() if reply.startswith(b"HTTP/1.1 ") else "-"
    results["idle"] = (status, *until_closed(s, 15))

def fresh():
    s = socket.create_connection(("127.0.0.1", port), timeout=15)
    results["fresh"] = until_closed(s, 15)

def busy():
    s = socket.create_connection(("127.0.0.1", port), timeout=15)
    answered = 0
    try:
        for _ in range(5):
            s.sendall(request)
            if not response(s).startswith(b"HTTP/1.1 200"):
                break
            answered += 1
            time.sleep(1)
    except OSError:
        pass
    results["busy"] = (answered,)

threads = [threading.Thread(target=f) for f in (idle, fresh, busy)]
for t in threads:
    t.start()
for t in threads:
    t.join(40)
for name, empty in (("idle", ("-", "open", 0)), ("fresh", ("open", 0)), ("busy", (0,))):
    print(*results.get(name, empty))
PY
read -r code closed_after extra <<<"$(sed -n 1p "$WORK/idle")"
expect "a keep-alive request is answered" "$code" 200
check "then the connection is closed after --idle-timeout 3 (${closed_after} s)" below "$closed_after" 12
check "not before it" below 2.5 "$closed_after"
expect "silently (bytes after the answer)" "$extra" 0
read -r closed_after extra <<<"$(sed -n 2p "$WORK/idle")"
check "a connection that never sends a byte is closed too (${closed_after} s)" below "$closed_after" 12
expect "a connection in use outlives the idle timeout (answers over 4 s)" "$(sed -n 3p "$WORK/idle")" 5
if kill -0 "$stream" 2>/dev/null; then pass "an open event stream outlives it too"; else fail "the event stream was closed as idle"; fi
stop_server

# ---------------------------------------------------------------------------------------
echo "-- X-Forwarded-For"
start_server --max-sessions-per-client 1 --trusted-proxy 127.0.0.2 --trusted-proxy 127.0.0.3
forwarded() { create_from "$1" -H "X-Forwarded-For: $2"; }
expect "from an untrusted peer: a session" "$(forwarded 127.0.0.1 203.0.113.1)" 201
expect "another X-Forwarded-For from it is the same client → 429" "$(forwarded 127.0.0.1 203.0.113.2)" 429
expect "through a trusted proxy: a session for one forwarded client" "$(forwarded 127.0.0.2 203.0.113.3)" 201
expect "and for another → 201" "$(forwarded 127.0.0.2 203.0.113.4)" 201
expect "the first forwarded client again → 429" "$(forwarded 127.0.0.2 203.0.113.3)" 429
expect "through a second trusted proxy (the flag repeats), a new client → 201" "$(forwarded 127.0.0.3 203.0.113.5)" 201
expect "and the same client as through the first → 429" "$(forwarded 127.0.0.3 203.0.113.4)" 429
finish
