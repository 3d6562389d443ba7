#!/bin/sh
# fit_bench.sh - `make bench`, the scheduler's hot path: a cached POST
# /v1/fit and a cached GET /v1/plans/{id} against a floor, a minimal
# libmicrohttpd server (tests/bench/floor_server.c) answering a body of the
# same size, with wrk, alternating daemon and floor in one run (ROUNDS
# rounds) so that both see the same machine. Prints each run's requests/s,
# p50 and p99 and the daemon's share of the floor's rate, then the cached
# GET with the default log level (info: a line per request) against
# --log-level warn, alternating too. The targets (docs/benchmarks.md): the
# cached fit at 0.7 of its floor or more with p99 under 2 ms, and logging
# costing at most 15% of the cached GET. Figures only: the machine is
# shared and noisy, so a reader compares them; nothing is asserted.
# Usage: tests/bench/fit_bench.sh [memplan-server] [floor_server]
set -eu
SERVER=${1:-build/memplan-server}
FLOOR=${2:-build/floor_server}
DUR=${BENCH_SECONDS:-2}
ROUNDS=${BENCH_ROUNDS:-5}
command -v wrk >/dev/null || { echo "fit_bench: wrk is not installed (deploy/deps.sh)"; exit 2; }
work=$(mktemp -d)
pids=""
cleanup() {
  for p in $pids; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT INT TERM

wait_port() { # file
  i=0
  while [ ! -s "$1" ]; do
    i=$((i + 1)); [ $i -gt 100 ] && { echo "fit_bench: a server did not start" >&2; cat "$work"/*.log >&2; exit 1; }
    sleep 0.1
  done
  cat "$1"
}

daemon() { # name, extra flags: starts a daemon, its pid in $work/name.pid
  name=$1; shift
  "$SERVER" --listen 127.0.0.1:0 --port-file "$work/$name.port" --data-dir "$work/$name.data" \
    --max-connections 2048 --max-connections-per-ip 0 "$@" >"$work/$name.log" 2>&1 &
  pids="$pids $!"
  echo $! >"$work/$name.pid"
}
floor() { # name, bytes
  "$FLOOR" "$2" "$work/$1.port" >"$work/$1.log" 2>&1 &
  pids="$pids $!"
  echo $! >"$work/$1.pid"
}
# CPU time (user + system, clock ticks) of a process so far
ticks() { awk '{print $14 + $15}' "/proc/$(cat "$work/$1.pid")/stat"; }
HZ=$(getconf CLK_TCK)

# The default log level (info) for the fit and the GET; the same daemon
# at warn for the log's cost.
daemon info
daemon warn --log-level warn
pinfo=$(wait_port "$work/info.port")
pwarn=$(wait_port "$work/warn.port")

# ResNet-50 stored and planned (fit and plan), then the requests that hit.
python3 - "$work" <<'PY'
import json, sys
work = sys.argv[1]
graph = open("tests/graphs/cg_resnet50.txt").read()
json.dump({"graph": graph, "budgets": ["2Gi", "40Gi"], "solver": "approx"}, open(work + "/fit0.json", "w"))
json.dump({"graph": graph, "budget": "2GiB", "solver": "approx", "wait": 60}, open(work + "/plan.json", "w"))
PY
for p in $pinfo $pwarn; do
  curl -sf -X POST "http://127.0.0.1:$p/v1/fit" --data-binary @"$work/fit0.json" >"$work/fit0.out"
  curl -sf -X POST "http://127.0.0.1:$p/v1/plans" --data-binary @"$work/plan.json" >"$work/plan.$p"
done
hash=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["graph_hash"])' "$work/fit0.out")
idinfo=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["id"])' "$work/plan.$pinfo")
idwarn=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["id"])' "$work/plan.$pwarn")
# the scheduler's request: the budgets in another order than they were computed in
printf '{"graph_hash": "%s", "budgets": ["40Gi", "2Gi"], "solver": "approx"}' "$hash" >"$work/fit.json"
for p in $pinfo $pwarn; do
  curl -sf -X POST "http://127.0.0.1:$p/v1/fit" --data-binary @"$work/fit.json" >"$work/fit.out"
done
curl -sf "http://127.0.0.1:$pwarn/v1/plans/$idwarn" >/dev/null
curl -sf "http://127.0.0.1:$pinfo/v1/plans/$idinfo" >"$work/get.out"
grep -q '"cache":"hit"' "$work/fit.out" || { echo "fit_bench: the fit is not a cache hit"; cat "$work/fit.out"; exit 1; }
fit_bytes=$(wc -c <"$work/fit.out")
get_bytes=$(wc -c <"$work/get.out")
floor ffit "$fit_bytes"
floor fget "$get_bytes"
pffit=$(wait_port "$work/ffit.port")
pfget=$(wait_port "$work/fget.port")

cat >"$work/post.lua" <<EOF2
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local f = io.open("$work/fit.json", "rb"); wrk.body = f:read("*a"); f:close()
EOF2

# run LABEL SERVER wrk-args...: one line, and the rate in $rate. Also the
# server's CPU time per answer (user + system, from /proc): unlike the rate
# it does not depend on how much of the machine the server got, so it is
# the steadier figure on a shared machine.
run() {
  label=$1; who=$2; shift 2
  t0=$(ticks "$who")
  out=$(wrk -t2 -c64 -d"${DUR}s" --latency "$@" 2>&1)
  t1=$(ticks "$who")
  rate=$(echo "$out" | awk '/Requests\/sec/ {print $2}')
  total=$(echo "$out" | awk '/requests in/ {print $1}')
  cpu=$(awk -v t="$((t1 - t0))" -v n="$total" -v hz="$HZ" 'BEGIN { printf "%.1f", (n > 0 ? t / hz * 1e6 / n : 0) }')
  p50=$(echo "$out" | awk '$1 == "50%" {print $2}')
  p99=$(echo "$out" | awk '$1 == "99%" {print $2}')
  errs=$(echo "$out" | awk '/Non-2xx or 3xx responses/ {print "non-2xx: " $NF} /Socket errors/ {print}' | tr '\n' ' ')
  printf '  %-40s %9s req/s  p50 %-8s p99 %-8s %5s us CPU %s' "$label" "$rate" "$p50" "$p99" "$cpu" "$errs"
  printf '%s\t%s\t%s\t%s\t%s\n' "$label" "$rate" "$p50" "$p99" "$cpu" >>"$work/results"
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }'; }

echo "cached fit and cached GET against a minimal libmicrohttpd server answering as many bytes"
echo "(wrk -t2 -c64 -d${DUR}s on this machine, daemon and floor alternating, ${ROUNDS} rounds; load: $(cut -d' ' -f1-3 /proc/loadavg))"
echo "fit answer ${fit_bytes} B, GET answer ${get_bytes} B"
k=0
while [ $k -lt "$ROUNDS" ]; do
  k=$((k + 1))
  run "floor, ${fit_bytes} B, the same POST" ffit -s "$work/post.lua" "http://127.0.0.1:$pffit/v1/fit"; echo; f=$rate
  run "POST /v1/fit (cached)" info -s "$work/post.lua" "http://127.0.0.1:$pinfo/v1/fit"; echo "  $(ratio "$rate" "$f") of floor"
  run "floor, ${get_bytes} B, the same GET" fget "http://127.0.0.1:$pfget/v1/plans/$idinfo"; echo; f=$rate
  run "GET /v1/plans/{id} (cached)" info "http://127.0.0.1:$pinfo/v1/plans/$idinfo"; echo "  $(ratio "$rate" "$f") of floor"
done
echo "the log's cost: the cached GET at the default level (info, a line per request) and at warn"
k=0
while [ $k -lt "$ROUNDS" ]; do
  k=$((k + 1))
  run "GET /v1/plans/{id}, --log-level warn" warn "http://127.0.0.1:$pwarn/v1/plans/$idwarn"; echo; w=$rate
  run "GET /v1/plans/{id}, --log-level info" info "http://127.0.0.1:$pinfo/v1/plans/$idinfo"; echo "  $(ratio "$rate" "$w") of warn"
done

# The medians over the rounds, and the medians of each round's ratio (a
# run and its floor's are a few seconds apart: the load they share).
python3 - "$work/results" <<'PY'
import statistics, sys

def ms(t):
    for unit, f in (("us", 1e-3), ("ms", 1.0), ("s", 1e3)):
        if t.endswith(unit):
            return float(t[: -len(unit)]) * f
    return float("nan")

runs = {}
order = []
for line in open(sys.argv[1]):
    label, rate, p50, p99, cpu = line.rstrip("\n").split("\t")
    if label not in runs:
        order.append(label)
    runs.setdefault(label, []).append((float(rate or 0), ms(p50), ms(p99), float(cpu or 0)))
print("medians over the rounds:")
for label in order:
    r = runs[label]
    print("  %-40s %9.0f req/s  p50 %6.2f ms  p99 %6.2f ms  %6.1f us CPU/answer" % (
        label, statistics.median(x[0] for x in r), statistics.median(x[1] for x in r),
        statistics.median(x[2] for x in r), statistics.median(x[3] for x in r)))
def share(a, b, k=0):
    pairs = [x[k] / y[k] for x, y in zip(runs[a], runs[b]) if y[k] > 0]
    return statistics.median(pairs) if pairs else float("nan")
fl = [k for k in order if k.startswith("floor")]
fit, get = "POST /v1/fit (cached)", "GET /v1/plans/{id} (cached)"
info, warn = "GET /v1/plans/{id}, --log-level info", "GET /v1/plans/{id}, --log-level warn"
print("  cached fit: %.2f of its floor's rate (target 0.7 or more; by CPU per answer %.2f)" % (
    share(fit, fl[0]), 1 / share(fit, fl[0], 3)))
print("  cached GET: %.2f of its floor's rate (by CPU per answer %.2f)" % (share(get, fl[1]), 1 / share(get, fl[1], 3)))
print("  the log at info: %.2f of the cached GET's rate at warn (target 0.85 or more; by CPU per answer %.2f)" % (
    share(info, warn), 1 / share(info, warn, 3)))
PY
