#!/usr/bin/env bash
# Which thread serves a client. By default a client's connections meet on one event loop, so
# its samples and its streams are served by one thread, while a crowd behind one address
# still spreads over every loop. --steer-by-client does it in the kernel, strictly: one
# address, one loop, however many connections. Read from each NIO thread's CPU time
# (/proc/PID/task/*/schedstat).
source "$(dirname "$0")/lib.sh"

# traffic ADDRESS...: for each address, SESSIONS sessions (default four), each with its
# stream on one connection and 200 samples posted on another, all from that address.
traffic() {
    python3 - "${BASE##*:}" "${SESSIONS:-4}" "$@" <<'PY'
import http.client, json, socket, sys
port, sessions, addresses = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
streams = []
for address in addresses:
    for _ in range(sessions):
        c = http.client.HTTPConnection("127.0.0.1", port, source_address=(address, 0), timeout=5)
        c.request("POST", "/api/sessions", body="{}", headers={"Content-Type": "application/json"})
        session = json.loads(c.getresponse().read())["id"]
        s = socket.create_connection(("127.0.0.1", port), timeout=5, source_address=(address, 0))
        s.sendall(f"GET /api/sessions/{session}/events HTTP/1.1\r\nHost: localhost\r\n\r\n".encode())
        s.recv(4096)
        streams.append(s)
        for seq in range(1, 201):
            c.request("POST", f"/api/sessions/{session}/samples", body=json.dumps({"seq": seq, "y": -(seq % 90)}), headers={"Content-Type": "application/json"})
            c.getresponse().read()
        c.close()
for s in streams:
    s.close()
PY
}

# The CPU time each NIO thread has run so far, "TASK NANOSECONDS" per line.
nio_times() {
    for task in /proc/"$SERVER_PID"/task/*; do
        if grep -q '^NIO-' "$task/comm"; then echo "$(basename "$task") $(cut -d' ' -f1 "$task/schedstat")"; fi
    done
}
mark() { nio_times >"$WORK/mark"; }
# busy: how many NIO threads did more than a tenth of the NIO threads' work since `mark`.
busy() {
    nio_times >"$WORK/now"
    python3 - "$WORK/mark" "$WORK/now" <<'PY'
import sys
before = dict(line.split() for line in open(sys.argv[1]))
spent = [int(value) - int(before.get(task, 0)) for task, value in (line.split() for line in open(sys.argv[2]))]
print(sum(1 for s in spent if s > 0.1 * sum(spent)))
PY
}

start_server --event-loops 2
mark
traffic 127.0.0.1
expect "one client's four sessions and their streams are served by one thread" "$(busy)" 1
mark
traffic 127.0.0.2 127.0.0.3 127.0.0.4 127.0.0.5 127.0.0.6 127.0.0.7
expect "six clients are spread over both threads" "$(busy)" 2
mark
SESSIONS=24 traffic 127.0.0.8
expect "24 sessions behind one address are served by both threads" "$(busy)" 2
kill "$SERVER_PID"
wait "$SERVER_PID" 2>/dev/null || true

start_server --event-loops 2 --steer-by-client
mark
traffic 127.0.0.1
expect "--steer-by-client: one client's four sessions and their streams are served by one thread" "$(busy)" 1
mark
traffic 127.0.0.2 127.0.0.3 127.0.0.4 127.0.0.5 127.0.0.6 127.0.0.7
expect "--steer-by-client: six clients are spread over both threads" "$(busy)" 2
mark
SESSIONS=24 traffic 127.0.0.8
expect "--steer-by-client: 24 sessions behind one address share one thread" "$(busy)" 1

# A restart on the port of a server that closed connections itself (they wait out TIME-WAIT
# on it) is not refused, with either listener. The server closes first: heads that never
# end, past the head deadline.
leave_time_wait() {
    python3 - "${BASE##*:}" <<'PY'
import socket, sys
connections = [socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5) for _ in range(3)]
for c in connections:
    c.sendall(b"GET /healthz HTTP/1.1\r\nHo")
for c in connections:
    c.recv(4096)  # the server's 408, or its close
    c.close()
PY
}
kill "$SERVER_PID"
wait "$SERVER_PID" 2>/dev/null || true
start_server --event-loops 2 --steer-by-client --request-head-timeout 1
port=${BASE##*:}
leave_time_wait
kill "$SERVER_PID"
wait "$SERVER_PID" 2>/dev/null || true
start_server --event-loops 2 --steer-by-client --port "$port" --request-head-timeout 1
expect "--steer-by-client starts again at once on its port" "$(curl -s -o /dev/null -w '%{http_code}' "$BASE/healthz")" 200
leave_time_wait
kill "$SERVER_PID"
wait "$SERVER_PID" 2>/dev/null || true
start_server --event-loops 2 --port "$port"
expect "the default listener starts again at once on its port" "$(curl -s -o /dev/null -w '%{http_code}' "$BASE/healthz")" 200
finish
