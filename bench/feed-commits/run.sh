#!/bin/bash
# The publish transaction of PostgresFeed, as SQL, driven by pgbench: sustained commits/s of
# 8 writers, before (one head row) and after (a head row per feed) on one feed, and after on
# 8 feeds, interleaved in one run. bench/feed-commits/run.sh POSTGRES_URL [SECONDS] [ROUNDS]
set -e
url=$1; seconds=${2:-20}; rounds=${3:-2}
cd "$(dirname "$0")"
psql "$url" -qc "DROP DATABASE IF EXISTS feedsbench" >/dev/null 2>&1; psql "$url" -qc "CREATE DATABASE feedsbench"
db=${url%/*}/feedsbench
for round in $(seq $rounds); do
for case in before:before.sql after:after-one.sql after:after-many.sql; do
  schema=${case%%:*}; script=${case#*:}
  psql "$db" -q -f schema-$schema.sql >/dev/null 2>&1
  tps=$(pgbench -n -c 8 -j 2 -T "$seconds" -f "$script" "$db" 2>/dev/null | grep -E "^tps" | sed -E 's/tps = ([0-9.]+).*/\1/')
  echo "round $round $schema $script tps=$tps uptime:$(uptime | sed 's/.*load average//')"
done
done
