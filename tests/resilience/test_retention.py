"""Retention (server/upkeep.c, store_sweep.c, store_sqlite.c): the sweep
deletes finished plans past --retain-age, and the oldest finished plans
while the store's live data is over --retain-bytes, with the results and
graphs only they referred to, and what memory kept of them (a plan's view,
the cached answer to its body); it never deletes a queued or running plan."""

import os
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from memplan_daemon import Daemon, chain_graph, wait_until  # noqa: E402


def listed(d, status="done"):
    st, _, body = d.request("GET", "/v1/plans?limit=500&status=" + status)
    assert st == 200, body
    return [p["id"] for p in body["plans"]]


class RetentionTest(unittest.TestCase):
    def tearDown(self):
        self.d.cleanup()

    def test_age(self):
        self.d = Daemon(None, ["--workers", "1", "--retain-age", "2", "--sweep-interval", "0.2"]).start()
        old_body = {"graph": chain_graph(5, "old"), "budget": 10 ** 6}
        st, _, old = self.d.request("POST", "/v1/plans", old_body)
        self.assertEqual(st, 202, old)
        self.assertTrue(wait_until(lambda: old["id"] in listed(self.d), 20))
        # What memory keeps of it: its view, and the answer to the same
        # body again (the body's and the plan key's cached answer).
        st, _, view = self.d.request("GET", "/v1/plans/" + old["id"])
        self.assertEqual((st, view["status"]), (200, "done"), view)
        # That answer is a plan handle of its own on the old plan's job.
        st, _, again = self.d.request("POST", "/v1/plans", old_body)
        self.assertEqual((st, again["cache"]), (200, "hit"), again)
        self.assertNotEqual(again["id"], old["id"])
        # Queued and running plans outlive any age: eight held (Daemon.hold)
        # while the old plan's 2 s pass and it is swept.
        self.d.hold()
        queued = []
        for i in range(8):
            st, _, body = self.d.request("POST", "/v1/plans",
                                         {"graph": chain_graph(5, "new%d" % i), "budget": 10 ** 6})
            self.assertEqual(st, 202, body)
            queued.append(body["id"])
        # The old plan, its result and its graph go once 2 s have passed,
        # and what memory kept of them with them: its view is gone, and the
        # same body again is a new plan. (The sweep deletes plans, then
        # results, then graphs, each in a transaction of its own, and
        # memory forgets each after its commit: all of it is waited for.)
        def old_gone():
            return (old["id"] not in listed(self.d)
                    and all(self.d.request("GET", "/v1/plans/" + pid)[0] == 404 for pid in (old["id"], again["id"]))
                    and self.d.request("GET", "/v1/graphs/" + old["graph_hash"])[0] == 404)
        self.assertTrue(wait_until(old_gone, 20), self.d.log_tail())
        for pid in queued:
            st, _, body = self.d.request("GET", "/v1/plans/" + pid)
            self.assertEqual(st, 200, body)
            self.assertIn(body["status"], ("queued", "running"), body)
        for pid in (old["id"], again["id"]):
            st, _, body = self.d.request("GET", "/v1/plans/" + pid)
            self.assertEqual(st, 404, body)
        st, _, body = self.d.request("GET", "/v1/graphs/" + old["graph_hash"])
        self.assertEqual(st, 404, body)
        st, _, body = self.d.request("POST", "/v1/plans", old_body)
        self.assertEqual(st, 202, body)
        self.assertNotEqual(body["id"], old["id"])
        queued.append(body["id"])
        self.d.release()
        # Each of them is seen done (and deleted 2 s later in its turn).
        seen = set()

        def all_seen():
            seen.update(listed(self.d))
            return all(i in seen for i in queued)
        self.assertTrue(wait_until(all_seen, 30, 0.05), "a queued plan was lost to retention")
        self.assertIn('"msg":"retention sweep"', self.d.log_tail(100000))

    def test_bytes(self):
        self.d = Daemon(None, ["--workers", "2", "--retain-age", "0", "--retain-bytes", "300KiB",
                                 "--sweep-interval", "0.2", "--max-queued-per-client", "0"]).start()
        ids = []
        for i in range(60):  # about 10 KB of graph and result each
            st, _, body = self.d.request("POST", "/v1/plans",
                                         {"graph": chain_graph(80, "b%d" % i, 30), "budget": 10 ** 7, "wait": 30})
            self.assertEqual(st, 200, body)
            ids.append(body["id"])
            time.sleep(0.02)
        time.sleep(1.0)
        kept = set(wait_until(lambda: listed(self.d) if len(listed(self.d)) < len(ids) else None, 10) or [])
        self.assertTrue(kept, "nothing was deleted")
        self.assertIn(ids[-1], kept)  # the newest stay, the oldest went
        self.assertNotIn(ids[0], kept)
        first_kept = min(ids.index(i) for i in kept)
        self.assertEqual(kept, set(ids[first_kept:]), "not the oldest first")

    def test_age_counts_from_the_last_handle(self):
        """A finished job is used again by every submission answered from
        its result (a handle made then): --retain-age counts from the
        newest handle, not from the job's end. Two plans that ended two
        hours ago, one of them answered again just now (its handle written
        into the stopped daemon's store, as the answer writes it): the
        other one goes at the first sweep, that one stays, with its result,
        and is answered again."""
        import sqlite3
        self.d = Daemon(None, ["--workers", "1", "--retain-age", "3600", "--sweep-interval", "0.2"]).start()
        bodies = [{"graph": chain_graph(5, "kept%d" % i), "budget": 10 ** 6, "wait": 30} for i in range(2)]
        plans = []
        for b in bodies:
            st, _, p = self.d.request("POST", "/v1/plans", b)
            self.assertEqual((st, p["status"]), (200, "done"), p)
            plans.append(p)
        self.d.stop()
        now_ms = time.time() * 1000
        db = sqlite3.connect(os.path.join(self.d.dir, "data", "memplan.db"))
        db.execute("UPDATE jobs SET created_ms = ?1, started_ms = ?1, finished_ms = ?1", (now_ms - 7.2e6,))
        db.execute("UPDATE handles SET created_ms = ?", (now_ms - 7.2e6,))
        db.execute("INSERT INTO handles(id, job_id, owner, created_ms) VALUES(?, ?, '', ?)",
                   ("ab" * 16, plans[0]["id"], now_ms))
        db.commit()
        db.close()
        self.d.start()
        self.assertTrue(wait_until(lambda: plans[1]["id"] not in listed(self.d), 20), self.d.log_tail())
        self.assertEqual(set(listed(self.d)), {plans[0]["id"], "ab" * 16})
        st, _, view = self.d.request("GET", "/v1/plans/" + plans[0]["id"])
        self.assertEqual((st, view["result"]), (200, plans[0]["result"]), view)
        st, _, again = self.d.request("POST", "/v1/plans", bodies[0])
        self.assertEqual((st, again["cache"], again["result"]), (200, "hit", plans[0]["result"]), again)
        self.assertIn(again["id"], listed(self.d))


if __name__ == "__main__":
    unittest.main()
