#!/usr/bin/env bash
# A stream whose reader stops reading: the server does not queue every event for it. Once
# it reads again it gets the newest state (superseded ones dropped) and every progress,
# items and done event, in order.
source "$(dirname "$0")/lib.sh"
start_server --max-samples-per-second 1000000
session=$(new_session)
port=${BASE##*:}

python3 - "$port" "$session" >"$WORK/result" <<'PY'
import http.client, json, socket, sys, time
port, session = int(sys.argv[1]), sys.argv[2]

stream = socket.socket()
stream.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
stream.connect(("127.0.0.1", port))
stream.sendall(f"GET /api/sessions/{session}/events HTTP/1.1\r\nHost: localhost\r\n\r\n".encode())
time.sleep(0.3)  # the stream is open; from here on nobody reads it

api = http.client.HTTPConnection("127.0.0.1", port)
def post(path, body):
    api.request("POST", path, body=json.dumps(body), headers={"Content-Type": "application/json"})
    response = api.getresponse()
    return response.status, response.read()

samples = 4000
for seq in range(1, samples + 1):
    post(f"/api/sessions/{session}/samples", {"seq": seq, "y": -(seq % 70) - 1})
post(f"/api/sessions/{session}/samples", {"seq": samples + 1, "y": 0, "phase": "release"})
post(f"/api/sessions/{session}/refresh", {})

# Read again, until the refresh's `done` and the state after it have come (half a minute at
# most): what the server kept for the reader, however long the refresh took.
stream.settimeout(30.0)
data = b""
ends = time.monotonic() + 30
try:
    while time.monotonic() < ends and not (b"event: done" in data and data.rfind(b"event: state") > data.find(b"event: done")):
        chunk = stream.recv(65536)
        if not chunk:
            break
        data += chunk
except socket.timeout:
    pass
text = data.decode("latin-1")
events = [line[len("event: "):] for line in text.split("\n") if line.startswith("event: ")]
print(len(events), events.count("state"), samples,
      " ".join(e for e in events if e != "state"), sep="\n")
PY
total=$(sed -n 1p "$WORK/result")
states=$(sed -n 2p "$WORK/result")
posted=$(sed -n 3p "$WORK/result")
others=$(sed -n 4p "$WORK/result")
[ $((states * 2)) -lt "$posted" ] && pass "superseded states were dropped ($states of $posted sent)" || fail "every state was queued ($states of $posted)"
expect_match "progress, items and done all arrived, in order" "$others" '^(progress )+items done$'
expect "the server is still running" "$(curl -s "$BASE/healthz")" '{"status":"ok"}'
finish
