"""A busy daemon: 503 answers are retried after Retry-After, within bounds.

The daemon has one worker and room for one queued plan, and holds every job
until the test lets go (Daemon.hold: MEMPLAN_TEST_PLAN_HOLD_FILE): with one
plan running and one queued, the next submission gets 503 queue_full
(Retry-After: 5) until the queue has room again, however loaded the
machine."""

import threading
import time
import unittest

import harness
import memplan


class ClientRetryTest(harness.DaemonTestCase):
    DAEMON_FLAGS = ("--queue-size", "1")
    DAEMON_ARGS = {"workers": 1}

    def setUp(self):
        self.daemon.hold()

    def tearDown(self):
        self.daemon.release()

    def fill_queue(self, client, running_budget, queued_budget):
        """One plan running and one queued: the queue is full. Both plans' ids."""
        first = client.submit_plan(harness.VGG19, running_budget)
        harness.wait_for_status(client, first["id"], "running")
        second = client.submit_plan(harness.VGG19, queued_budget)
        self.assertEqual(second["status"], "queued")
        return first["id"], second["id"]

    def test_queue_full_is_retried(self):
        client = memplan.Client(self.url)
        running, queued = self.fill_queue(client, "2GiB", "3GiB")

        # Without retries the 503 surfaces, with the daemon's words.
        impatient = memplan.Client(self.url, max_retries=0)
        with self.assertRaises(memplan.BusyError) as cm:
            impatient.plan(harness.VGG19, "2500MiB")
        e = cm.exception
        self.assertEqual((e.status, e.code, e.retry_after), (503, "queue_full", 5.0))
        self.assertEqual(impatient.retried, 0)

        # With retries (each sleep capped at 0.2 s) the plan gets in once
        # the queue has room; cancelling the two frees it now.
        patient = memplan.Client(self.url, max_retries=1000, max_retry_wait=0.2)
        outcome = {}

        def run():
            try:
                outcome["result"] = patient.plan(harness.VGG19, "2500MiB")
            except memplan.MemplanError as err:
                outcome["error"] = err

        t = threading.Thread(target=run)
        t.start()
        t0 = time.monotonic()
        while patient.retried < 1 and t.is_alive():
            self.assertLess(time.monotonic() - t0, 30)
            time.sleep(0.01)
        client.cancel(queued)
        client.cancel(running)
        self.daemon.release()
        t.join(60)
        self.assertFalse(t.is_alive())
        self.assertNotIn("error", outcome)
        offline = harness.cli_json("plan", harness.VGG19, "--budget", "2500MiB", "--summary")
        self.assertTrue(outcome["result"]["feasible"])
        self.assertEqual(outcome["result"]["peak_bytes"], offline["peak_bytes"])
        self.assertGreaterEqual(patient.retried, 1)
        # The daemon counted every 503: the impatient one and each retried one.
        self.assertGreaterEqual(self.daemon.metric("memplan_http_requests_total", status="503"),
                                1 + patient.retried)

    def test_retry_time_is_bounded(self):
        """max_retry_time stops the retries before a long Retry-After."""
        client = memplan.Client(self.url)
        running, queued = self.fill_queue(client, "2600MiB", "2700MiB")
        bounded = memplan.Client(self.url, max_retries=10, max_retry_time=1.0)
        with self.assertRaises(memplan.BusyError):
            bounded.plan(harness.VGG19, "2800MiB")
        self.assertEqual(bounded.retried, 0)  # Retry-After 5 > 1 s: no sleep at all
        client.cancel(queued)
        client.cancel(running)


if __name__ == "__main__":
    unittest.main()
