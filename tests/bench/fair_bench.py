#!/usr/bin/python3
"""fair_bench.py - `make bench`, queue fairness: the latency of one client's
small plan while another client floods the queue, on a real daemon with one
worker.

Client A (X-Client-Id: flood) keeps FLOOD (60) exact plans of the shipped
ResNet-152 graph waiting (a distinct budget each, so none is cached or
joined; about 0.2-0.3 s of planning each here), or as many as the daemon
lets it: it submits whenever /v1/status shows fewer queued. Client B
(X-Client-Id: small) sends a 3-node plan with "wait" every 0.5 s, retrying
a 429/503 after 0.2 s as a client would, and times each from its first
attempt to the done answer. Printed: B's p50 / p95 / max and A's counts,
for each binary
given (the first is the build under test; a second, such as the baseline
/work/baseline/build/memplan-server, is run the same way for comparison:
its queue is one FIFO). Figures only, nothing asserted: the machine is
shared and noisy.

Usage: fair_bench.py SERVER [BASELINE_SERVER]   (standard library only)
"""

import http.client
import json
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
FLOOD = int(os.environ.get("FAIR_BENCH_FLOOD", "60"))
SAMPLES = int(os.environ.get("FAIR_BENCH_SAMPLES", "20"))
BIG = (ROOT / "tests" / "graphs" / "cg_resnet152.txt").read_text()
TINY = {"format": "memplan.graph/1", "nodes": [
    {"id": "a", "bytes": 1000, "time": 1}, {"id": "b", "inputs": ["a"], "bytes": 2000, "time": 1},
    {"id": "c", "inputs": ["b"], "bytes": 1000, "time": 1}]}


def call(port, body, client, timeout=600):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("POST", "/v1/plans", body=json.dumps(body),
                     headers={"Content-Type": "application/json", "X-Client-Id": client})
        resp = conn.getresponse()
        return resp.status, json.loads(resp.read() or b"null")
    finally:
        conn.close()


def trusted_flag(server):
    """X-Client-Id counts only from a trusted proxy, where the server has
    that notion (an older build takes it from anyone)."""
    usage = subprocess.run([server, "--help"], capture_output=True, text=True).stdout
    return ["--trusted-proxy", "127.0.0.1"] if "--trusted-proxy" in usage else []


def run(server):
    tmp = tempfile.mkdtemp(prefix="fair-bench-")
    port_file = os.path.join(tmp, "port")
    proc = subprocess.Popen([server, "--listen", "127.0.0.1:0", "--port-file", port_file, "--data-dir",
                             os.path.join(tmp, "data"), "--workers", "1", "--queue-size", "200",
                             "--log-level", "warn", "--max-wait", "600"] + trusted_flag(server),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(300):
            if os.path.exists(port_file) and open(port_file).read().strip():
                break
            time.sleep(0.05)
        port = int(open(port_file).read())
        st, first = call(port, {"graph": BIG, "budget": "4GB", "solver": "exact"}, "flood")
        assert st in (200, 202), (st, first)
        ghash = first["graph_hash"]
        stop = threading.Event()
        counts = {"accepted": 0, "refused": 0}
        budget = [2_000_000_000]

        def depth():
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            try:
                conn.request("GET", "/v1/status")
                return json.loads(conn.getresponse().read())["queue_depth"]
            finally:
                conn.close()

        def flood():
            while not stop.is_set():
                if depth() >= FLOOD:
                    time.sleep(0.05)
                    continue
                budget[0] += 1_000_000
                st, _ = call(port, {"graph_hash": ghash, "budget": budget[0], "solver": "exact"}, "flood")
                if st in (200, 202):
                    counts["accepted"] += 1
                else:
                    counts["refused"] += 1
                    time.sleep(0.05)
        t = threading.Thread(target=flood, daemon=True)
        t.start()
        time.sleep(1.0)
        lat, refused_b = [], 0
        for i in range(SAMPLES):
            t0 = time.monotonic()
            while True:  # until it is done, retrying refusals as a client would
                st, body = call(port, {"graph": TINY, "budget": 3000 + i, "wait": 600}, "small")
                if st in (429, 503):
                    refused_b += 1
                    time.sleep(0.2)
                    continue
                break
            lat.append(time.monotonic() - t0)
            if st != 200 or body.get("status") != "done":
                print("  unexpected answer to B: %s %s" % (st, str(body)[:200]))
            time.sleep(0.5)
        stop.set()
        t.join(30)
        lat.sort()
        p95 = lat[min(len(lat) - 1, int(round(0.95 * (len(lat) - 1))))]
        print("  %s\n    B's small plan, submit to done: p50 %.3f s  p95 %.3f s  max %.3f s  (%d plans, "
              "%d refusals retried)\n    A: %d plans accepted, %d refused" %
              (server, statistics.median(lat), p95, lat[-1], len(lat), refused_b, counts["accepted"],
               counts["refused"]))
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    print("fair_bench: one worker, client A keeps up to %d exact ResNet-152 plans queued, "
          "client B sends a 3-node plan with wait" % FLOOD)
    for server in sys.argv[1:]:
        if os.path.exists(server):
            run(server)
        else:
            print("  %s: not found, skipped" % server)


if __name__ == "__main__":
    main()
