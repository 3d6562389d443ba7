"""A restart's plans as the listing and each plan's own view tell them
(server/plans.c, jobs.c's recovery, the SQLite store): GET /v1/plans and
GET /v1/plans/{id} give every plan the same status and timings, and so do
the listing's status filter and /v1/status's counts.

The real daemon holds every plan (Daemon.hold: MEMPLAN_TEST_PLAN_HOLD_FILE,
until cancelled or stopped) so that the states compared below stay put until
the test moves them, however loaded the machine: two
workers run two plans, a third waits; the daemon is killed (SIGKILL) and
restarted with one worker, which takes the oldest plan again. The other
plan that was running waits for a worker: queued, not started, in both
views. Cancelling the first lets the worker take it: running in both.
--grace 1 lets each stop end the held plans within a second."""

import os
import signal
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from memplan_daemon import Daemon, chain_graph, until  # noqa: E402

TIMING_KEYS = ("started_at", "started_ms", "finished_at", "finished_ms", "run_ms")


class RestartListingTest(unittest.TestCase):
    def setUp(self):
        self.d = Daemon(None, ["--workers", "2", "--grace", "1"])
        self.d.hold()  # every plan, across the restart, until cancelled or the daemon stops
        self.d.start()

    def tearDown(self):
        self.d.cleanup()

    def listed(self, status=None):
        path = "/v1/plans?limit=500" + ("&status=" + status if status else "")
        st, _, body = self.d.request("GET", path)
        self.assertEqual(st, 200, body)
        return {p["id"]: p for p in body["plans"]}

    def own(self, pid):
        st, _, body = self.d.request("GET", "/v1/plans/" + pid)
        self.assertIn(st, (200, 202), body)
        return body

    def statuses(self):
        """Each plan's status in the listing (one read of it)."""
        listing = self.listed()
        return [listing[p]["status"] if p in listing else None for p in self.ids]

    def assert_views_agree(self, expected):
        """The listing, each plan's view, the status filter and the
        counts all say `expected` (one status per plan of self.ids)."""
        listing = self.listed()
        for pid, want in zip(self.ids, expected):
            entry, view = listing[pid], self.own(pid)
            self.assertEqual(entry["status"], want, (pid, entry))
            self.assertEqual(view["status"], want, (pid, view))
            for key in TIMING_KEYS:
                self.assertEqual(entry.get(key), view.get(key), (pid, key, entry, view))
            self.assertEqual("progress" in entry, want == "running", entry)
        for status in ("queued", "running"):
            filtered = self.listed(status)
            self.assertEqual(sorted(filtered), sorted(p for p, s in zip(self.ids, expected) if s == status),
                             (status, filtered))
        st, _, body = self.d.request("GET", "/v1/status")
        self.assertEqual(st, 200, body)
        self.assertEqual(body["plans"]["queued"], expected.count("queued"), body)
        self.assertEqual(body["plans"]["running"], expected.count("running"), body)

    def test_listing_and_plan_agree_after_restart(self):
        self.ids = []
        for i in range(3):
            st, _, body = self.d.request("POST", "/v1/plans", {"graph": chain_graph(8, "restart%d" % i),
                                                               "budget": 10 ** 9})
            self.assertEqual(st, 202, body)
            self.ids.append(body["id"])
        until("two plans running", lambda: self.statuses() == ["running", "running", "queued"])
        self.assert_views_agree(["running", "running", "queued"])

        self.d.kill(signal.SIGKILL)
        self.d.flags = ["--workers", "1", "--grace", "1"]
        self.d.start()
        until("the oldest plan running again", lambda: self.statuses()[0] == "running")
        self.assert_views_agree(["running", "queued", "queued"])
        second = self.listed()[self.ids[1]]
        self.assertNotIn("started_at", second, "a plan waiting for a worker has not started")

        st, _, body = self.d.request("DELETE", "/v1/plans/" + self.ids[0])
        self.assertIn(st, (200, 202), body)
        until("the second plan running", lambda: self.statuses()[1] == "running")
        self.assert_views_agree(["cancelled", "running", "queued"])


if __name__ == "__main__":
    unittest.main()
