"""memplan.Client against the real daemon: plans, fit, frontier and errors,
each checked against what `memplan` says offline on the same graph."""

import json
import os
import pathlib
import unittest

import harness
import memplan

GIB = 1 << 30


class ClientPlanTest(harness.DaemonTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.client = memplan.Client(cls.url)
        cls.hash = harness.cli_json("inspect", harness.VGG19)["graph_hash"]

    def test_plan_matches_offline(self):
        offline = harness.cli_json("plan", harness.VGG19, "--budget", "2GiB", "--summary")
        res = self.client.plan(harness.VGG19, "2GiB")
        self.assertTrue(res["feasible"])
        self.assertEqual(res["budget"], 2 * GIB)
        self.assertEqual(res["peak_bytes"], offline["peak_bytes"])
        self.assertLessEqual(res["peak_bytes"], 2 * GIB)
        for key in ("solver_used", "overhead_pct", "checkpoints", "recomputed", "time", "graph_hash"):
            self.assertEqual(res[key], offline[key], key)
        self.assertEqual(res["graph_hash"], self.hash)
        self.assertIn("schedule", res)
        self.assertNotIn("timeline", res)

    def test_graph_forms_are_the_same_graph(self):
        """A path, a pathlib.Path, the text, bytes and the hash all name one graph."""
        text = pathlib.Path(harness.VGG19).read_text()
        offline = harness.cli_json("plan", harness.VGG19, "--budget", "2500000000", "--summary")
        for graph in (pathlib.Path(harness.VGG19), text, text.encode(), self.hash, harness.VGG19):
            res = self.client.plan(graph, 2500000000)
            self.assertEqual(res["graph_hash"], self.hash)
            self.assertEqual(res["peak_bytes"], offline["peak_bytes"])
        native = harness.cli_json("convert", harness.VGG19)
        self.assertEqual(self.client.plan(native, 2500000000)["peak_bytes"], offline["peak_bytes"])
        self.assertEqual(self.client.plan(json.dumps(native), 2500000000)["peak_bytes"], offline["peak_bytes"])

    def test_missing_file_is_file_not_found(self):
        """A one-line str that is not JSON is a path: a missing file raises
        FileNotFoundError before anything is sent (plan, submit_plan, fit),
        as does a missing pathlib.Path; nothing reaches the daemon."""
        before = self.daemon.metric("memplan_http_requests_total", method="POST")
        for graph in ("/nonexistent/graph.json", "cg_nothing.txt", pathlib.Path("/nonexistent/graph.txt")):
            with self.assertRaises(FileNotFoundError):
                self.client.plan(graph, "2GiB")
            with self.assertRaises(FileNotFoundError):
                self.client.submit_plan(graph, "2GiB")
            with self.assertRaises(FileNotFoundError):
                self.client.fit(graph, ["2GiB"])
        self.assertEqual(self.daemon.metric("memplan_http_requests_total", method="POST"), before)
        # graph text is never taken for a path: a bad one is the daemon's 400
        with self.assertRaises(memplan.RequestError) as cm:
            self.client.plan("3 2\nnot a graph\n", "2GiB")
        self.assertEqual(cm.exception.status, 400)

    def test_plan_options_reach_the_planner(self):
        """solver, device and timeline are the request's own fields."""
        offline = harness.cli_json("plan", harness.VGG19, "--budget", "1900MiB", "--solver", "hybrid",
                                   "--h2d-bandwidth", "6GB/s", "--copy-engines", "1", "--timeline", "--summary")
        res = self.client.plan(harness.VGG19, "1900MiB", solver="hybrid", timeline=True,
                               device={"h2d_bandwidth": "6GB/s", "copy_engines": 1})
        for key in ("feasible", "solver_used", "peak_bytes", "host_peak_bytes", "time", "swapped", "timeline"):
            self.assertEqual(res[key], offline[key], key)
        self.assertEqual(res["device"]["copy_engines"], 1)
        self.assertTrue(res["feasible"])
        self.assertTrue(res["swapped"])

    def test_infeasible_budget(self):
        offline = harness.cli_json("plan", harness.VGG19, "--budget", "1GiB", "--summary", ok_codes=(1,))
        res = self.client.plan(harness.VGG19, GIB)
        self.assertFalse(res["feasible"])
        self.assertEqual(res["min_feasible_budget"], offline["min_feasible_budget"])
        self.assertGreater(res["min_feasible_budget"], GIB)

    def test_bad_budget(self):
        for budget in ("lots", "-3GiB", -1, True, "1500m"):
            with self.assertRaises(memplan.MemplanError) as cm:
                self.client.plan(harness.VGG19, budget)
            e = cm.exception
            self.assertIsInstance(e, memplan.RequestError)
            self.assertEqual((e.status, e.code, e.path), (400, "invalid_request", "$.budget"), budget)
            self.assertTrue(e.message)
            self.assertEqual(len(e.request_id), 32)
            self.assertIn("$.budget", str(e))

    def test_bad_graph_and_field(self):
        with self.assertRaises(memplan.RequestError) as cm:
            self.client.plan({"format": "memplan.graph/1", "nodes": [{"id": "a", "bytes": -1}]}, GIB)
        self.assertEqual(cm.exception.code, "invalid_graph")
        self.assertTrue(cm.exception.path.startswith("$.graph"), cm.exception.path)
        with self.assertRaises(memplan.RequestError) as cm:
            self.client.plan(harness.VGG19, GIB, objectiv="time")
        self.assertEqual((cm.exception.code, cm.exception.path), ("invalid_request", "$.objectiv"))
        with self.assertRaises(memplan.NotFoundError) as cm:
            self.client.plan("0" * 64, GIB)
        self.assertEqual((cm.exception.code, cm.exception.path), ("unknown_graph", "$.graph_hash"))
        with self.assertRaises(TypeError):
            self.client.plan(42, GIB)

    def test_submit_and_get(self):
        sub = self.client.submit_plan(harness.VGG19, "2300MiB", solver="approx")
        self.assertIn(sub["status"], ("queued", "running", "done"))
        self.assertEqual(sub["graph_hash"], self.hash)
        view = self.client.get_plan(sub["id"], wait=30, timeline=True)
        self.assertEqual(view["status"], "done")
        self.assertEqual(view["solver"], "closures")  # approx's own name
        self.assertEqual(view["budget"], 2300 << 20)
        self.assertIn("timeline", view["result"])
        self.assertNotIn("timeline", self.client.get_plan(sub["id"], timeline=False)["result"])
        again = self.client.submit_plan(harness.VGG19, "2300MiB", solver="approx")
        self.assertEqual((again["status"], again["cache"]), ("done", "hit"))
        self.assertEqual(again["result"]["peak_bytes"], view["result"]["peak_bytes"])
        listed = self.client.list_plans(status="done", limit=500)
        self.assertIn(sub["id"], [p["id"] for p in listed["plans"]])
        with self.assertRaises(memplan.NotFoundError) as cm:
            self.client.get_plan("f" * 32)
        self.assertEqual((cm.exception.status, cm.exception.code, cm.exception.path), (404, "not_found", "$.id"))
        with self.assertRaises(memplan.ConflictError) as cm:
            self.client.cancel(sub["id"])
        self.assertEqual(cm.exception.code, "already_finished")

    def test_fit_agrees_with_plan(self):
        budgets = [GIB, "2GiB", 2400000000, "3GiB"]
        fit = self.client.fit(harness.VGG19, budgets)
        self.assertEqual(fit["graph_hash"], self.hash)
        self.assertEqual([e["budget"] for e in fit["budgets"]], [GIB, 2 * GIB, 2400000000, 3 * GIB])
        for entry in fit["budgets"]:
            res = self.client.plan(self.hash, entry["budget"])
            self.assertEqual(entry["fits"], res["feasible"], entry)
            if entry["fits"]:
                self.assertEqual(entry["recompute"], res["time"]["recompute"], entry)
                self.assertEqual(entry["overhead_pct"], res["overhead_pct"], entry)
                self.assertLessEqual(res["peak_bytes"], entry["peak_bytes"])
                self.assertLessEqual(entry["peak_bytes"], entry["budget"])
            else:
                self.assertEqual(entry["min_feasible_budget"], res["min_feasible_budget"])
        gpus = self.client.fit(self.hash, devices=["a100-40gb", "t4-16gb"], least=True, solver="approx")
        self.assertEqual([d["name"] for d in gpus["devices"]], ["a100-40gb", "t4-16gb"])
        self.assertTrue(all(d["fits"] and d["peak_bytes"] <= d["usable_bytes"] for d in gpus["devices"]))
        self.assertEqual(gpus["least"]["budget"], gpus["min_feasible_budget"])
        one = self.client.fit(self.hash, "2GiB")
        self.assertEqual(one["budgets"], [fit["budgets"][1]])
        with self.assertRaises(memplan.RequestError) as cm:
            self.client.fit(self.hash, ["2GiB", "two"])
        self.assertEqual(cm.exception.path, "$.budgets[1]")

    def test_frontier(self):
        self.client.fit(harness.VGG19, ["2GiB"])  # the daemon holds the graph from here on
        offline = harness.cli_json("frontier", harness.VGG19)
        front = self.client.frontier(self.hash)
        self.assertGreater(len(front["points"]), 1)
        self.assertEqual([(p["budget"], p["recompute"]) for p in front["points"]],
                         [(p["budget"], p["recompute"]) for p in offline["points"]])
        self.assertEqual(front["peak_no_recompute"], offline["peak_no_recompute"])
        approx = self.client.frontier(self.hash, solver="approx")
        self.assertEqual(approx["solver"], "closures")
        # without long polls: the route answers 202 while it computes, polled
        sqrt = self.client.frontier(self.hash, solver="sqrt", wait=0)
        self.assertEqual(sqrt["solver"], "sqrt")
        self.assertGreater(len(sqrt["points"]), 0)
        with self.assertRaises(memplan.RequestError) as cm:
            self.client.frontier(self.hash, solver="none")
        self.assertEqual(cm.exception.path, "?solver")
        with self.assertRaises(memplan.NotFoundError) as cm:
            self.client.frontier("e" * 64)
        self.assertEqual(cm.exception.path, "$.hash")
        with self.assertRaises(ValueError):
            self.client.frontier(harness.VGG19)

    def test_graph_named_after_its_file(self):
        """A graph file sent as Kusumoto text is named after the file in the
        daemon's listing and views."""
        res = self.client.plan(os.path.join(harness.GRAPHS, "cg_unet.txt"), "8GiB", solver="approx")
        mine = [p for p in self.client.list_plans(limit=500)["plans"] if p["graph_hash"] == res["graph_hash"]]
        self.assertTrue(mine)
        for p in mine:
            self.assertEqual(p["graph_name"], "cg_unet")
            self.assertEqual(p["peak_bytes"], res["peak_bytes"])
            self.assertEqual(p["feasible"], res["feasible"])
        self.assertEqual(self.client.get_plan(mine[0]["id"])["graph_name"], "cg_unet")

    def test_graph_stats_and_status(self):
        self.client.fit(harness.VGG19, ["3GiB"])
        offline = harness.cli_json("inspect", harness.VGG19)
        stats = self.client.graph_stats(self.hash)
        for key in ("nodes", "edges", "activation_bytes", "peak_no_recompute", "budget_lower_bound"):
            self.assertEqual(stats[key], offline[key], key)
        st = self.client.status()
        self.assertEqual(st["workers"], 2)
        self.assertFalse(st["draining"])

    def test_no_daemon(self):
        with self.assertRaises(memplan.TransportError) as cm:
            memplan.Client("http://127.0.0.1:9", timeout=5).status()
        self.assertIsNone(cm.exception.status)


if __name__ == "__main__":
    unittest.main()
