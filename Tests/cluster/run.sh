#!/usr/bin/env bash
# Three instances behind nginx on one PostgreSQL, brought up with scripts/cluster in a
# folder of their own and always taken down: the front speaks HTTP/2, deploy/nginx.conf is
# what the generator writes, check.py's invariants hold under faults, `up` again brings
# back the instance they killed; then two instances with one key hold access.py's rules of
# access; and nothing is left running afterwards.
# REFRESH_SERVER=path runs another build than the release one.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
# The Python tools of scripts/install-deps, when it has run.
[ -x "$PWD/.venv/bin/python3" ] && export PATH="$PWD/.venv/bin:$PATH"
export PTR_CLUSTER_DIR
PTR_CLUSTER_DIR=$(mktemp -d /tmp/ptr-cluster-test.XXXXXX)
passed=0
failed=0
pass() { passed=$((passed + 1)); echo "  ok   $1"; }
fail() { failed=$((failed + 1)); echo "  FAIL $1" >&2; }

port_taken() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# Four free ports in a row (three instances and the front), below the kernel's range for
# outgoing connections and away from a cluster started by hand.
for _ in $(seq 50); do
    base=$((20000 + RANDOM % 12000))
    port_taken "$base" || port_taken $((base + 1)) || port_taken $((base + 2)) || port_taken $((base + 3)) || break
done
front=$((base + 3))

pids() {
    cat "$PTR_CLUSTER_DIR"/instances/*.pid "$PTR_CLUSTER_DIR/nginx/nginx.pid" 2>/dev/null
    head -n1 "$PTR_CLUSTER_DIR/postgres/data/postmaster.pid" 2>/dev/null
}

teardown() {
    local before left=()
    if [ "$failed" -gt 0 ]; then
        for log in "$PTR_CLUSTER_DIR"/instances/*.log "$PTR_CLUSTER_DIR/nginx/error.log"; do
            [ -f "$log" ] || continue
            echo "--- the end of $log" >&2
            tail -n 15 "$log" >&2
        done
    fi
    before=$(pids)
    bash scripts/cluster down
    # A process that ended but is not reaped yet (its parent is init) counts as gone.
    for pid in $before; do
        case "$(sed -n 's/^[0-9]* (.*) \(.\).*/\1/p' "/proc/$pid/stat" 2>/dev/null)" in "" | Z) ;; *) left+=("$pid") ;; esac
    done
    if [ ${#left[@]} -eq 0 ]; then pass "scripts/cluster down leaves no process behind"; else fail "still running after down: ${left[*]}"; fi
    rm -rf "$PTR_CLUSTER_DIR"
    echo "cluster: $passed passed, $failed failed"
    [ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
}
trap 'teardown; exit $?' EXIT

if ! bash scripts/cluster up 3 --base-port "$base" --front-port "$front" --public-host cluster.test; then
    fail "scripts/cluster up 3"
    exit 1
fi
pass "scripts/cluster up 3 starts PostgreSQL, three instances and nginx"

if diff <(bash scripts/cluster nginx-conf 3) deploy/nginx.conf >/dev/null; then
    pass "deploy/nginx.conf is what scripts/cluster nginx-conf 3 writes"
else
    fail "deploy/nginx.conf differs from scripts/cluster nginx-conf 3 (regenerate it)"
fi

# The shipped file as stock nginx reads it, with the cluster's certificate in place of the
# placeholders (a test does not bind its ports).
check=$PTR_CLUSTER_DIR/deploy-check
mkdir -p "$check"
sed -e "s|/etc/ssl/certs/refresh-server.pem|$PTR_CLUSTER_DIR/nginx/cert.pem|" \
    -e "s|/etc/ssl/private/refresh-server.key|$PTR_CLUSTER_DIR/nginx/key.pem|" deploy/nginx.conf >"$check/refresh-server.conf"
printf 'pid %s/nginx.pid;\nevents {}\nhttp {\n    include %s/refresh-server.conf;\n}\n' "$check" "$check" >"$check/nginx.conf"
if nginx -t -q -p "$check" -c "$check/nginx.conf" -e "$check/error.log" 2>"$check/test.log"; then
    pass "deploy/nginx.conf passes nginx -t"
else
    fail "deploy/nginx.conf does not pass nginx -t: $(cat "$check/test.log")"
fi

protocol=$(curl -skI --http2 "https://127.0.0.1:$front/" | head -n1 | tr -d '\r' | sed 's/ *$//')
if [ "$protocol" = "HTTP/2 200" ]; then pass "the front answers the page over HTTP/2: $protocol"; else fail "the front's page: '$protocol', expected HTTP/2 200"; fi

# The front forwards the Host it was asked for: its own names reach the instances, a name
# nobody gave them (a rebound DNS name) is refused there.
misdirected=$(curl -sk -o /dev/null -w '%{http_code}' -H 'Host: attacker.example' "https://127.0.0.1:$front/healthz")
named=$(curl -sk -o /dev/null -w '%{http_code}' "https://localhost:$front/healthz")
public=$(curl -sk -o /dev/null -w '%{http_code}' --resolve "cluster.test:$front:127.0.0.1" "https://cluster.test:$front/healthz")
if [ "$misdirected $named $public" = "421 200 200" ]; then
    pass "through the front, localhost and the --public-host name are answered, attacker.example is 421"
else
    fail "through the front: attacker.example $misdirected (expected 421), localhost $named, cluster.test $public (expected 200)"
fi

if timeout 170 python3 Tests/cluster/check.py --dir "$PTR_CLUSTER_DIR"; then
    passed=$((passed + 1))
else
    failed=$((failed + 1))
fi

# The checks killed an instance: `up` again starts that one alone.
live=$(cat "$PTR_CLUSTER_DIR"/instances/i[12].pid)
if bash scripts/cluster up 3 >/dev/null && [ "$(cat "$PTR_CLUSTER_DIR"/instances/i[12].pid)" = "$live" ]; then
    pass "scripts/cluster up 3 again starts only the instance that died"
else
    fail "scripts/cluster up 3 again: $(bash scripts/cluster status)"
fi
# For whatever runs against this cluster next.
export PTR_FRONT="https://127.0.0.1:$front" PTR_CLUSTER_ARGS="--base-port $base --front-port $front"

# Real pages through the front: many tabs over HTTP/2, and a page whose instance is killed.
if timeout 240 python3 -m pytest -q -p no:cacheprovider -s Tests/cluster/test_browser.py; then
    pass "headless Chromium through the front (Tests/cluster/test_browser.py)"
else
    fail "headless Chromium through the front (Tests/cluster/test_browser.py)"
fi

# Access with one key on every instance: a cluster of two of its own, the key given in the
# environment of its first `up` only (access.py starts an instance again without it).
bash scripts/cluster down >/dev/null
mkdir -p "$PTR_CLUSTER_DIR/keys"
secret=$PTR_CLUSTER_DIR/keys/cluster.secret
(umask 077 && openssl rand -hex 32 >"$secret")
if ! PTR_AUTH_KEY=$secret bash scripts/cluster up 2 --base-port "$base" --front-port "$front" >/dev/null; then
    fail "PTR_AUTH_KEY=FILE scripts/cluster up 2"
elif timeout 120 python3 Tests/cluster/access.py --dir "$PTR_CLUSTER_DIR" --secret "$secret"; then
    passed=$((passed + 1))
else
    failed=$((failed + 1))
fi
