#!/bin/sh
# http_bench.sh - `make bench`, HTTP part: wrk against a real memplan-server
# on a free loopback port. Prints requests/s and latency percentiles for a
# cached GET /v1/plans/{id}, a cache-hit POST /v1/plans and GET /healthz, a
# 256-connection run (which must see no error responses), and plans per
# second for uncached approx plans of a shipped graph; then the cached GET
# and /healthz again with one HTTP thread and one wrk thread. Figures only; the
# targets (20,000 req/s and p99 under 5 ms for the cached GET on 2 cores)
# are compared by a reader, not asserted: this machine is shared and noisy.
# Usage: tests/bench/http_bench.sh [path/to/memplan-server]
set -eu
SERVER=${1:-build/memplan-server}
DUR=${BENCH_SECONDS:-5}
command -v wrk >/dev/null || { echo "http_bench: wrk is not installed (deploy/deps.sh)"; exit 2; }
work=$(mktemp -d)
cleanup() {
  [ -n "${pid:-}" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT INT TERM

start() { # extra daemon flags; sets pid and base
  rm -f "$work/port"
  "$SERVER" --listen 127.0.0.1:0 --port-file "$work/port" --data-dir "$work/data" \
    --log-level warn --max-connections 2048 --max-connections-per-ip 0 "$@" >"$work/log" 2>&1 &
  pid=$!
  i=0
  while [ ! -s "$work/port" ]; do
    i=$((i + 1)); [ $i -gt 100 ] && { echo "http_bench: the daemon did not start"; cat "$work/log"; exit 1; }
    sleep 0.1
  done
  base="http://127.0.0.1:$(cat "$work/port")"
}
start

# One plan to read back, and the request body that hits the cache.
python3 - "$work" <<'PY'
import json, sys
work = sys.argv[1]
graph = open("tests/graphs/cg_resnet50.txt").read()
json.dump({"graph": graph, "budget": "2GiB", "solver": "approx", "wait": 60}, open(work + "/hit.json", "w"))
PY
id=$(curl -s -X POST "$base/v1/plans" --data-binary @"$work/hit.json" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
hash=$(curl -s "$base/v1/plans/$id" | python3 -c 'import json,sys; print(json.load(sys.stdin)["graph_hash"])')

cat >"$work/post.lua" <<EOF2
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local f = io.open("$work/hit.json", "rb"); wrk.body = f:read("*a"); f:close()
EOF2
# Uncached plans: every request asks for a budget no one asked before, by
# graph hash (the graph is already stored), and waits for the answer.
cat >"$work/uncached.lua" <<EOF2
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local n = 0
request = function()
  n = n + 1
  local budget = 1600000000 + n * 1000003 + math.random(0, 999)
  return wrk.format(nil, nil, nil, string.format(
    '{"graph_hash": "$hash", "budget": %d, "solver": "approx", "wait": 60}', budget))
end
EOF2

run() { # label, then wrk arguments
  label=$1; shift
  out=$(wrk "$@" --latency 2>&1)
  rps=$(echo "$out" | awk '/Requests\/sec/ {print $2}')
  p50=$(echo "$out" | awk '$1 == "50%" {print $2}')
  p99=$(echo "$out" | awk '$1 == "99%" {print $2}')
  errs=$(echo "$out" | awk '/Non-2xx or 3xx responses/ {print $NF} /Socket errors/ {print}' | tr '\n' ' ')
  printf '%-44s %10s req/s   p50 %-9s p99 %-9s %s\n' "$label" "$rps" "$p50" "$p99" "${errs:-no errors}"
}

echo "memplan-server HTTP benchmark: wrk on this machine (2 cores shared by wrk and the daemon), ${DUR} s per run"
run "GET /v1/plans/{id} (cached), 64 conns" -t2 -c64 -d"${DUR}s" "$base/v1/plans/$id"
run "POST /v1/plans cache hit, 64 conns" -t2 -c64 -d"${DUR}s" -s "$work/post.lua" "$base/v1/plans"
run "GET /healthz, 64 conns" -t2 -c64 -d"${DUR}s" "$base/healthz"
run "GET /v1/plans/{id} (cached), 256 conns" -t2 -c256 -d"${DUR}s" "$base/v1/plans/$id"
run "POST uncached approx plans (ResNet50), 8 conns" -t2 -c8 -d"${DUR}s" -s "$work/uncached.lua" "$base/v1/plans"
echo "(uncached: each request is one new plan answered in full, so req/s is plans/s)"

# The same daemon with one HTTP thread, against one wrk thread: two busy
# threads on two cores, so neither waits for the other's time slice (with
# the default two HTTP threads and two wrk threads, four share the two
# cores, and a request whose thread is descheduled waits a slice: that is
# the p99 above). Three runs each, to show the spread.
kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
start --http-threads 1
curl -s "$base/v1/plans/$id" >/dev/null # warm the view cache
for k in 1 2 3; do
  run "GET /v1/plans/{id} (cached), 64 conns, 1+1 thr" -t1 -c64 -d"${DUR}s" "$base/v1/plans/$id"
done
for k in 1 2 3; do
  run "GET /healthz, 64 conns, 1+1 thr" -t1 -c64 -d"${DUR}s" "$base/healthz"
done
run "GET /v1/plans/{id} (cached), 256 conns, 1+1 thr" -t1 -c256 -d"${DUR}s" "$base/v1/plans/$id"
