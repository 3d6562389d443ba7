#!/usr/bin/env python3
"""refusal_bench.py - what a graph over the node limit costs the daemon before its 413.

A chain one node over --max-nodes (1,000,001 nodes by default, 58.8 MB of native JSON)
is POSTed to /v1/plans three times, one after another and then three at once; each
line gives the seconds from the first byte sent to the answer, and the daemon's peak
resident memory (VmHWM) above what it held before. The target: under 1 s and under
100 MB more, since the counting pre-scan refuses the graph before any parse.

usage: refusal_bench.py MEMPLAN_SERVER [NODES]
"""
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time


def chain_body(n):
    parts = ['{"budget": "1GiB", "graph": {"format": "memplan.graph/1", "nodes": [',
             '{"id":"n0","bytes":100,"time":1}']
    parts.extend(',{"id":"n%d","bytes":100,"time":1,"inputs":["n%d"]}' % (i, i - 1) for i in range(1, n))
    parts.append("]}}")
    return "".join(parts).encode()


def post(port, body, out, k):
    t0 = time.monotonic()
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"POST /v1/plans HTTP/1.1\r\nHost: b\r\nContent-Type: application/json\r\n"
              b"Connection: close\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
    data = b""
    while True:
        b = s.recv(65536)
        if not b:
            break
        data += b
    s.close()
    out[k] = (time.monotonic() - t0, data.split(b"\r\n", 1)[0].decode())


def hwm_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmHWM"):
                return int(line.split()[1])
    return 0


def main():
    server = sys.argv[1]
    nodes = int(sys.argv[2]) if len(sys.argv) > 2 else 1000001
    with tempfile.TemporaryDirectory() as d:
        pf = os.path.join(d, "port")
        p = subprocess.Popen([server, "--listen", "127.0.0.1:0", "--data-dir", d, "--port-file", pf,
                              "--max-nodes", str(nodes - 1), "--log-level", "warn"])
        try:
            end = time.monotonic() + 30
            while not (os.path.exists(pf) and open(pf).read().strip()):
                if time.monotonic() > end:
                    raise SystemExit("the daemon did not start")
                time.sleep(0.05)
            port = int(open(pf).read())
            body = chain_body(nodes)
            base = hwm_kb(p.pid)
            print("refusal: a %d-node chain (%.1f MB) against --max-nodes %d" % (nodes, len(body) / 1e6, nodes - 1))
            for rnd in range(3):
                out = {}
                post(port, body, out, 0)
                secs, status = out[0]
                print("  alone   #%d: %.2f s  %s  peak RSS +%.0f MB" % (rnd + 1, secs, status,
                                                                       (hwm_kb(p.pid) - base) / 1024))
            out = {}
            ts = [threading.Thread(target=post, args=(port, body, out, k)) for k in range(3)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
            print("  3 at once: %s  peak RSS +%.0f MB" % (
                ", ".join("%.2f s %s" % out[k] for k in range(3)), (hwm_kb(p.pid) - base) / 1024))
        finally:
            p.terminate()
            p.wait()


if __name__ == "__main__":
    main()
