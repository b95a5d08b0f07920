#!/usr/bin/env bash
# L1 of several builds of the server, ours alone, in alternating rounds: each round starts
# each build fresh and posts SAMPLES samples to it, one at a time, with the bench's client.
# For a difference of a few per cent, which a full run of bench/run.sh (L1 beside nchan,
# 10,000 samples) does not resolve.
#
#   bash bench/l1-rounds.sh ROUNDS SAMPLES NAME=DIR NAME=DIR …
#
# DIR holds a release build's refresh-server; the client is the first DIR's refresh-bench.
# Prints one line per run: the name, the server CPU per sample (µs), p50 and p99 (µs).
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 3 ] || { echo "usage: bench/l1-rounds.sh ROUNDS SAMPLES NAME=DIR [NAME=DIR …]" >&2; exit 2; }
rounds=$1 samples=$2
shift 2
first=${1#*=}
client="$first/refresh-bench"
[ -x "$client" ] || { echo "no refresh-bench in $first" >&2; exit 2; }
port=${PORT:-18300}
for _ in $(seq "$rounds"); do
    for build in "$@"; do
        name=${build%%=*} dir=${build#*=}
        "$dir/refresh-server" --port "$port" --database :memory: --max-samples-per-second 1000000000 \
            --max-sessions-per-client 100000 --max-streams-per-client 100000 --min-refresh-ms 0 \
            --log-level warning --public Public >/dev/null 2>&1 &
        server=$!
        for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$port/healthz" && break; sleep 0.1; done
        "$client" --target ours --port "$port" --mode l1 --samples "$samples" --server-pid "$server" |
            python3 -c 'import json,sys; d=json.load(sys.stdin); print(sys.argv[1], round(d["serverCpuPerSampleUs"], 1), d["p50us"], d["p99us"])' "$name"
        kill "$server"
        wait "$server" 2>/dev/null || true
        port=$((port + 1))
    done
done
