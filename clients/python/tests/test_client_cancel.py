"""Cancelling, and waiting with a bound, against a daemon whose every job is
held until cancelled (Daemon.hold: MEMPLAN_TEST_PLAN_HOLD_FILE, server/jobs.c)
so that plans are seen queued and running however fast the planner is and
however loaded the machine."""

import threading
import time
import unittest

import harness
import memplan


class ClientCancelTest(harness.DaemonTestCase):
    DAEMON_ARGS = {"workers": 1}

    def setUp(self):
        self.client = memplan.Client(self.url)
        self.daemon.hold()

    def test_cancel_running_and_queued(self):
        running = self.client.submit_plan(harness.VGG19, "2GiB")
        harness.wait_for_status(self.client, running["id"], "running")
        queued = self.client.submit_plan(harness.VGG19, "3GiB")
        self.assertEqual(queued["status"], "queued")
        gone = self.client.cancel(queued["id"])
        self.assertEqual((gone["id"], gone["status"]), (queued["id"], "cancelled"))
        stopping = self.client.cancel(running["id"])
        self.assertEqual(stopping, {"id": running["id"], "status": "running", "cancel_requested": True})
        self.assertEqual(self.client.get_plan(running["id"], wait=30)["status"], "cancelled")
        with self.assertRaises(memplan.ConflictError) as cm:
            self.client.cancel(running["id"])
        self.assertEqual((cm.exception.status, cm.exception.code), (409, "already_finished"))

    def test_plan_raises_when_cancelled(self):
        """Client.plan, waiting in its long polls, hears of the cancel."""
        outcome = {}

        def run():
            try:
                outcome["result"] = self.client.plan(harness.VGG19, "2100MiB", wait=5)
            except memplan.MemplanError as e:
                outcome["error"] = e

        t = threading.Thread(target=run)
        t.start()
        plan_id = None
        t0 = time.monotonic()
        while plan_id is None and time.monotonic() - t0 < 30:
            for p in self.client.list_plans(status="running")["plans"]:
                if p["budget"] == 2100 << 20:
                    plan_id = p["id"]
            time.sleep(0.02)
        self.assertIsNotNone(plan_id)
        self.client.cancel(plan_id)
        t.join(60)
        self.assertFalse(t.is_alive())
        self.assertIsInstance(outcome.get("error"), memplan.PlanCancelled)
        self.assertEqual(outcome["error"].plan_id, plan_id)

    def test_plan_timeout(self):
        with self.assertRaises(memplan.PlanTimeout) as cm:
            self.client.plan(harness.VGG19, "2200MiB", wait=5, timeout=0.3)
        plan_id = cm.exception.plan_id
        self.assertEqual(len(plan_id), 32)
        self.assertIn(self.client.get_plan(plan_id)["status"], ("queued", "running"))
        self.client.cancel(plan_id)
        self.assertEqual(self.client.get_plan(plan_id, wait=30)["status"], "cancelled")


if __name__ == "__main__":
    unittest.main()
