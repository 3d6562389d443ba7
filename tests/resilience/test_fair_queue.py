"""The queue is fair between clients (server/jobs.c): with one worker, a
client that has queued many plans does not delay another client's plan by
more than the plan running and one more of its own, and a client past
--max-queued-per-client gets 429 with Retry-After while others are still
served; frontier computations count as the asking client's. Real daemon, every job held 200 ms (MEMPLAN_TEST_PLAN_DELAY_MS) so
the queue's order is visible in the plans' start times."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from memplan_daemon import Daemon, chain_graph, wait_until  # noqa: E402
GRAPH = chain_graph(4, "fair")


def plan(budget, wait=None):
    body = {"graph": GRAPH, "budget": budget}
    if wait is not None:
        body["wait"] = wait
    return body


class FairQueueTest(unittest.TestCase):
    def setUp(self):
        self.d = Daemon(None, ["--workers", "1", "--queue-size", "64", "--max-queued-per-client", "12",
                               "--trusted-proxy", "127.0.0.1"],
                        {"MEMPLAN_TEST_PLAN_DELAY_MS": "200"}).start()

    def tearDown(self):
        self.d.cleanup()

    def test_other_client_served_next(self):
        a_ids = []
        for i in range(10):
            st, _, body = self.d.request("POST", "/v1/plans", plan(5000 + i), {"X-Client-Id": "flooder"})
            self.assertEqual(st, 202, body)
            a_ids.append(body["id"])
        st, _, b = self.d.request("POST", "/v1/plans", plan(9000, wait=30), {"X-Client-Id": "small"})
        self.assertEqual(st, 200, b)
        self.assertEqual(b["status"], "done")

        def all_done():
            views = [self.d.request("GET", "/v1/plans/" + i)[2] for i in a_ids]
            return views if all(v["status"] == "done" for v in views) else None
        views = wait_until(all_done, 30)
        self.assertTrue(views, "the flooder's plans did not finish")
        before = [v for v in views if v["started_ms"] < b["started_ms"]]
        # One was running when B came, one more was at the head of the ring:
        # a FIFO would have run all ten first.
        self.assertLessEqual(len(before), 2, [v["started_ms"] for v in views] + [b["started_ms"]])
        self.assertGreaterEqual(len(before), 1)

    def test_cap_per_client(self):
        codes = []
        for i in range(20):
            st, hdrs, body = self.d.request("POST", "/v1/plans", plan(6000 + i), {"X-Client-Id": "greedy"})
            codes.append(st)
            if st == 429:
                self.assertEqual(body["error"]["code"], "client_queue_full")
                self.assertIn("--max-queued-per-client", body["error"]["message"])
                self.assertTrue(hdrs.get("retry-after"))
        # 12 queued and at most one or two taken by the worker meanwhile
        self.assertIn(codes.count(202), (12, 13, 14), codes)
        self.assertEqual(codes.count(429), 20 - codes.count(202))
        st, _, body = self.d.request("POST", "/v1/plans", plan(7777), {"X-Client-Id": "polite"})
        self.assertEqual(st, 202, body)
        # Without X-Client-Id the client is its address: another client yet.
        st, _, body = self.d.request("POST", "/v1/plans", plan(7778))
        self.assertEqual(st, 202, body)

    def test_frontiers_are_the_clients(self):
        """A frontier computation (the frontier route, /v1/fit) is the
        asking client's: it counts in that client's --max-queued-per-client
        share, and takes that client's turn."""
        self.d.cleanup()
        self.d = Daemon(None, ["--workers", "1", "--queue-size", "64", "--max-queued-per-client", "4",
                               "--trusted-proxy", "127.0.0.1"],
                        {"MEMPLAN_TEST_PLAN_DELAY_MS": "1000"}).start()
        st, _, body = self.d.request("POST", "/v1/plans", plan(100, wait=30), {"X-Client-Id": "maps"})
        self.assertEqual((st, body["status"]), (200, "done"), body)
        graph = body["graph_hash"]
        # Keep the worker busy, then queue frontiers of every solver.
        st, _, _ = self.d.request("POST", "/v1/plans", plan(101), {"X-Client-Id": "busy"})
        self.assertEqual(st, 202)
        codes = []
        for solver in ("exact", "approx", "chain", "memonger", "sqrt", "swap", "hybrid", "layrub", "auto"):
            st, hdrs, body = self.d.request("GET", "/v1/graphs/%s/frontier?solver=%s" % (graph, solver),
                                            headers={"X-Client-Id": "maps"})
            codes.append(st)
            if st == 429:
                self.assertEqual(body["error"]["code"], "client_queue_full")
                self.assertTrue(hdrs.get("retry-after"))
        self.assertEqual(codes[:4], [202] * 4, codes)
        self.assertIn(429, codes, "frontiers are not counted in the client's share")
        # A plan of that client is refused too, while another client's is not.
        st, _, body = self.d.request("POST", "/v1/plans", plan(102), {"X-Client-Id": "maps"})
        self.assertEqual((st, body["error"]["code"]), (429, "client_queue_full"), body)
        st, _, body = self.d.request("POST", "/v1/plans", plan(103), {"X-Client-Id": "other"})
        self.assertEqual(st, 202, body)
        # A fit is the client's too.
        st, _, body = self.d.request("POST", "/v1/fit", {"graph_hash": graph, "budgets": [10 ** 6],
                                                          "solver": "auto"}, {"X-Client-Id": "maps"})
        self.assertEqual((st, body["error"]["code"]), (429, "client_queue_full"), body)


if __name__ == "__main__":
    unittest.main()
