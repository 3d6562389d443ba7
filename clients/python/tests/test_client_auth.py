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


class ClientPrincipalsTest(harness.DaemonTestCase):
    """A token file of named principals: a read principal's attempt to
    start work is AuthError 403 forbidden; each principal sees its own plans."""
    DAEMON_ARGS = {"token": "alice work alice-token-0123456789\nreader read reader-token-0123456789"}

    def test_roles_and_ownership(self):
        alice = memplan.Client(self.url, token="alice-token-0123456789")
        reader = memplan.Client(self.url, token="reader-token-0123456789")
        with self.assertRaises(memplan.AuthError) as cm:
            reader.submit_plan(harness.VGG19, "2GiB")
        self.assertEqual((cm.exception.status, cm.exception.code), (403, "forbidden"))
        view = alice.submit_plan(harness.VGG19, "2GiB", wait=60)
        self.assertEqual(view["owner"], "alice")
        self.assertEqual([p["id"] for p in alice.list_plans()["plans"]], [view["id"]])
        self.assertEqual(reader.list_plans()["plans"], [])
        with self.assertRaises(memplan.NotFoundError):
            reader.get_plan(view["id"])


if __name__ == "__main__":
    unittest.main()
