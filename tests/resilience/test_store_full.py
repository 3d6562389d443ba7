"""A full store (server/store_sqlite.c, jobs.c): real SQLite writes fail
with SQLITE_FULL under the test cap MEMPLAN_TEST_STORE_MAX_PAGES_FILE (the
database's max_page_count, read from a file at start and at every probe).
Plans are accepted until the store is full; then

  - new work gets 507 with {"error": {"code": "store_full"}} naming why,
  - /readyz answers 503 {"status": "store_full", "reason": ...},
  - every accepted plan ends (failed with code store_full and the reason,
    or done): none stays queued or running, whatever its row could record,
    and /v1/status agrees;
  - once the cap is raised (space returns) the outcomes kept in memory are
    written, /readyz is ready again and new plans are done."""

import os
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from memplan_daemon import Daemon, chain_graph, wait_until  # noqa: E402


class StoreFullTest(unittest.TestCase):
    def setUp(self):
        self.d = Daemon(None, ["--workers", "1", "--max-queued-per-client", "0", "--queue-size", "200"])
        self.cap = os.path.join(self.d.dir, "max_pages")
        with open(self.cap, "w") as f:
            f.write("40\n")  # 160 KiB of 4 KiB pages: about 18 of the graphs below
        self.d.env["MEMPLAN_TEST_STORE_MAX_PAGES_FILE"] = self.cap
        self.d.start()

    def tearDown(self):
        self.d.cleanup()

    def submit(self, tag, **extra):
        body = {"graph": chain_graph(60, tag, 20), "budget": 10 ** 7}
        body.update(extra)
        return self.d.request("POST", "/v1/plans", body)

    def test_full_then_room(self):
        # Every accepted plan is held (Daemon.hold) until the store is full,
        # so they all end against the full store however loaded the machine.
        self.d.hold()
        accepted, refused = [], None
        for i in range(60):
            st, _, body = self.submit("full%d" % i)
            if st == 202:
                accepted.append(body["id"])
                continue
            refused = (st, body)
            break
        self.assertTrue(accepted, "nothing was accepted")
        self.assertIsNotNone(refused, "the store never filled")
        self.assertEqual(refused[0], 507, refused)
        self.assertEqual(refused[1]["error"]["code"], "store_full")
        self.assertIn("database or disk is full", refused[1]["error"]["message"])

        st, _, ready = self.d.request("GET", "/readyz")
        self.assertEqual(st, 503, ready)
        self.assertEqual(ready["status"], "store_full")
        self.assertIn("database or disk is full", ready["reason"])
        st, _, body = self.submit("while_full")
        self.assertEqual(st, 507, body)
        self.d.release()

        def all_final():
            views = [self.d.request("GET", "/v1/plans/" + i)[2] for i in accepted]
            return views if all(v["status"] in ("done", "failed") for v in views) else None
        views = wait_until(all_final, 60)
        self.assertTrue(views, "accepted plans stayed queued or running")
        failed = [v for v in views if v["status"] == "failed"]
        self.assertTrue(failed, "no plan met the full store")
        for v in failed:
            self.assertEqual(v["error"]["code"], "store_full", v)
            self.assertIn("database or disk is full", v["error"]["message"])
        plans = self.d.request("GET", "/v1/status")[2]["plans"]
        self.assertEqual(plans["queued"] + plans["running"], 0, plans)
        self.assertEqual(plans["done"] + plans["failed"], len(accepted), plans)

        # Space returns: the upkeep's probe sees it within a second or two.
        with open(self.cap, "w") as f:
            f.write("100000\n")
        self.assertTrue(wait_until(lambda: self.d.request("GET", "/readyz")[0] == 200, 15),
                        self.d.log_tail())
        st, _, body = self.submit("after", wait=30)
        self.assertEqual(st, 200, body)
        self.assertEqual(body["status"], "done")
        # The outcomes kept in memory are in the store now: a restart shows
        # the same, and nothing is recovered to run again.
        self.d.stop()
        self.d.start()
        for v in views:
            st, _, again = self.d.request("GET", "/v1/plans/" + v["id"])
            self.assertEqual((st, again["status"]), (200, v["status"]), again)
            self.assertEqual(again.get("error"), v.get("error"))
        self.assertNotIn("recovered unfinished plans", self.d.log_tail(100000).split("listening")[-2])


if __name__ == "__main__":
    unittest.main()
