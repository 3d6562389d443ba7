"""A daemon started with --token-file: POST and DELETE need the bearer
token, and so do reads of plans and graphs and the frontier route (which may
start work); /v1/status stays open."""

import unittest

import harness
import memplan

TOKEN = "s3cret-token-for-tests"


class ClientAuthTest(harness.DaemonTestCase):
    DAEMON_ARGS = {"token": TOKEN}

    def assert_unauthorized(self, call):
        with self.assertRaises(memplan.AuthError) as cm:
            call()
        e = cm.exception
        self.assertIsInstance(e, memplan.MemplanError)
        self.assertEqual((e.status, e.code), (401, "unauthorized"))
        self.assertIn("Bearer", e.message)

    def test_token_required(self):
        for client in (memplan.Client(self.url), memplan.Client(self.url, token="wrong")):
            self.assert_unauthorized(lambda: client.plan(harness.VGG19, "2GiB"))
            self.assert_unauthorized(lambda: client.submit_plan(harness.VGG19, "2GiB"))
            self.assert_unauthorized(lambda: client.fit(harness.VGG19, ["2GiB"]))
            self.assert_unauthorized(lambda: client.cancel("0" * 32))
            self.assertEqual(client.status()["queue_depth"], 0)  # the status stays open

    def test_token_accepted(self):
        client = memplan.Client(self.url, token=TOKEN)
        offline = harness.cli_json("plan", harness.VGG19, "--budget", "2GiB", "--summary")
        res = client.plan(harness.VGG19, "2GiB")
        self.assertTrue(res["feasible"])
        self.assertEqual(res["peak_bytes"], offline["peak_bytes"])
        fit = client.fit(res["graph_hash"], ["2GiB"])
        self.assertTrue(fit["budgets"][0]["fits"])
        # the frontier route may start work: it needs the token too
        self.assert_unauthorized(lambda: memplan.Client(self.url).frontier(res["graph_hash"]))
        self.assertTrue(client.frontier(res["graph_hash"])["points"])


if __name__ == "__main__":
    unittest.main()
