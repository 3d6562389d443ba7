"""The queue is fair between clients (server/jobs.c): with one worker, a
client that has queued many plans does not delay another client's plan by
more than the plan running, and a client past --max-queued-per-client gets
429 with Retry-After while others are still served; frontier computations
count as the asking client's.

Real daemon, one worker, every job held before it plans until cancelled
(Daemon.hold: MEMPLAN_TEST_PLAN_HOLD_FILE): the worker stays on
the job it took for as long as a test needs, so what is queued, and in what
order the worker takes it, is the daemon's decision alone, never a matter
of how fast the test sends its requests. A test moves the worker on by
cancelling the job it holds, and cancels what is left before it ends."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from memplan_daemon import Daemon, chain_graph, until  # noqa: E402
GRAPH = chain_graph(4, "fair")


def plan(budget, wait=None):
    body = {"graph": GRAPH, "budget": budget}
    if wait is not None:
        body["wait"] = wait
    return body


class FairQueueTest(unittest.TestCase):
    CAP = 12

    def setUp(self):
        self.d = Daemon(None, ["--workers", "1", "--queue-size", "64", "--max-queued-per-client", str(self.CAP),
                               "--trusted-proxy", "127.0.0.1", "--grace", "1"])
        self.d.hold()
        self.d.start()
        self.ids = []

    def tearDown(self):
        for i in self.ids:  # the held and queued ones, so the drain is quick
            self.d.request("DELETE", "/v1/plans/" + i)
        self.d.cleanup()

    def submit(self, client, budget, expect=202):
        st, hdrs, body = self.d.request("POST", "/v1/plans", plan(budget), {"X-Client-Id": client})
        self.assertEqual(st, expect, body)
        if st == 202:
            self.ids.append(body["id"])
        return st, hdrs, body

    def status(self, plan_id):
        return self.d.request("GET", "/v1/plans/" + plan_id)[2]["status"]

    def hold(self, client, budget):
        """A plan of `client` that the worker takes and holds: its id."""
        plan_id = self.submit(client, budget)[2]["id"]
        until("the worker to take plan %s" % plan_id, lambda: self.status(plan_id) == "running")
        return plan_id

    def test_other_client_served_next(self):
        """The flooder's first plan holds the worker while it queues nine
        more; then another client's plan comes. When the held plan is
        cancelled, the worker's next plan is the other client's (a FIFO
        would take the flooder's nine first)."""
        first = self.hold("flooder", 5000)
        flood = [self.submit("flooder", 5001 + i)[2]["id"] for i in range(9)]
        small = self.submit("small", 9000)[2]["id"]
        st, _, body = self.d.request("DELETE", "/v1/plans/" + first)
        self.assertIn(st, (200, 202), body)  # 202: the running plan stops at its next poll
        running = until("the worker to take its next plan",
                        lambda: [i for i in flood + [small] if self.status(i) == "running"])
        self.assertEqual(running, [small], "the worker took the flooder's plan before the other client's")
        self.assertTrue(all(self.status(i) == "queued" for i in flood))

    def test_cap_per_client(self):
        """With the worker held by another client's plan, exactly CAP of
        the greedy client's 20 plans are queued and the rest refused with
        429 client_queue_full and Retry-After; other clients are still
        served."""
        self.hold("busy", 6000)
        codes = []
        for i in range(20):
            st, hdrs, body = self.d.request("POST", "/v1/plans", plan(6001 + i), {"X-Client-Id": "greedy"})
            codes.append(st)
            if st == 202:
                self.ids.append(body["id"])
            if st == 429:
                self.assertEqual(body["error"]["code"], "client_queue_full")
                self.assertIn("--max-queued-per-client", body["error"]["message"])
                self.assertTrue(hdrs.get("retry-after"))
        self.assertEqual(codes, [202] * self.CAP + [429] * (20 - self.CAP))
        self.submit("polite", 7777)
        # Without X-Client-Id the client is its address: another client yet.
        st, _, body = self.d.request("POST", "/v1/plans", plan(7778))
        self.assertEqual(st, 202, body)
        self.ids.append(body["id"])

    def test_frontiers_are_the_clients(self):
        """A frontier computation (the frontier route, /v1/fit) is the
        asking client's: it counts in that client's --max-queued-per-client
        share, and takes that client's turn."""
        self.d.cleanup()
        self.d = Daemon(None, ["--workers", "1", "--queue-size", "64", "--max-queued-per-client", "4",
                               "--trusted-proxy", "127.0.0.1", "--grace", "1"])
        self.d.hold()
        self.d.start()
        # The worker held by another client's plan, which stores the graph.
        busy = self.hold("busy", 101)
        st, _, body = self.d.request("GET", "/v1/plans/" + busy)
        graph = body["graph_hash"]
        codes, fronts = [], []
        for solver in ("exact", "approx", "chain", "memonger", "sqrt", "swap", "hybrid", "layrub", "auto"):
            st, hdrs, body = self.d.request("GET", "/v1/graphs/%s/frontier?solver=%s" % (graph, solver),
                                            headers={"X-Client-Id": "maps"})
            codes.append(st)
            if st == 202:
                fronts.append(body)
            if st == 429:
                self.assertEqual(body["error"]["code"], "client_queue_full")
                self.assertTrue(hdrs.get("retry-after"))
        self.assertEqual(codes, [202] * 4 + [429] * 5, "frontiers are not counted in the client's share")
        # A plan of that client is refused too, while another client's is not.
        st, _, body = self.d.request("POST", "/v1/plans", plan(102), {"X-Client-Id": "maps"})
        self.assertEqual((st, body["error"]["code"]), (429, "client_queue_full"), body)
        self.submit("other", 103)
        # A fit is the client's too.
        st, _, body = self.d.request("POST", "/v1/fit", {"graph_hash": graph, "budgets": [10 ** 6],
                                                          "solver": "auto"}, {"X-Client-Id": "maps"})
        self.assertEqual((st, body["error"]["code"]), (429, "client_queue_full"), body)


if __name__ == "__main__":
    unittest.main()
