#!/usr/bin/env bash
# Publishes/s to PostgreSQL through one release server: 8 publishers on one feed, then on 8
# feeds, two interleaved rounds (BENCHMARKS.md, "C2 on several feeds").
set -u
cd "$(dirname "$0")/.."
nice -n 5 swift build -c release --product refresh-server >/dev/null 2>&1
nice -n 5 swift build -c release --product refresh-bench >/dev/null 2>&1
d=$(mktemp -d /tmp/pgrate.XXXX); chmod 755 $d
url=$(bash scripts/postgres start $d/db 55441)
echo "postgres $url"
for round in 1 2; do
  for feeds in 1 8; do
    db="rate_${round}_${feeds}"
    psql "$url" -qc "CREATE DATABASE $db" >/dev/null
    dburl="${url%/*}/$db"
    .build/release/refresh-server --port 18091 --database "$dburl" --log-level warning --no-demo > /tmp/rate-server.log 2>&1 &
    spid=$!
    for i in $(seq 50); do curl -sf localhost:18091/readyz >/dev/null && break; sleep 0.2; done
    echo "round $round feeds $feeds load $(cut -d' ' -f1 /proc/loadavg)"
    .build/release/refresh-bench --mode publish-rate --port 18091 --count 16 --publishers 8 --feeds $feeds --seconds 15 --server-pid $spid 2>&1 | tail -1 | python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); print({k: d.get(k) for k in ("feeds","publishes","publishesPerSecond","p50us","p99us","nothingLost","newsRepeated","serverCpuPerPublishUs")})'
    kill $spid; wait $spid 2>/dev/null
  done
done
bash scripts/postgres stop $d/db
