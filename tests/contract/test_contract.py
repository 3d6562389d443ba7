"""Contract test: every answer memplan-server gives validates against
proto/openapi.yaml.

Three daemons are driven through every route and every status the spec
documents (and some it does not: a wrong method, an unknown path, a bad
query parameter). Each answer is checked as it arrives: its status must be
one the operation documents, its content type one the response lists, and
its JSON body must validate against that response's schema (openapi.py,
strict about undocumented fields). At the end every documented (method,
path, status) must have been seen. Routes the spec does not have must
answer with its Error body.

Run with /usr/bin/python3 (Debian's, with python3-yaml): `make
test-contract`. $MEMPLAN_SERVER is the binary under test, else
build/memplan-server of this checkout (harness.Daemon starts it).
"""

import http.client
import json
import os
import re
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "clients", "python", "tests"))

import harness  # noqa: E402  (the real daemon of this checkout)
import openapi  # noqa: E402

SPEC = openapi.Spec(os.path.join(REPO, "proto", "openapi.yaml"))
with open(os.path.join(REPO, "tests", "graphs", "cg_vgg19.txt")) as _f:
    VGG19 = _f.read()
with open(os.path.join(REPO, "tests", "graphs", "sym_mlp.json")) as _f:
    SYM_MLP = json.load(_f)  # memplan.graph/2: a batch dimension, one bound law, one warning
TOKEN = "contract-test-token"

# Documented answers the test cannot provoke, with the reason.
NOT_PROVOKED = {
    ("POST", "/v1/fit", "422"): "a frontier that fails other than by its deadline (out of memory, a planner bug)",
    ("GET", "/v1/graphs/{hash}/frontier", "422"): "as for POST /v1/fit",
    ("GET", "/v1/fit/{id}", "422"): "as for POST /v1/fit",
    ("GET", "/v1/fit/{id}", "429"): "as POST /v1/fit's 429: a poll restarts a computation lost with the daemon",
    ("GET", "/v1/fit/{id}", "503"): "as POST /v1/fit's 503: a poll restarts a computation lost with the daemon",
    ("GET", "/v1/fit/{id}", "507"): "as POST /v1/fit's 507: a poll restarts a computation lost with the daemon",
}

SEEN = set()        # (method, template, status) answered
UNDOCUMENTED = []   # answers on routes the spec does not have


def chain(k, length):
    """A native graph: `k` parallel chains of `length` nodes between a source and a sink."""
    nodes = [{"id": "in", "bytes": 1000, "time": 1}]
    ends = []
    for i in range(k):
        prev = "in"
        for j in range(length):
            nid = "c%d_%d" % (i, j)
            nodes.append({"id": nid, "inputs": [prev], "bytes": 1000 + 10 * i + j, "time": 1 + j % 3})
            prev = nid
        ends.append(prev)
    nodes.append({"id": "out", "inputs": ends, "bytes": 1000, "time": 1})
    return {"format": "memplan.graph/1", "nodes": nodes}


TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?')


def _digits(text):
    """The significant digits of a decimal's mantissa."""
    mantissa = re.split("[eE]", text)[0].replace("-", "").replace(".", "")
    return mantissa.strip("0") or "0"


def long_reals(text):
    """Reals in a JSON text written with more digits than the shortest
    form that reads back as the same double (Python's repr has that many)."""
    out = []
    for m in TOKENS.finditer(text):
        tok = m.group(0)
        if tok[0] == '"' or not re.search("[.eE]", tok):
            continue
        if len(_digits(tok)) > len(_digits(repr(float(tok)))):
            out.append("the real %s is not in its shortest form (%r)" % (tok, float(tok)))
    return out


class Daemon(harness.Daemon):
    """The real memplan-server (harness.Daemon: a free loopback port, its
    own temp dir, stopped with the test), with every answer checked against
    the spec (call)."""

    def __init__(self, *flags, token=None, delay_ms=0, env=None):
        super().__init__(*flags, token=token, delay_ms=delay_ms, workers=None, env=env)
        self.port = int(self.url.rsplit(":", 1)[1])
        self.problems = []

    def call(self, method, path, body=None, auth=True, raw=None, expect=None, headers=None):
        """One exchange, checked against the spec; returns (status, headers, JSON body or text)."""
        headers = dict(headers or {})
        if auth and self.token:
            headers["Authorization"] = "Bearer " + self.token
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        if data is not None:
            headers["Content-Type"] = "application/json"
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
        conn.request(method, path, body=data, headers=headers)
        resp = conn.getresponse()
        payload = resp.read()
        status, hdrs = resp.status, {k.lower(): v for k, v in resp.getheaders()}
        conn.close()
        ctype = hdrs.get("content-type", "")
        value = payload.decode("utf-8", "replace")
        if ctype.startswith("application/json"):
            try:
                value = json.loads(payload)
            except ValueError:
                self.problems.append("%s %s -> %d: the body is not JSON" % (method, path, status))
            self.problems += ["%s %s -> %d: %s" % (method, path, status, e)
                              for e in long_reals(payload.decode("utf-8", "replace"))]
        self.check(method, path, status, ctype, value, hdrs)
        if expect is not None and status != expect:
            raise AssertionError("%s %s answered %d, not %d: %s" % (method, path, status, expect, value))
        return status, hdrs, value

    def check(self, method, path, status, ctype, value, hdrs):
        where = "%s %s -> %d" % (method, path, status)
        template, op = SPEC.operation(method, path)
        if op is None:
            # no such operation: the spec's rule for every 4xx is its Error body
            UNDOCUMENTED.append(where)
            if not 400 <= status < 500:
                self.problems.append("%s: a route the spec does not have answered %d" % (where, status))
            self.problems += ["%s: %s" % (where, e)
                              for e in SPEC.validate({"$ref": "#/components/schemas/Error"}, value)]
            return
        resp, key = SPEC.response(op, status)
        if resp is None:
            self.problems.append("%s: status %d is not documented for %s %s" % (where, status, method, template))
            return
        SEEN.add((method, template, key))
        for name in resp.get("headers", {}):
            if name.lower() not in hdrs:
                self.problems.append("%s: the documented header %s is missing" % (where, name))
        content = resp.get("content")
        if not content:
            return
        media = ctype.split(";")[0].strip()
        if media not in content:
            self.problems.append("%s: content type %r is not one of %s" % (where, ctype, sorted(content)))
            return
        self.problems += ["%s: %s" % (where, e) for e in SPEC.validate(content[media]["schema"], value)]

    def wait_status(self, plan_id, status, limit=60):
        t0 = time.monotonic()
        while time.monotonic() - t0 < limit:
            _, _, view = self.call("GET", "/v1/plans/%s?timeline=false" % plan_id, expect=200)
            if view["status"] == status:
                return view
            time.sleep(0.05)
        raise AssertionError("plan %s never got to %s" % (plan_id, status))


class ContractTest(unittest.TestCase):
    """Named so that they run in order: the last one checks coverage."""

    def assertClean(self, d):
        self.assertEqual(d.problems, [], "\n" + "\n".join(d.problems))

    def test_1_api(self):
        d = Daemon("--workers", "2")
        try:
            self.api(d)
        finally:
            d.stop()
        self.assertClean(d)

    def api(self, d):
        for path, ctype in (("/", "text/html"), ("/healthz", "application/json"), ("/livez", "application/json"),
                            ("/readyz", "application/json"), ("/v1/status", "application/json"),
                            ("/metrics", "text/plain; version=0.0.4")):
            _, hdrs, _ = d.call("GET", path, expect=200)
            self.assertTrue(hdrs["content-type"].startswith(ctype), hdrs["content-type"])

        # plans: accepted, polled, long-polled, cached, infeasible, migrating
        _, hdrs, acc = d.call("POST", "/v1/plans", {"graph": VGG19, "budget": "2GiB"}, expect=202)
        self.assertEqual(hdrs["location"], "/v1/plans/" + acc["id"])
        h = acc["graph_hash"]
        d.call("GET", "/v1/plans/%s?wait=30&timeline=true" % acc["id"], expect=200)
        d.call("GET", "/v1/plans/%s" % acc["id"], expect=200)
        _, _, hit = d.call("POST", "/v1/plans", {"graph_hash": h, "budget": "2GiB"}, expect=200)
        self.assertEqual(hit["cache"], "hit")
        # a plan of its own, done
        self.assertNotEqual(hit["id"], acc["id"])
        _, _, v = d.call("GET", "/v1/plans/" + hit["id"], expect=200)
        self.assertEqual((v["status"], v["result"]), ("done", hit["result"]))
        d.call("DELETE", "/v1/plans/" + hit["id"], expect=409)
        d.call("POST", "/v1/plans", {"graph_hash": h, "budget": "2.5GiB", "wait": 30, "timeline": True},
               expect=200)
        _, _, inf = d.call("POST", "/v1/plans", {"graph_hash": h, "budget": 1000, "solver": "approx", "wait": 30},
                           expect=200)
        self.assertFalse(inf["result"]["feasible"])
        d.call("POST", "/v1/plans", {"graph_hash": h, "budget": "1.85GB", "solver": "hybrid", "wait": 30,
                                     "device": {"h2d_bandwidth": "6GB/s", "latency": "7us", "copy_engines": 1,
                                                "host_budget": None, "prefetch": 2}}, expect=200)
        d.call("POST", "/v1/plans", {"graph_hash": h, "budget": "3GB", "solver": "none", "wait": 30,
                                     "device": {"intra_layer_reuse": True}}, expect=200)
        d.call("POST", "/v1/plans", {"graph": chain(2, 3), "budget": 100000, "solver": "exact", "wait": 30,
                                     "objective": "memory", "accounting": "reference"}, expect=200)

        # refusals of a plan
        d.call("POST", "/v1/plans", {"graph_hash": h, "budget": "12Q"}, expect=400)
        d.call("POST", "/v1/plans", {"graph_hash": h, "budjet": 1}, expect=400)
        d.call("POST", "/v1/plans", raw=b"{not json", expect=400)
        d.call("POST", "/v1/plans", raw=b"", expect=400)
        d.call("POST", "/v1/plans", {"graph": {"format": "memplan.graph/1", "nodes": [{"id": "a", "inputs": ["b"]}]},
                                     "budget": 1}, expect=400)
        d.call("POST", "/v1/plans", {"graph_hash": "0" * 64, "budget": 1}, expect=404)

        # the listing
        _, _, page = d.call("GET", "/v1/plans?limit=2", expect=200)
        self.assertIsNotNone(page["next"])
        d.call("GET", "/v1/plans?limit=2&after=" + page["next"], expect=200)
        d.call("GET", "/v1/plans?status=done", expect=200)
        d.call("GET", "/v1/plans?limit=0", expect=400)
        d.call("GET", "/v1/plans?status=bogus", expect=400)
        d.call("GET", "/v1/plans?after=" + "f" * 32, expect=400)

        # one plan
        d.call("GET", "/v1/plans/" + "f" * 32, expect=404)
        d.call("GET", "/v1/plans/not-an-id", expect=404)
        d.call("GET", "/v1/plans/%s?wait=never" % acc["id"], expect=400)
        d.call("DELETE", "/v1/plans/" + acc["id"], expect=409)
        d.call("DELETE", "/v1/plans/" + "f" * 32, expect=404)

        # fit, graphs, frontiers
        d.call("POST", "/v1/fit", {"graph_hash": h, "budgets": ["1GB", "2GiB", 4000000000]}, expect=200)
        d.call("POST", "/v1/fit", {"graph_hash": h, "budgets": ["1.9GB", "3GB"], "swap": True,
                                   "device": {"copy_engines": 1}}, expect=200)
        d.call("POST", "/v1/fit", {"graph": chain(3, 2), "budgets": [1]}, expect=200)
        d.call("POST", "/v1/fit", {"graph_hash": h, "budgets": []}, expect=400)
        d.call("POST", "/v1/fit", {"graph_hash": "0" * 64, "budgets": [1]}, expect=404)
        # fit across devices, the least budget, the old names kept one version
        _, _, cat = d.call("GET", "/v1/devices", expect=200)
        names = [x["name"] for x in cat["devices"]]
        self.assertIn("a100-40gb", names)
        _, _, f = d.call("POST", "/v1/fit", {"graph_hash": h, "devices": ["a100-40gb", "t4-16gb"], "least": True,
                                             "budgets": ["1GB"], "solver": "approx"}, expect=200)
        self.assertEqual([x["name"] for x in f["devices"]], ["a100-40gb", "t4-16gb"])
        self.assertTrue(f["devices"][0]["fits"])
        self.assertLessEqual(f["devices"][0]["peak_bytes"], f["devices"][0]["usable_bytes"])
        self.assertEqual(f["least"]["budget"], f["min_feasible_budget"])
        self.assertTrue(f["least"]["fits"])
        self.assertEqual(f["budgets"][0]["min_feasible_budget"], f["min_feasible_budget"])
        self.assertEqual(f["budgets"][0]["min_budget"], f["min_feasible_budget"])
        d.call("POST", "/v1/fit", {"graph_hash": h, "devices": ["a100-41gb"]}, expect=400)
        d.call("POST", "/v1/fit", {"graph_hash": h, "budgets": [1], "wait": -1}, expect=400)
        # the async form: 202 with the fit's id, then the poll
        _, hdrs, acc = d.call("POST", "/v1/fit", {"graph_hash": h, "budgets": ["2.2GiB", "2.7GiB"], "wait": 0},
                              expect=202)
        self.assertEqual(hdrs["location"], "/v1/fit/" + acc["id"])
        _, _, got = d.call("GET", "/v1/fit/%s?wait=60" % acc["id"], expect=200)
        self.assertEqual([e["budget"] for e in got["budgets"]], [int(2.2 * 2 ** 30), int(2.7 * 2 ** 30)])
        _, _, again = d.call("GET", "/v1/fit/" + acc["id"], expect=200)
        self.assertEqual(again["cache"], "hit")
        d.call("GET", "/v1/fit/" + "f" * 32, expect=404)
        d.call("GET", "/v1/fit/%s?wait=never" % acc["id"], expect=400)
        _, _, st = d.call("GET", "/v1/graphs/" + h, expect=200)
        self.assertEqual(st["budget_lower_bound"], st["min_budget"])
        self.assertLessEqual(st["budget_lower_bound"], f["min_feasible_budget"])
        d.call("GET", "/v1/graphs/" + h, expect=200)
        d.call("GET", "/v1/graphs/" + "0" * 64, expect=404)
        d.call("GET", "/v1/graphs/%s/frontier?wait=60" % h, expect=200)
        d.call("GET", "/v1/graphs/%s/frontier?solver=swap&wait=60" % h, expect=200)
        d.call("GET", "/v1/graphs/%s/frontier?solver=memonger&wait=60" % h, expect=200)
        d.call("GET", "/v1/graphs/%s/frontier?wait=-1" % h, expect=400)
        d.call("GET", "/v1/graphs/%s/frontier?solver=none" % h, expect=400)
        d.call("GET", "/v1/graphs/%s/frontier" % ("0" * 64), expect=404)

        # a symbolic graph: plans, fits and frontiers at a binding; maximize (sync and async)
        _, _, p64 = d.call("POST", "/v1/plans", {"graph": SYM_MLP, "budget": "1GB", "wait": 30,
                                                 "dims": {"batch": 64}}, expect=200)
        self.assertEqual(p64["result"]["dims"], {"batch": 64})
        self.assertEqual(p64["result"]["forecast"], {"bounded_nodes": 1, "extrapolated": True})
        sh = p64["graph_hash"]
        _, _, fd = d.call("POST", "/v1/fit", {"graph": SYM_MLP, "budgets": ["1GB", 1000], "dims": {"batch": 8}},
                          expect=200)
        self.assertEqual(fd["dims"], {"batch": 8})
        _, _, st = d.call("GET", "/v1/graphs/" + sh, expect=200)
        self.assertEqual(st["dims"], {"batch": 64})
        _, _, fr = d.call("GET", "/v1/graphs/%s/frontier?dims=batch:16&wait=60" % sh, expect=200)
        self.assertEqual(fr["dims"], {"batch": 16})
        d.call("GET", "/v1/graphs/%s/frontier?dims=seq:2" % sh, expect=400)
        _, _, mx = d.call("POST", "/v1/fit", {"graph": SYM_MLP, "budgets": [200000000], "maximize": "batch"},
                          expect=200)
        self.assertLessEqual(mx["plan"]["peak_bytes"], 200000000)
        self.assertGreater(mx["next"]["min_feasible_budget"], 200000000)
        _, _, none = d.call("POST", "/v1/fit", {"graph": SYM_MLP, "budgets": [1000], "maximize": "batch"},
                            expect=200)
        self.assertEqual(none["value"], 0)
        self.assertIsNone(none["plan"])
        _, _, acc = d.call("POST", "/v1/fit", {"graph": SYM_MLP, "budgets": [300000000], "maximize": "batch",
                                               "max_value": 1000, "wait": 0}, expect=202)
        _, _, got = d.call("GET", "/v1/fit/%s?wait=60" % acc["id"], expect=200)
        self.assertEqual(got["maximize"], "batch")
        # an async fit at a binding: the poll answers at that binding
        _, _, acc = d.call("POST", "/v1/fit", {"graph": SYM_MLP, "budgets": ["1GB"], "dims": {"batch": 32},
                                               "wait": 0}, expect=202)
        _, _, got = d.call("GET", "/v1/fit/%s?wait=60" % acc["id"], expect=200)
        self.assertEqual(got["dims"], {"batch": 32})
        self.assertTrue(got["budgets"][0]["fits"])
        d.call("POST", "/v1/plans", {"graph": SYM_MLP, "budget": 1, "dims": {"batch": 0}}, expect=400)
        d.call("POST", "/v1/fit", {"graph": SYM_MLP, "budgets": [1, 2], "maximize": "batch"}, expect=400)
        # the largest batch on each GPU of the catalogue
        _, _, per = d.call("POST", "/v1/fit", {"graph": SYM_MLP, "maximize": "batch",
                                               "devices": ["t4-16gb", "a100-80gb"]}, expect=200)
        self.assertEqual(per["maximize"], "batch")
        self.assertTrue(0 < per["devices"][0]["value"] < per["devices"][1]["value"])
        d.call("POST", "/v1/fit", {"graph": SYM_MLP, "maximize": "batch", "devices": ["t4-16gb"], "budgets": [1]},
               expect=400)

        # what the spec does not route
        d.call("GET", "/v1/nothing", expect=404)
        d.call("PUT", "/v1/plans", {"budget": 1}, expect=405)

    def test_2_queue_auth_limits(self):
        """A daemon that holds every job until it is cancelled (Daemon.hold),
        one worker, a queue of one, a token and small limits: 401, 413, 503
        and cancellation."""
        d = Daemon("--workers", "1", "--queue-size", "1", "--max-body-bytes", "100000", "--max-budgets", "2",
                   "--max-nodes", "50", token=TOKEN)
        try:
            d.hold()
            self.queue(d)
        finally:
            d.stop()
        self.assertClean(d)

    def queue(self, d):
        small = chain(2, 2)
        d.call("POST", "/v1/plans", {"graph": small, "budget": 1}, auth=False, expect=401)
        d.call("DELETE", "/v1/plans/" + "f" * 32, auth=False, expect=401)
        d.call("POST", "/v1/fit", {"graph": small, "budgets": [1]}, auth=False, expect=401)
        d.call("POST", "/v1/plans", raw=b" " * 200000, expect=413)
        d.call("POST", "/v1/plans", {"graph": chain(10, 10), "budget": 1}, expect=413)
        _, _, a = d.call("POST", "/v1/plans", {"graph": small, "budget": 1}, expect=202)
        h = a["graph_hash"]
        # reads of plans and graphs need the token too (no --public-reads)
        d.call("GET", "/v1/plans", auth=False, expect=401)
        d.call("GET", "/v1/plans/" + a["id"], auth=False, expect=401)
        d.call("GET", "/v1/graphs/" + h, auth=False, expect=401)
        d.call("GET", "/v1/graphs/%s/frontier" % h, auth=False, expect=401)
        d.call("POST", "/v1/fit", {"graph_hash": h, "budgets": [1, 2, 3]}, expect=413)
        d.call("GET", "/v1/fit/" + "f" * 32, auth=False, expect=401)
        d.wait_status(a["id"], "running")
        _, _, b = d.call("POST", "/v1/plans", {"graph_hash": h, "budget": 2}, expect=202)
        _, hdrs, _ = d.call("POST", "/v1/plans", {"graph_hash": h, "budget": 3}, expect=503)
        self.assertTrue(hdrs["retry-after"].isdigit())
        d.call("GET", "/readyz", expect=503)
        d.call("POST", "/v1/fit", {"graph_hash": h, "budgets": [1]}, expect=503)
        d.call("GET", "/v1/graphs/%s/frontier" % h, expect=503)
        d.call("POST", "/v1/plans", {"graph_hash": h, "budget": 2}, expect=202)  # joins b
        d.call("DELETE", "/v1/plans/" + b["id"], expect=200)
        _, _, cancelling = d.call("DELETE", "/v1/plans/" + a["id"], expect=202)
        self.assertTrue(cancelling["cancel_requested"])
        d.wait_status(a["id"], "cancelled")
        d.call("DELETE", "/v1/plans/" + a["id"], expect=409)

    def test_3_deadlines(self):
        """--plan-timeout 1 with every job held until its deadline
        (Daemon.hold): a frontier's deadline answers 504, a plan's is a
        failed plan."""
        d = Daemon("--workers", "1", "--plan-timeout", "1")
        try:
            d.hold()
            _, _, p = d.call("POST", "/v1/plans", {"graph": chain(2, 2), "budget": 1, "wait": 30}, expect=200)
            self.assertEqual(p["status"], "failed")
            self.assertEqual(p["error"]["code"], "deadline_exceeded")
            # the frontier is a job: 202 with where to poll, then its failure,
            # remembered for the pollers that come after
            _, hdrs, f = d.call("GET", "/v1/graphs/%s/frontier" % p["graph_hash"], expect=202)
            self.assertIn("/v1/graphs/%s/frontier?solver=auto" % p["graph_hash"], hdrs["location"])
            self.assertEqual(f["graph_hash"], p["graph_hash"])
            self.assertIn(f["status"], ("queued", "running"))
            d.call("GET", "/v1/graphs/%s/frontier?wait=30" % p["graph_hash"], expect=504)
            d.call("GET", "/v1/graphs/%s/frontier" % p["graph_hash"], expect=504)
            d.call("POST", "/v1/fit", {"graph_hash": p["graph_hash"], "budgets": [1], "solver": "approx"},
                   expect=504)
            # an async fit: 202 with its id, polled while it runs, then its failure
            _, _, fa = d.call("POST", "/v1/fit", {"graph_hash": p["graph_hash"], "budgets": [2], "wait": 0},
                              expect=202)
            d.call("GET", "/v1/fit/" + fa["id"], expect=202)
            d.call("GET", "/v1/fit/%s?wait=30" % fa["id"], expect=504)
        finally:
            d.stop()
        self.assertClean(d)

    def test_4_timeline_off_unless_asked(self):
        """POST /v1/plans and GET /v1/plans/{id} leave the timeline out
        unless asked, as the spec says for both."""
        d = Daemon("--workers", "1")
        try:
            _, _, p = d.call("POST", "/v1/plans", {"graph": chain(2, 2), "budget": 100000, "wait": 30}, expect=200)
            self.assertNotIn("timeline", p["result"])
            _, _, v = d.call("GET", "/v1/plans/%s?timeline=true" % p["id"], expect=200)
            self.assertIn("timeline", v["result"])
            _, _, v = d.call("GET", "/v1/plans/" + p["id"], expect=200)
            self.assertNotIn("timeline", v["result"])
        finally:
            d.stop()
        self.assertClean(d)

    def test_5_client_cap(self):
        """--max-queued-per-client 1 with every job held: a client's second
        waiting plan is 429 with Retry-After, and so is a frontier or a fit
        it asks for; another client's plan is taken."""
        d = Daemon("--workers", "1", "--max-queued-per-client", "1", "--trusted-proxy", "127.0.0.1")
        try:
            d.hold()
            g = chain(2, 2)
            _, _, a = d.call("POST", "/v1/plans", {"graph": g, "budget": 1}, headers={"X-Client-Id": "a"},
                             expect=202)
            d.wait_status(a["id"], "running")
            d.call("POST", "/v1/plans", {"graph": g, "budget": 2}, headers={"X-Client-Id": "a"}, expect=202)
            _, hdrs, e = d.call("POST", "/v1/plans", {"graph": g, "budget": 3}, headers={"X-Client-Id": "a"},
                                expect=429)
            self.assertEqual(e["error"]["code"], "client_queue_full")
            self.assertTrue(hdrs["retry-after"].isdigit())
            # A frontier computation is the asking client's: it counts too.
            d.call("GET", "/v1/graphs/%s/frontier" % a["graph_hash"], headers={"X-Client-Id": "a"}, expect=429)
            d.call("POST", "/v1/fit", {"graph_hash": a["graph_hash"], "budgets": [10 ** 6]},
                   headers={"X-Client-Id": "a"}, expect=429)
            d.call("POST", "/v1/plans", {"graph": g, "budget": 3}, headers={"X-Client-Id": "b"}, expect=202)
        finally:
            d.stop()
        self.assertClean(d)

    def test_6_store_full(self):
        """A store capped at 40 pages (MEMPLAN_TEST_STORE_MAX_PAGES_FILE):
        once full, new work is 507 store_full on every work route and
        /readyz says store_full with the reason."""
        cap = tempfile.NamedTemporaryFile("w", suffix=".pages", delete=False)
        cap.write("40\n")
        cap.close()
        d = Daemon("--workers", "1", "--max-queued-per-client", "0", "--queue-size", "500",
                   env={"MEMPLAN_TEST_STORE_MAX_PAGES_FILE": cap.name})
        try:
            hashes = []
            for i in range(200):
                st, _, body = d.call("POST", "/v1/plans", {"graph": chain(3, 20 + i), "budget": 10 ** 9})
                if st == 507:
                    self.assertEqual(body["error"]["code"], "store_full")
                    break
                self.assertIn(st, (200, 202), body)
                hashes.append(body["graph_hash"])
            else:
                self.fail("the store never filled")
            _, _, ready = d.call("GET", "/readyz", expect=503)
            self.assertEqual(ready["status"], "store_full")
            self.assertIn("full", ready["reason"])
            d.call("POST", "/v1/fit", {"graph_hash": hashes[0], "budgets": [10 ** 9], "solver": "approx"},
                   expect=507)
            d.call("GET", "/v1/graphs/%s/frontier?solver=sqrt" % hashes[0], expect=507)
        finally:
            d.stop()
            os.unlink(cap.name)
        self.assertClean(d)

    def test_7_principals(self):
        """Named principals: a read principal may not start work (403 on
        every work route); past --auth-failures-per-minute wrong tokens,
        every guarded route is 429 auth_throttled with Retry-After."""
        d = Daemon("--workers", "1", "--auth-failures-per-minute", "2",
                   token="w work work-token-0123456789\nr read read-token-0123456789")
        try:
            g = chain(2, 7)
            rd = {"Authorization": "Bearer read-token-0123456789"}
            wk = {"Authorization": "Bearer work-token-0123456789"}
            _, _, a = d.call("POST", "/v1/plans", {"graph": g, "budget": 10 ** 6, "wait": 30}, auth=False,
                             headers=wk, expect=200)
            pid = a["id"]
            d.call("POST", "/v1/plans", {"graph": g, "budget": 1}, auth=False, headers=rd, expect=403)
            d.call("POST", "/v1/fit", {"graph_hash": a["graph_hash"], "budgets": [10 ** 6]}, auth=False,
                   headers=rd, expect=403)
            d.call("GET", "/v1/graphs/%s/frontier" % a["graph_hash"], auth=False, headers=rd, expect=403)
            # a poll may start work: refused before the fit is looked up
            d.call("GET", "/v1/fit/" + "0" * 32, auth=False, headers=rd, expect=403)
            d.call("DELETE", "/v1/plans/" + pid, auth=False, headers=rd, expect=403)
            # a read principal sees only its own: the work principal's plan is unknown to it
            d.call("GET", "/v1/plans/" + pid, auth=False, headers=rd, expect=404)
            for i in range(2):
                d.call("GET", "/v1/plans", auth=False, headers={"Authorization": "Bearer bad%d" % i}, expect=401)
            for method, path in (("GET", "/v1/plans"), ("GET", "/v1/plans/" + pid), ("DELETE", "/v1/plans/" + pid),
                                 ("GET", "/v1/graphs/" + a["graph_hash"]), ("POST", "/v1/plans"),
                                 ("POST", "/v1/fit"), ("GET", "/v1/graphs/%s/frontier" % a["graph_hash"])):
                _, hdrs, e = d.call(method, path, {} if method == "POST" else None, auth=False, headers=wk,
                                    expect=429)
                self.assertEqual(e["error"]["code"], "auth_throttled")
                self.assertTrue(hdrs["retry-after"].isdigit())
        finally:
            d.stop()
        self.assertClean(d)

    def test_9_coverage(self):
        """Every documented answer was seen (when the tests above ran)."""
        missing = sorted(SPEC.documented() - SEEN - set(NOT_PROVOKED))
        self.assertEqual(missing, [], "documented but never answered: %s" % missing)


if __name__ == "__main__":
    unittest.main()
