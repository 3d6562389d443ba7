#!/usr/bin/env python3
"""cached_post_bench.py - what a POST /v1/plans answered from the cache costs.

Each daemon given (e.g. this build and an older one) plans a 50-node chain once, then
answers the same body N times on one kept-open connection (the body's cached answer;
each is a plan of its own, one row written in the store), then GET /v1/plans/{id} N
times (the cached view, nothing written), two rounds each; each line gives the median
and the 90th percentile of one request's time as the client sees it, --log-level warn.

usage: cached_post_bench.py MEMPLAN_SERVER [MEMPLAN_SERVER ...] [-n N]
"""
import http.client
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from memplan_daemon import Daemon, chain_graph  # noqa: E402


def timed(conn, method, path, data, n):
    ts = []
    for _ in range(n):
        t0 = time.perf_counter()
        conn.request(method, path, body=data, headers={"Content-Type": "application/json"})
        r = conn.getresponse()
        r.read()
        if r.status != 200:
            raise SystemExit("%s %s answered %d" % (method, path, r.status))
        ts.append(time.perf_counter() - t0)
    ts.sort()
    return "median %.3f ms, p90 %.3f ms" % (ts[len(ts) // 2] * 1e3, ts[int(len(ts) * 0.9)] * 1e3)


def main(argv):
    n = 400
    if "-n" in argv:
        i = argv.index("-n")
        n = int(argv[i + 1])
        del argv[i:i + 2]
    if not argv:
        raise SystemExit(__doc__)
    body = json.dumps({"graph": chain_graph(50, "bench"), "budget": 10 ** 6, "wait": 30}).encode()
    for binary in argv:
        d = Daemon(None, ["--workers", "1", "--log-level", "warn"], binary=os.path.abspath(binary)).start()
        try:
            st, _, first = d.request("POST", "/v1/plans", body)
            if st != 200:
                raise SystemExit("the first plan answered %d: %s" % (st, first))
            conn = http.client.HTTPConnection("127.0.0.1", d.port)
            for rnd in (1, 2):
                print("%s round %d: cached POST /v1/plans %s; GET /v1/plans/{id} %s"
                      % (binary, rnd, timed(conn, "POST", "/v1/plans", body, n),
                         timed(conn, "GET", "/v1/plans/" + first["id"], None, n)))
            conn.close()
        finally:
            d.cleanup()


if __name__ == "__main__":
    main(sys.argv[1:])
