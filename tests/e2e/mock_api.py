#!/usr/bin/env python3
"""tests/e2e/mock_api.py - a stand-in for memplan-server's JSON API (owned by the dashboard
work), to develop and test server/dashboard/index.html without the daemon. Python 3
standard library only.

Serves GET / (the dashboard file) and canned answers for
  GET /v1/status, GET /v1/plans?limit=N, GET /v1/plans/{id},
  GET /v1/graphs/{hash}/frontier?solver=...
The showcase plan p-000129 is a done ResNet-50 plan with a 40-step schedule and timeline;
its graph has a 6-point frontier. The graph of plan p-000128 has no frontier (404), and one
graph name holds HTML so that the page's escaping can be checked.

  mock_api.py [--port N] [--bind ADDR] [--port-file FILE] [--root REPO] [--draining]
              [--api-down] [--verbose]

--port 0 (the default) picks a free port; the port is printed on stdout and written to
--port-file. --api-down drops every /v1 connection without an answer (the page must show
its "unreachable" banner).
"""

import argparse
import datetime as dt
import json
import os
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit

KiB, MiB, GiB = 1024, 1024 ** 2, 1024 ** 3
START = time.time()
NOW = dt.datetime.now(dt.timezone.utc).replace(microsecond=0)


def rfc3339(seconds_ago):
    t = NOW - dt.timedelta(seconds=seconds_ago)
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def fake_hash(seed):
    # a stable 64-hex-digit string (not a real graph hash; the mock only needs the shape)
    x = 0
    for ch in seed:
        x = (x * 131 + ord(ch)) % (1 << 61)
    digits = ""
    while len(digits) < 64:
        x = (x * 6364136223846793005 + 1442695040888963407) % (1 << 64)
        digits += "%016x" % x
    return digits[:64]


def simulate_chain(n_nodes, kept, sizes, const_bytes, fwd_time, bwd_time):
    """A small chain plan: forward with frees of unkept values, then per segment (last
    first) recompute the dropped nodes and backpropagate. Returns schedule and timeline."""
    schedule, timeline = [], []
    present, grads = set(), set()

    def live():
        return const_bytes + sum(sizes[i] for i in present) + sum(sizes[i] for i in grads)

    names = ["conv%d" % (i + 1) if i % 3 != 2 else "relu%d" % (i + 1) for i in range(n_nodes)]
    peak = 0
    for i in range(n_nodes):
        present.add(i)
        peak = max(peak, live())
        if i > 0 and (i - 1) not in kept:
            present.discard(i - 1)
        schedule.append({"op": "compute", "node": names[i]})
        timeline.append(live())
    # segments: boundaries after each kept checkpoint that ends a segment
    ends = sorted(k for k in kept if k < n_nodes - 1 and k > 0)
    segments, start = [], 0
    for e in ends:
        segments.append((start, e))
        start = e + 1
    segments.append((start, n_nodes - 1))
    recompute_t = 0.0
    grads.add(n_nodes - 1)
    for (a, b) in reversed(segments):
        for j in range(a, b + 1):
            if j not in present:
                present.add(j)
                recompute_t += fwd_time[j]
                schedule.append({"op": "recompute", "node": names[j]})
                timeline.append(live())
                peak = max(peak, live())
        for j in range(b, a - 1, -1):
            if j > 0:
                grads.add(j - 1)
            peak = max(peak, live())
            grads.discard(j)
            present.discard(j)
            schedule.append({"op": "backward", "node": names[j]})
            timeline.append(live())
    fwd = float(sum(fwd_time))
    bwd = float(sum(bwd_time))
    return {
        "schedule": schedule,
        "timeline": timeline,
        "peak_bytes": peak,
        "time": {"forward": fwd, "backward": bwd, "recompute": recompute_t,
                 "total": fwd + bwd + recompute_t},
        "overhead_pct": 100.0 * recompute_t / (fwd + bwd),
        "checkpoints": [names[k] for k in sorted(kept)],
        "recomputed": sorted({s["node"] for s in schedule if s["op"] == "recompute"},
                             key=lambda s: int("".join(c for c in s if c.isdigit()))),
    }


KEPT = {
    "showcase": {0, 3, 7, 11, 12, 13, 14, 15},          # 8 recomputes, 40 steps
    "light": {0, 2, 3, 5, 7, 9, 11, 12, 13, 14, 15},    # fewer recomputes
    "heavy": {0, 5, 10, 11, 12, 13, 14, 15},            # more recomputes
    "none": set(range(16)),                            # keep everything
}


def make_result(scale, budget, graph_hash, solve_ms, variant="showcase", solver="auto"):
    n = 16
    sizes = [int((180 + 37 * ((i * 7) % 5) + 12 * i) * MiB * scale) for i in range(n)]
    const_bytes = int(1.25 * GiB * scale)
    kept = KEPT[variant]
    fwd_time = [10.0 if i % 3 != 2 else 1.0 for i in range(n)]
    bwd_time = [2.0 * t for t in fwd_time]
    sim = simulate_chain(n, kept, sizes, const_bytes, fwd_time, bwd_time)
    if variant == "showcase":
        assert len(sim["timeline"]) == 40, len(sim["timeline"])
    res = {
        "feasible": sim["peak_bytes"] <= budget,
        "solver": solver, "solver_used": "exact" if solver == "auto" else solver, "objective": "time", "accounting": "default",
        "exact": solver in ("auto", "exact"), "budget": budget, "peak_bytes": sim["peak_bytes"], "const_bytes": const_bytes,
        "time": sim["time"], "overhead_pct": sim["overhead_pct"], "segments": 4,
        "checkpoints": sim["checkpoints"], "recomputed": sim["recomputed"],
        "schedule": sim["schedule"], "timeline": sim["timeline"],
        "graph_hash": graph_hash, "solve_ms": solve_ms,
    }
    if not res["feasible"]:
        res["min_feasible_budget"] = sim["peak_bytes"]
    return res


def frontier_for(result, graph_hash):
    peak, ov = result["peak_bytes"], result["overhead_pct"]
    pnr = int(peak * 1.42)
    budgets = [int(peak * 0.71), int(peak * 0.83), peak, int(peak * 1.14), int(peak * 1.29), pnr]
    overheads = [2.3 * ov, 1.55 * ov, ov, 0.55 * ov, 0.22 * ov, 0.0]
    fwd_bwd = result["time"]["forward"] + result["time"]["backward"]
    return {
        "graph_hash": graph_hash, "solver": "auto", "solver_used": "exact", "exact": True,
        "peak_no_recompute": pnr,
        "points": [{"budget": b, "recompute": round(o * fwd_bwd / 100.0, 3), "overhead_pct": o}
                   for b, o in zip(budgets, overheads)],
        "solve_ms": 212.4,
    }


def build_state():
    graphs = {
        "resnet50": fake_hash("resnet50"), "vgg19": fake_hash("vgg19"),
        "unet": fake_hash("unet"), "densenet121": fake_hash("densenet121"),
        "googlenet": fake_hash("googlenet"), "bert": fake_hash("bert"),
    }
    bert_name = 'bert-base <img src=x onerror="alert(1)"> & co'
    plans = []

    def add(pid, status, gname, solver, budget, ago, run_s, scale=1.0, gdisplay=None, variant="showcase", **extra):
        h = graphs[gname]
        p = {"id": pid, "status": status, "graph_hash": h, "graph_name": gdisplay or gname,
             "solver": solver, "objective": "time", "accounting": "default", "budget": budget,
             "created_at": rfc3339(ago)}
        if status in ("running", "done", "failed", "cancelled"):
            p["started_at"] = rfc3339(ago - 0.4)
            p["queue_ms"] = 412.0
        if status in ("done", "failed", "cancelled"):
            p["finished_at"] = rfc3339(max(0, ago - run_s))
            p["run_ms"] = run_s * 1000.0
        if status == "done":
            p["result"] = make_result(scale, budget, h, p["run_ms"], variant, solver)
        p.update(extra)
        plans.append(p)

    add("p-000131", "running", "densenet121", "exact", 10 * GiB, 3, 0,
        progress={"phase": "search", "fraction": 0.42, "elapsed_ms": 3120.0})
    add("p-000130", "queued", "vgg19", "memonger", 8 * GiB, 2, 0)
    add("p-000129", "done", "resnet50", "auto", 6 * GiB, 64, 0.8473)
    add("p-000128", "failed", "unet", "exact", 5 * GiB, 190, 30.0,
        error={"code": "EDEADLINE", "message": "exact DP exceeded its 30 s deadline; retry with solver=approx"})
    add("p-000127", "done", "vgg19", "approx", 3 * GiB, 420, 0.1312, scale=1.25, variant="heavy")
    add("p-000126", "cancelled", "googlenet", "exact", 4 * GiB, 900, 2.0)
    add("p-000125", "done", "bert", "memonger", 12 * GiB, 1800, 0.0421, scale=1.8, gdisplay=bert_name, variant="light")
    add("p-000124", "done", "googlenet", "sqrt", 7 * GiB, 2600, 0.0035, scale=0.9, variant="heavy")
    add("p-000123", "done", "resnet50", "none", 16 * GiB, 3900, 0.0009, scale=1.0, variant="none")
    frontiers = {}
    for p in plans:
        if p["status"] == "done" and p["graph_hash"] not in frontiers and p["graph_name"] != "unet":
            frontiers[p["graph_hash"]] = frontier_for(p["result"], p["graph_hash"])
    return plans, frontiers


PLANS, FRONTIERS = build_state()
LIST_KEYS = ["id", "status", "graph_hash", "graph_name", "solver", "budget", "created_at",
             "finished_at", "run_ms", "progress"]


def list_entry(p):
    e = {k: p[k] for k in LIST_KEYS if k in p}
    r = p.get("result")
    if r:
        e.update(feasible=r["feasible"], peak_bytes=r["peak_bytes"], overhead_pct=r["overhead_pct"])
    return e


def status_body(draining):
    counts = {"queued": 0, "running": 0, "done": 0, "failed": 0, "cancelled": 0}
    for p in PLANS:
        counts[p["status"]] += 1
    counts["done"] += 117  # older plans no longer listed
    return {
        "version": "0.4.0-mock", "uptime_s": int(time.time() - START) + 7265, "workers": 2,
        "running": 1, "queue_depth": 1, "queue_capacity": 64, "draining": draining,
        "cache": {"entries": 12, "bytes": 48 * MiB, "max_bytes": 256 * MiB, "hits": 42, "misses": 6},
        "plans": counts,
    }


class Handler(BaseHTTPRequestHandler):
    server_version = "memplan-mock/1"
    cfg = None

    def log_message(self, fmt, *args):
        if self.cfg.verbose:
            sys.stderr.write("mock_api: " + (fmt % args) + "\n")

    def send_json(self, code, body):
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(data)

    def not_found(self, what):
        self.send_json(404, {"error": {"code": "ENOTFOUND", "message": what + " not found"}})

    def do_GET(self):
        url = urlsplit(self.path)
        path = url.path
        q = parse_qs(url.query)
        if path in ("/", "/index.html"):
            try:
                with open(self.cfg.page, "rb") as f:
                    data = f.read()
            except OSError as e:
                self.send_json(500, {"error": {"code": "EIO", "message": str(e)}})
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(data)
            return
        if not path.startswith("/v1/"):
            self.not_found("path")
            return
        if self.cfg.api_down:
            self.close_connection = True   # no answer at all: fetch() fails
            return
        parts = [unquote(x) for x in path.split("/")[2:]]
        if parts == ["status"]:
            self.send_json(200, status_body(self.cfg.draining))
        elif parts == ["plans"]:
            try:
                limit = max(1, min(500, int(q.get("limit", ["50"])[0])))
            except ValueError:
                self.send_json(400, {"error": {"code": "EINVAL", "message": "limit: not an integer"}})
                return
            self.send_json(200, {"plans": [list_entry(p) for p in PLANS[:limit]], "next": None})
        elif len(parts) == 2 and parts[0] == "plans":
            for p in PLANS:
                if p["id"] == parts[1]:
                    self.send_json(200, p)
                    return
            self.not_found("plan")
        elif len(parts) == 3 and parts[0] == "graphs" and parts[2] == "frontier":
            fr = FRONTIERS.get(parts[1])
            if fr is None:
                self.not_found("frontier")
            else:
                self.send_json(200, dict(fr, solver=q.get("solver", ["auto"])[0]))
        else:
            self.not_found("path")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description="mock memplan-server API for the dashboard")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--bind", default="127.0.0.1")
    ap.add_argument("--port-file")
    ap.add_argument("--root", default=os.path.normpath(os.path.join(here, "..", "..")))
    ap.add_argument("--draining", action="store_true")
    ap.add_argument("--api-down", action="store_true")
    ap.add_argument("--verbose", action="store_true")
    cfg = ap.parse_args()
    cfg.page = os.path.join(cfg.root, "server", "dashboard", "index.html")
    Handler.cfg = cfg
    srv = ThreadingHTTPServer((cfg.bind, cfg.port), Handler)
    srv.daemon_threads = True
    port = srv.server_address[1]
    if cfg.port_file:
        tmp = cfg.port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write("%d\n" % port)
        os.replace(tmp, cfg.port_file)
    print("mock_api: http://%s:%d/" % (cfg.bind, port), flush=True)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
