#!/usr/bin/env bash
# Benchmarks swift-pull-to-refresh against nginx + nchan on this machine, one after the
# other with the same parameters, and writes bench/results/<date>.{json,md}.
#
#   bash bench/run.sh            full run (release build, about 15 minutes)
#   bash bench/run.sh --smoke    tiny counts, a few seconds, any build: keeps the script alive in CI
#
# FIGURES="l1 l2 fanout memory news edit isolation auth cluster" picks figures (default: all; the results are
# then named after them, bench/results/<date>-<figures>.*). SCRATCH_PATH=DIR builds
# and runs the binaries in DIR (swift build --scratch-path) instead of .build, to stay clear
# of another build in progress. BENCH_BIN=DIR runs the refresh-server and refresh-bench
# already in DIR as they are, building nothing.
#
# The auth figure is ours against itself: L1 on a server without --auth-key, and on one with
# an HMAC key whose session reads a private feed with a token (AUTH_ROUNDS interleaved rounds,
# default 3): the sample path does no token work, so the two should match.
#
# L1_SAMPLES overrides how many samples L1 posts (default 10,000): a longer run settles the
# CPU per sample better when two builds are compared round by round.
#
# The cluster figure is not against nchan: three instances sharing a throwaway PostgreSQL
# (scripts/postgres, in a temporary folder, stopped on exit) against one instance on an
# SQLite file, with the same parameters, one after the other for each parameter.
# CLUSTER_COUNTS="1000 10000" (sessions told of one publish), CLUSTER_ROUNDS, and for the
# sustained publishing RATE_COUNTS="10 1000" (sessions listening: a few, where the commit
# path sets the pace, and many, where telling them does), RATE_PUBLISHERS and RATE_SECONDS
# override the profile's parameters of that figure.
set -euo pipefail
cd "$(dirname "$0")/.."
# The Python tools of scripts/install-deps, when it has run.
[ -x "$PWD/.venv/bin/python3" ] && export PATH="$PWD/.venv/bin:$PATH"

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

if [ -n "${BENCH_BIN:-}" ]; then
    bin=$(cd "$BENCH_BIN" && pwd)
    for binary in refresh-server refresh-bench; do
        [ -x "$bin/$binary" ] || { echo "no $binary in $bin" >&2; exit 2; }
    done
else
    build_flags=(-c "$configuration")
    [ -n "${SCRATCH_PATH:-}" ] && build_flags+=(--scratch-path "$SCRATCH_PATH")
    swift build "${build_flags[@]}" --product refresh-server >/dev/null
    swift build "${build_flags[@]}" --product refresh-bench >/dev/null
    bin=$(swift build "${build_flags[@]}" --show-bin-path)
fi

if [ "$smoke" = yes ]; then
    l1_samples=300; l2_counts="5"; l2_seconds=2; fan_counts="20"; fan_rounds=2; memory_counts="20"
    news_counts="200"; news_rounds=2; edit_counts="200"; edit_rounds=2; isolation_counts="50"; isolation_rounds=2; auth_rounds=1
    cluster_counts="30"; cluster_rounds=2; rate_counts="30"; rate_publishers=2; rate_seconds=2; rate_feeds="2"
    out=$(mktemp -d)
else
    l1_samples=10000; l2_counts="100 1000"; l2_seconds=20; fan_counts="1000 10000"; fan_rounds=5; memory_counts="1000 10000"; auth_rounds=3
    news_counts="1000 10000"; news_rounds=5; edit_counts="1000 10000"; edit_rounds=5; isolation_counts="10000"; isolation_rounds=5
    cluster_counts="1000 10000"; cluster_rounds=5; rate_counts="10 1000"; rate_publishers=8; rate_seconds=20; rate_feeds="1 8"
    # 10,000 streams take as many descriptors in the client and in the server.
    if [ "$(ulimit -n)" -lt 10100 ]; then
        echo "the open-file limit is $(ulimit -n) (hard limit $(ulimit -Hn)); 10,000 streams need about 10,100" >&2
    fi
    out=bench/results
    mkdir -p "$out"
fi
cluster_counts=${CLUSTER_COUNTS:-$cluster_counts}; cluster_rounds=${CLUSTER_ROUNDS:-$cluster_rounds}
rate_counts=${RATE_COUNTS:-$rate_counts}; rate_publishers=${RATE_PUBLISHERS:-$rate_publishers}; rate_seconds=${RATE_SECONDS:-$rate_seconds}
auth_rounds=${AUTH_ROUNDS:-$auth_rounds}
l1_samples=${L1_SAMPLES:-$l1_samples}
if ! [[ $l1_samples =~ ^[1-9][0-9]*$ ]]; then
    echo "L1_SAMPLES must be a positive whole number, not '$l1_samples'" >&2
    exit 2
fi
work=$(mktemp -d)
# The ports: PORT for one server, PORT+1… for the cluster's instances, PORT+10 for PostgreSQL.
# All below the kernel's range for outgoing connections (32768 up by default): one of those,
# from the load this script makes itself, could hold a port of that range when a server binds.
port_taken() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
for _ in $(seq 100); do
    port=$((20000 + RANDOM % 12000))
    taken=no
    for offset in 0 1 2 3 10; do port_taken "$((port + offset))" && taken=yes; done
    [ "$taken" = no ] && break
done
lines="$work/lines.jsonl"
server_pid=""
measured_pid=""
instance_pids=()
postgres_dir=""
cleanup() {
    [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null || true
    for pid in "${instance_pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    if [ -n "$postgres_dir" ]; then
        scripts/postgres stop "$postgres_dir" || true
        rm -rf "$postgres_dir"
    fi
    rm -rf "$work"
}
trap cleanup EXIT

wait_for_port() { # [PORT [LOG]]
    local port=${1:-$port} log=${2:-}
    for _ in $(seq 100); do
        curl -s -o /dev/null "http://127.0.0.1:$port/" && return 0
        sleep 0.1
    done
    echo "nothing answers on port $port" >&2
    [ -n "$log" ] && tail -n 20 "$log" >&2
    return 1
}

start() { # TARGET [more flags of ours…]
    case "$1" in
        ours)
            "$bin/refresh-server" --port "$port" --database :memory: --max-samples-per-second 1000000000 \
                --max-sessions-per-client 100000 --max-streams-per-client 100000 \
                --max-sessions 30000 --max-streams 100000 --min-refresh-ms 0 --log-level warning --public Public "${@:2}" >"$work/ours.log" 2>&1 &
            ;;
        nchan)
            mkdir -p "$work/nginx"
            sed -e "s|@PORT@|$port|" -e "s|@DIR@|$work/nginx|" bench/nginx.conf.template >"$work/nginx/nginx.conf"
            nginx -c "$work/nginx/nginx.conf" -p "$work/nginx" -e "$work/nginx/error.log" &
            ;;
    esac
    server_pid=$!
    if [ "$1" = ours ]; then wait_for_port "$port" "$work/ours.log"; else wait_for_port "$port" "$work/nginx/error.log"; fi
    # nginx's master only supervises: the worker is the process that serves and grows.
    measured_pid=$server_pid
    if [ "$1" = nchan ]; then measured_pid=$(pgrep -P "$server_pid" | head -n1); fi
}

# wait_for_close [PORT]: until nothing answers on the port, so the next server can take it.
wait_for_close() {
    local port=${1:-$port}
    for _ in $(seq 100); do
        curl -s -o /dev/null "http://127.0.0.1:$port/" || return 0
        sleep 0.05
    done
    echo "port $port still answers" >&2
    return 1
}

# settle: a full run gives the machine a second between measurements; a smoke run has
# nothing to measure, so it goes on once the servers are gone.
settle() { [ "$smoke" = yes ] || sleep 1; }

stop() {
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
    wait_for_close
    server_pid=""
    settle
}

measure() { # TARGET MODE [flags…]; KIND=… names the run otherwise than its target
    local target=$1 mode=$2
    shift 2
    echo "  ${KIND:-$target} $mode $*" >&2
    timeout 600 "$bin/refresh-bench" --target "$target" --port "$port" --mode "$mode" --server-pid "$measured_pid" "$@" |
        python3 -c 'import json,sys; d=json.load(sys.stdin); d["kind"]=sys.argv[1]; d["args"]=sys.argv[2]; print(json.dumps(d))' "${KIND:-$target}" "$*" >>"$lines"
}

# Three instances on PostgreSQL (cluster) or one on a fresh SQLite file (sqlite), each
# started fresh on an empty feed; the instances' PIDs go to refresh-bench as --server-pid.
start_setup() { # cluster|sqlite
    local name database
    instance_pids=()
    if [ "$1" = cluster ]; then
        psql "${postgres_url%/*}/postgres" -qX -c "DROP DATABASE IF EXISTS ptr WITH (FORCE)" -c "CREATE DATABASE ptr" >/dev/null
    fi
    for index in $(seq "$([ "$1" = cluster ] && echo 3 || echo 1)"); do
        if [ "$1" = cluster ]; then
            name=(--instance "i$index"); database=$postgres_url
        else
            name=(); database="$work/sqlite-$RANDOM/feed.sqlite"
        fi
        "$bin/refresh-server" --port "$((port + index))" --database "$database" "${name[@]}" --max-samples-per-second 1000000000 \
            --max-sessions-per-client 100000 --max-streams-per-client 100000 \
            --max-sessions 30000 --max-streams 100000 --min-refresh-ms 0 --log-level warning --public Public >>"$work/$1-$index.log" 2>&1 &
        instance_pids+=($!)
    done
    for index in $(seq "${#instance_pids[@]}"); do
        wait_for_port "$((port + index))" "$work/$1-$index.log"
        wait_until_ready "$((port + index))"
    done
}

# Ready: the feed answers and, on PostgreSQL, the instance listens for news.
wait_until_ready() { # PORT
    for _ in $(seq 100); do
        curl -sf -o /dev/null "http://127.0.0.1:$1/readyz" && return 0
        sleep 0.1
    done
    echo "the instance on port $1 is not ready: $(curl -s "http://127.0.0.1:$1/readyz")" >&2
    return 1
}

stop_setup() {
    for pid in "${instance_pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${instance_pids[@]}"; do wait "$pid" 2>/dev/null || true; done
    for index in $(seq "${#instance_pids[@]}"); do wait_for_close "$((port + index))"; done
    instance_pids=()
    settle
}

measure_setup() { # cluster|sqlite MODE [flags…]
    local kind=$1 mode=$2 targets="" pids=()
    shift 2
    echo "  $kind $mode $*" >&2
    for index in $(seq "${#instance_pids[@]}"); do
        targets="$targets${targets:+,}127.0.0.1:$((port + index))"
        pids+=(--server-pid "${instance_pids[index - 1]}")
    done
    [ "$kind" = cluster ] && pids+=(--database-pid "$(head -n1 "$postgres_dir/data/postmaster.pid")")
    # news publishes on the first instance; publish-rate deals its publishers over all.
    local publish_to="127.0.0.1:$((port + 1))"
    [ "$mode" = publish-rate ] && publish_to=$targets
    timeout 600 "$bin/refresh-bench" --target ours --mode "$mode" --targets "$targets" --publish-to "$publish_to" "${pids[@]}" "$@" |
        python3 -c 'import json,sys; d=json.load(sys.stdin); d["kind"]=sys.argv[1]; d["args"]=sys.argv[2]; print(json.dumps(d))' "$kind" "$*" >>"$lines"
}

figures=" ${FIGURES:-l1 l2 fanout memory news edit isolation auth cluster} "
for target in ours nchan; do
    [[ $figures =~ " "(l1|l2|fanout|memory|news|edit)" " ]] || break
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
    if [[ $figures == *" edit "* ]]; then
        for count in $edit_counts; do
            start "$target"; measure "$target" edit --count "$count" --rounds "$edit_rounds"; stop
        done
    fi
done

# Ours against itself: one publish to a feed of one session, alone on the server and
# beside a crowd of another feed's streams.
if [[ $figures == *" isolation "* ]]; then
    echo "== isolation" >&2
    for count in $isolation_counts; do
        start ours; measure ours isolation --count "$count" --rounds "$isolation_rounds"; stop
    done
fi

# Ours against itself: a sample's CPU with and without --auth-key, in interleaved rounds.
if [[ $figures == *" auth "* ]]; then
    echo "== auth" >&2
    head -c 48 /dev/urandom | base64 -w0 >"$work/auth.key"
    # A token of the key that reads the feeds bench:*, minted as an application would.
    token=$(python3 - "$work/auth.key" <<'PY'
import base64, hashlib, hmac, json, sys, time
secret = open(sys.argv[1], "rb").read().rstrip(b"\n")
part = lambda data: base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()
signing = part({"alg": "HS256", "typ": "JWT"}) + "." + part({"exp": int(time.time()) + 86400, "sub": "bench", "ptr": {"read": ["bench:*"]}})
print(signing + "." + base64.urlsafe_b64encode(hmac.new(secret, signing.encode(), hashlib.sha256).digest()).rstrip(b"=").decode())
PY
)
    without() { start ours; KIND=auth-off measure ours l1 --samples "$l1_samples"; stop; }
    with_key() {
        start ours --auth-key "$work/auth.key"
        KIND=auth-on measure ours l1 --samples "$l1_samples" --token "$token" --session-feed bench:l1
        stop
    }
    # Each round in the other order than the last, so neither always runs on a machine the
    # other has just warmed (or heated).
    for round in $(seq "$auth_rounds"); do
        if ((round % 2)); then without; with_key; else with_key; without; fi
    done
fi

if [[ $figures == *" cluster "* ]]; then
    echo "== cluster (three instances on PostgreSQL) and sqlite (one instance)" >&2
    postgres_dir=$(mktemp -d)
    postgres_url=$(scripts/postgres start "$postgres_dir" "$((port + 10))")
    # Interleaved, so the machine's drift weighs on both alike.
    for count in $cluster_counts; do
        for setup in cluster sqlite; do
            start_setup "$setup"; measure_setup "$setup" news --count "$count" --rounds "$cluster_rounds"; stop_setup
        done
    done
    # The publishers on one feed, then dealt over several (each feed its own head row).
    for feeds in $rate_feeds; do
        for count in $rate_counts; do
            for setup in cluster sqlite; do
                start_setup "$setup"
                measure_setup "$setup" publish-rate --count "$count" --publishers "$rate_publishers" --seconds "$rate_seconds" --feeds "$feeds"
                stop_setup
            done
        done
    done
    scripts/postgres stop "$postgres_dir"
    rm -rf "$postgres_dir"
    postgres_dir=""
fi

stamp=$(date -u +%Y-%m-%d)
# A run of some figures only is named after them, so it leaves the day's full run alone.
[ -n "${FIGURES:-}" ] && stamp="$stamp-$(echo $FIGURES | tr ' ' '-')"
[ "$smoke" = yes ] && stamp="$stamp-smoke"
python3 bench/report.py "$lines" "$out/$stamp.json" "$out/$stamp.md" "$configuration"
# The plot draws the figures against nchan; a run of the cluster figure alone has none.
if [ "$smoke" = no ] && python3 -c 'import json,sys; sys.exit(not json.load(open(sys.argv[1]))["table"])' "$out/$stamp.json"; then
    python3 -c 'import matplotlib' 2>/dev/null || python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore matplotlib
    python3 bench/plot.py "$out/$stamp.json"
fi
cat "$out/$stamp.md"
