#!/usr/bin/env bash
# Benchmarks swift-pull-to-refresh against nginx + nchan on this machine, one after the
# other with the same parameters, and writes bench/results/<date>.{json,md}.
#
#   bash bench/run.sh            full run (release build, about 10 minutes)
#   bash bench/run.sh --smoke    tiny counts, a few seconds, any build: keeps the script alive in CI
#
# FIGURES="l1 l2 fanout memory news" picks figures (default: all; the results are then
# named after them, bench/results/<date>-<figures>.*). SCRATCH_PATH=DIR builds
# and runs the binaries in DIR (swift build --scratch-path) instead of .build, to stay clear
# of another build in progress.
set -euo pipefail
cd "$(dirname "$0")/.."

smoke=no
configuration=release
for argument in "$@"; do
    case "$argument" in
        --smoke) smoke=yes ;;
        --debug) configuration=debug ;;
        *) echo "usage: bench/run.sh [--smoke] [--debug]" >&2; exit 2 ;;
    esac
done

if ! dpkg -s nginx libnginx-mod-nchan >/dev/null 2>&1; then
    echo "installing nginx and nchan" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null
    apt-get install -y -qq nginx libnginx-mod-nchan >/dev/null
fi
ulimit -n "$(ulimit -Hn)"

build_flags=(-c "$configuration")
[ -n "${SCRATCH_PATH:-}" ] && build_flags+=(--scratch-path "$SCRATCH_PATH")
swift build "${build_flags[@]}" --product refresh-server >/dev/null
swift build "${build_flags[@]}" --product refresh-bench >/dev/null
bin=$(swift build "${build_flags[@]}" --show-bin-path)

if [ "$smoke" = yes ]; then
    l1_samples=300; l2_counts="5"; l2_seconds=2; fan_counts="20"; fan_rounds=2; memory_counts="20"
    news_counts="200"; news_rounds=2
    out=$(mktemp -d)
else
    l1_samples=10000; l2_counts="100 1000"; l2_seconds=20; fan_counts="1000 10000"; fan_rounds=5; memory_counts="1000 10000"
    news_counts="1000 10000"; news_rounds=5
    # 10,000 streams take as many descriptors in the client and in the server.
    if [ "$(ulimit -n)" -lt 10100 ]; then
        echo "the open-file limit is $(ulimit -n) (hard limit $(ulimit -Hn)); 10,000 streams need about 10,100" >&2
    fi
    out=bench/results
    mkdir -p "$out"
fi
work=$(mktemp -d)
port=$((20000 + RANDOM % 20000))
lines="$work/lines.jsonl"
server_pid=""
measured_pid=""
cleanup() {
    [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

wait_for_port() {
    for _ in $(seq 100); do
        curl -s -o /dev/null "http://127.0.0.1:$port/" && return 0
        sleep 0.1
    done
    echo "nothing answers on port $port" >&2
    return 1
}

start() {
    case "$1" in
        ours)
            "$bin/refresh-server" --port "$port" --database :memory: --max-samples-per-second 1000000000 \
                --max-sessions-per-client 100000 --max-streams-per-client 100000 \
                --max-sessions 30000 --max-streams 100000 --min-refresh-ms 0 --log-level warning --public Public >"$work/ours.log" 2>&1 &
            ;;
        nchan)
            mkdir -p "$work/nginx"
            sed -e "s|@PORT@|$port|" -e "s|@DIR@|$work/nginx|" bench/nginx.conf.template >"$work/nginx/nginx.conf"
            nginx -c "$work/nginx/nginx.conf" -p "$work/nginx" -e "$work/nginx/error.log" &
            ;;
    esac
    server_pid=$!
    wait_for_port
    # nginx's master only supervises: the worker is the process that serves and grows.
    measured_pid=$server_pid
    if [ "$1" = nchan ]; then measured_pid=$(pgrep -P "$server_pid" | head -n1); fi
}

stop() {
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
    server_pid=""
    sleep 1
}

measure() { # TARGET MODE [flags…]
    local target=$1 mode=$2
    shift 2
    echo "  $target $mode $*" >&2
    timeout 600 "$bin/refresh-bench" --target "$target" --port "$port" --mode "$mode" --server-pid "$measured_pid" "$@" |
        python3 -c 'import json,sys; d=json.load(sys.stdin); d["kind"]=sys.argv[1]; d["args"]=sys.argv[2]; print(json.dumps(d))' "$target" "$*" >>"$lines"
}

figures=" ${FIGURES:-l1 l2 fanout memory news} "
for target in ours nchan; do
    echo "== $target" >&2
    # Fresh servers for each figure so one measurement's leftovers do not weigh on the next.
    if [[ $figures == *" l1 "* ]]; then
        start "$target"; measure "$target" l1 --samples "$l1_samples"; stop
    fi
    if [[ $figures == *" l2 "* ]]; then
        for count in $l2_counts; do
            start "$target"; measure "$target" l2 --count "$count" --seconds "$l2_seconds"; stop
        done
    fi
    if [[ $figures == *" fanout "* ]]; then
        for count in $fan_counts; do
            start "$target"; measure "$target" fanout --count "$count" --rounds "$fan_rounds"; stop
        done
    fi
    if [[ $figures == *" memory "* ]]; then
        for count in $memory_counts; do
            start "$target"; measure "$target" memory --count "$count"; stop
        done
    fi
    if [[ $figures == *" news "* ]]; then
        for count in $news_counts; do
            start "$target"; measure "$target" news --count "$count" --rounds "$news_rounds"; stop
        done
    fi
done

stamp=$(date -u +%Y-%m-%d)
# A run of some figures only is named after them, so it leaves the day's full run alone.
[ -n "${FIGURES:-}" ] && stamp="$stamp-$(echo $FIGURES | tr ' ' '-')"
[ "$smoke" = yes ] && stamp="$stamp-smoke"
python3 bench/report.py "$lines" "$out/$stamp.json" "$out/$stamp.md" "$configuration"
if [ "$smoke" = no ]; then
    python3 -c 'import matplotlib' 2>/dev/null || python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore matplotlib
    python3 bench/plot.py "$out/$stamp.json"
fi
cat "$out/$stamp.md"
