#!/usr/bin/python3
"""Throughput of uncached plans with 1, 2 and 3 memplan-server replicas on one
PostgreSQL store, against one daemon on SQLite, and what limits it.

A PostgreSQL server is created in a temporary directory (tests/pg/cluster.py:
loopback only, as the postgres user when run as root) and removed at the end.
For each configuration, a fresh database, the replicas (--workers 2 each),
and PLANS distinct plans (a budget each, so none is cached or deduplicated)
submitted by CLIENTS threads round-robin over the replicas, all of them
first, then each waited for on the replica it went to: the rate is how fast
the replicas drain a full queue. Two graphs: the tiny residual block (the
planner takes well under a millisecond, so the cost is HTTP and the store)
and ResNet-50 by hash (tens of milliseconds of planning per plan).

Printed per run: plans/s; CPU seconds per plan of the daemons, of PostgreSQL
and of this client, and the share of the machine's cores they used (on a
machine whose cores everyone shares, that share is what caps the rate); and
the database transactions per plan (pg_stat_database), i.e. round trips
that commit: accept, claim, result, finish, plus the replicas' upkeep.

Usage: tests/bench/pg_bench.py [SERVER] (default build/memplan-server), or
`make bench`. PLANS=, CLIENTS= and REPLICAS= (e.g. "1 2 3") in the
environment change the run.
"""

import concurrent.futures
import json
import os
import re
import resource
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pg"))
if len(sys.argv) > 1:
    os.environ["MEMPLAN_SERVER"] = os.path.abspath(sys.argv[1])

import cluster  # noqa: E402

PLANS = int(os.environ.get("PLANS", "240"))
CLIENTS = int(os.environ.get("CLIENTS", "8"))
REPLICAS = [int(x) for x in os.environ.get("REPLICAS", "1 2 3").split()]
TINY = json.loads((cluster.ROOT / "tests" / "graphs" / "tiny_resblock.json").read_text())
RESNET = (cluster.ROOT / "tests" / "graphs" / "cg_resnet50.txt").read_text()
GIB = 1 << 30


def client_cpu():
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def latency(pg):
    """Mean latency in ms of a round trip and of a committed insert, one client (pgbench)."""
    out = []
    pg.sql("postgres", "CREATE TABLE IF NOT EXISTS bench_probe (x integer)")
    for script in ("SELECT 1;", "INSERT INTO bench_probe VALUES (1);"):
        path = os.path.join(pg.tmp, "probe.sql")
        with open(path, "w") as f:
            f.write(script + "\n")
        os.chmod(path, 0o644)
        res = pg.run("pgbench", "-h", "127.0.0.1", "-p", str(pg.port), "-U", "postgres", "-n", "-c", "1", "-T", "3",
                     "-f", path, "postgres", check=False).stdout
        m = re.search(r"latency average = ([0-9.]+) ms", res)
        out.append(float(m.group(1)) if m else float("nan"))
    return out


def run(tmp, pg, store_kind, n, graph, base_budget, step, tag):
    """One configuration: (plans/s, daemon CPU s, PostgreSQL CPU s, client CPU s, wall s, xacts)."""
    db = None
    if store_kind == "postgresql":
        db = "bench_%s_%d" % (tag, n)
        pg.run("createdb", "-h", "127.0.0.1", "-p", str(pg.port), "-U", "postgres", db)
        store = pg.uri(db)
    else:
        store = "sqlite:" + os.path.join(tmp, "sqlite_%s" % tag)
    reps = [cluster.Replica(tmp, "%s_%s_%d_%d" % (store_kind, tag, n, i), store, workers=2, lease=10,
                            extra=("--queue-size", "100000")) for i in range(n)]
    try:
        for r in reps:
            cluster.until("ready", lambda r=r: cluster.http(r.port, "GET", "/readyz")[0] == 200, 30)
        # The graph once, so that every plan names it by hash (a 93 KB body
        # parsed 240 times would measure the JSON parser).
        st, first = cluster.http(reps[0].port, "POST", "/v1/plans",
                                 {"graph": graph, "budget": base_budget - step, "wait": 60})
        assert st == 200, first
        ghash = first["graph_hash"]
        time.sleep(1.5)  # let the upkeep settle and the statistics flush
        xact0 = int(pg.sql(db, "SELECT xact_commit + xact_rollback FROM pg_stat_database"
                               " WHERE datname = current_database()")[0][0]) if db else 0
        cpu0 = [cluster.cpu_seconds(r.proc.pid) for r in reps]
        pgpids = pg.pids() if db else []
        pgcpu0 = sum(cluster.cpu_seconds(p) for p in pgpids)
        ccpu0 = client_cpu()

        def submit(i):
            r = reps[i % n]
            st, body = cluster.http(r.port, "POST", "/v1/plans", {"graph_hash": ghash, "budget": base_budget + i * step})
            assert st == 202, (st, body)
            return r, body["id"]

        def wait(sub):
            r, plan_id = sub
            while True:
                st, body = cluster.http(r.port, "GET", "/v1/plans/%s?wait=60&timeline=false" % plan_id)
                assert st == 200, (st, body)
                if body["status"] in ("done", "failed", "cancelled"):
                    assert body["status"] == "done", body
                    return

        # Every plan is submitted first (the queue fills), then each is
        # waited for: the rate is how fast the replicas drain the queue.
        t0 = time.monotonic()
        with concurrent.futures.ThreadPoolExecutor(CLIENTS) as pool:
            subs = list(pool.map(submit, range(PLANS)))
            list(pool.map(wait, subs))
        wall = time.monotonic() - t0
        daemon_cpu = sum(cluster.cpu_seconds(r.proc.pid) for r in reps) - sum(cpu0)
        pg_cpu = sum(cluster.cpu_seconds(p) for p in pgpids) - pgcpu0 if db else 0.0
        ccpu = client_cpu() - ccpu0
        xacts = 0
        if db:
            time.sleep(1.2)  # PostgreSQL flushes its statistics at most once a second
            xacts = int(pg.sql(db, "SELECT xact_commit + xact_rollback FROM pg_stat_database"
                                   " WHERE datname = current_database()")[0][0]) - xact0
            # The upkeep of the replicas meanwhile (about 3 statements a second each) is in there too.
        return PLANS / wall, daemon_cpu, pg_cpu, ccpu, wall, xacts
    finally:
        for r in reps:
            r.stop()


def main():
    if cluster.pg_bindir() is None:
        print("pg_bench: PostgreSQL is not installed (deploy/deps.sh installs it)")
        return 1
    if not os.path.exists(cluster.SERVER):
        print("pg_bench: no server at %s" % cluster.SERVER)
        return 1
    tmp = tempfile.mkdtemp(prefix="memplan-pgbench-")
    pg = cluster.Postgres(tmp)
    ncpu = os.cpu_count() or 1
    try:
        pg.init()
        print("pg_bench: %d uncached plans, %d client threads, --workers 2 per replica, %d cores shared by all"
              % (PLANS, CLIENTS, ncpu))
        print("%-10s %-11s %8s %9s %10s %9s %9s %10s %8s" % ("graph", "store", "replicas", "plans/s", "daemon",
                                                              "postgres", "client", "cores", "xact"))
        print("%-10s %-11s %8s %9s %10s %9s %9s %10s %8s" % ("", "", "", "", "ms CPU/plan", "ms/plan", "ms/plan",
                                                              "busy", "/plan"))
        for tag, graph, base, step in (("tiny", TINY, 1_000_000, 1000), ("resnet50", RESNET, int(1.5 * GIB), 1 << 20)):
            configs = [("sqlite", 1)] + [("postgresql", n) for n in REPLICAS]
            for kind, n in configs:
                rate, dcpu, pcpu, ccpu, wall, xacts = run(tmp, pg, kind, n, graph, base, step, tag)
                busy = (dcpu + pcpu + ccpu) / wall / ncpu
                print("%-10s %-11s %8d %9.1f %10.2f %9.2f %9.2f %9.0f%% %8s" % (
                    tag, kind, n, rate, 1000 * dcpu / PLANS, 1000 * pcpu / PLANS, 1000 * ccpu / PLANS, 100 * busy,
                    "%.1f" % (xacts / PLANS) if kind == "postgresql" else "-"))
                sys.stdout.flush()
        print("cores busy: CPU of the daemons, PostgreSQL and this client over the wall time, as a share of all"
              " cores; near 100% the machine is the limit, not the store")
        rt, commit = latency(pg)
        print("PostgreSQL round trip (SELECT 1): %.2f ms; a committed INSERT (fsync'd WAL): %.2f ms"
              " (pgbench, one client)" % (rt, commit))
    finally:
        pg.stop("immediate")
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
