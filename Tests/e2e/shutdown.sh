#!/usr/bin/env bash
# SIGTERM ends every open stream cleanly and the process exits: by its 1 s drain deadline,
# with room for a busy machine (the streams would never end by themselves).
source "$(dirname "$0")/lib.sh"
start_server

for i in 1 2 3; do
    session=$(new_session)
    listen "$session" "$WORK/stream$i"
done
started=$(date +%s%N)
kill -TERM "$SERVER_PID"
exited=no
for _ in $(seq 600); do
    if ! kill -0 "$SERVER_PID" 2>/dev/null; then exited=yes; break; fi
    sleep 0.05
done
elapsed=$((($(date +%s%N) - started) / 1000000))
expect "the server exited after SIGTERM" "$exited" yes
if [ "$elapsed" -le 10000 ]; then pass "within seconds (${elapsed} ms)"; else fail "took ${elapsed} ms"; fi
wait "$SERVER_PID" && pass "with status 0" || fail "with status $?"
SERVER_PID=""
sleep 0.2
expect "every stream was ended" "$(jobs -r | wc -l)" 0
finish
