"""Who is asking (server/auth.c, http.c, jobs.c), against the real daemon:
the principals of a token file and their roles, the queue keyed on the
principal (X-Client-Id and X-Forwarded-For believed only from a trusted
proxy), a per-principal cap that leaves room for the others and keeps
/readyz ready, the throttle on failed authentication, and the queue's order
(a newcomer goes before a flooding principal's next plan). Jobs are held
(Daemon.hold: MEMPLAN_TEST_PLAN_HOLD_FILE) while a test needs them queued or
running, so that the queue's order and its shares are the daemon's decision
alone; no verdict depends on how fast or loaded the machine is."""

import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from memplan_daemon import Daemon, chain_graph, wait_until  # noqa: E402

GRAPH = chain_graph(4, "principals")
TOKENS = {"alice": "alice-token-0123456789", "bob": "bob-token-0123456789",
          "dash": "dash-token-0123456789", "root": "root-token-0123456789",
          "eve": "eve-token-0123456789"}
ROLES = {"alice": "work", "bob": "work", "dash": "read-all", "root": "admin", "eve": "read"}


def plan(budget, wait=None):
    body = {"graph": GRAPH, "budget": budget}
    if wait is not None:
        body["wait"] = wait
    return body


def auth(name, extra=None):
    h = {"Authorization": "Bearer " + TOKENS[name]}
    h.update(extra or {})
    return h


class _Base(unittest.TestCase):
    def start(self, flags, hold=False):
        """The daemon with the token file; with `hold`, every job held
        (Daemon.hold) from the start."""
        self.d = Daemon(None, ["--grace", "1"] + flags)
        if hold:
            self.d.hold()
        path = os.path.join(self.d.dir, "tokens")
        with open(path, "w") as f:
            f.write("# name role token\n\n")
            for name, tok in TOKENS.items():
                f.write("%s %s %s\n" % (name, ROLES[name], tok))
        self.d.flags += ["--token-file", path]
        self.d.start()
        return self.d

    def tearDown(self):
        if getattr(self, "d", None):
            self.d.cleanup()


class PrincipalsTest(_Base):
    def test_roles(self):
        d = self.start(["--workers", "1"])
        # work: submits; read and read-all may not
        st, _, body = d.request("POST", "/v1/plans", plan(1000, wait=30), auth("alice"))
        self.assertEqual((st, body["status"]), (200, "done"), body)
        for name in ("eve", "dash"):
            st, _, body = d.request("POST", "/v1/plans", plan(1001), auth(name))
            self.assertEqual((st, body["error"]["code"]), (403, "forbidden"), body)
            self.assertIn(ROLES[name], body["error"]["message"])
        st, _, body = d.request("POST", "/v1/plans", plan(1002, wait=30), auth("root"))
        self.assertEqual(st, 200, body)
        # every role reads; no token, or a wrong one, is 401
        for name in TOKENS:
            st, _, body = d.request("GET", "/v1/plans", headers=auth(name))
            self.assertEqual(st, 200, (name, body))
        st, hdrs, body = d.request("GET", "/v1/plans")
        self.assertEqual((st, body["error"]["code"]), (401, "unauthorized"))
        self.assertIn("Bearer", hdrs["www-authenticate"])
        st, _, _ = d.request("GET", "/v1/plans", headers={"Authorization": "Bearer " + TOKENS["alice"] + "x"})
        self.assertEqual(st, 401)
        # the open routes stay open
        for path in ("/healthz", "/readyz", "/v1/status", "/metrics", "/"):
            self.assertEqual(d.request("GET", path)[0], 200, path)

    def test_bad_token_files(self):
        """A token file that does not parse stops the start with the line."""
        for text, word in (("alice admin\n", "line 1"), ("a b c\n", "role"),
                           ("a work t1\nb work t1\n", "token of a"), ("a work t1\na read t2\n", "twice"),
                           ("# nothing\n", "no token")):
            d = Daemon(None, [])
            try:
                path = os.path.join(d.dir, "tokens")
                with open(path, "w") as f:
                    f.write(text)
                d.flags += ["--token-file", path]
                with self.assertRaises(RuntimeError) as cm:
                    d.start(timeout=20)
                self.assertIn(word, cm.exception.args[0] + d.log_tail(), text)
            finally:
                d.cleanup(check=False)

    def test_single_token_is_admin(self):
        """The one-token file is the principal "default" with the admin
        role: it submits and cancels."""
        d = Daemon(None, ["--workers", "1", "--grace", "1"])
        d.hold()
        self.d = d
        path = os.path.join(d.dir, "token")
        with open(path, "w") as f:
            f.write("only-one-token\n")
        d.flags += ["--token-file", path]
        d.start()
        h = {"Authorization": "Bearer only-one-token"}
        st, _, body = d.request("POST", "/v1/plans", plan(3000), h)
        self.assertEqual(st, 202, body)
        st, _, v = d.request("DELETE", "/v1/plans/" + body["id"], headers=h)
        self.assertIn(st, (200, 202), v)
        self.assertEqual(d.request("DELETE", "/v1/plans/" + body["id"])[0], 401)

    def test_client_id_only_from_trusted_proxy(self):
        """A principal that sends 30 plans under 30 X-Client-Ids is still one
        client: capped at --max-queued-per-client, while another principal
        is served, and /readyz stays ready. From a trusted proxy the header
        names the client."""
        d = self.start(["--workers", "1", "--queue-size", "20", "--max-queued-per-client", "50"], hold=True)
        codes = []
        for i in range(30):
            st, hdrs, body = d.request("POST", "/v1/plans", plan(4000 + i),
                                       auth("alice", {"X-Client-Id": "fake-%d" % i,
                                                      "X-Forwarded-For": "10.9.%d.1" % i}))
            codes.append(st)
            if st == 429:
                self.assertEqual(body["error"]["code"], "client_queue_full")
                self.assertTrue(hdrs["retry-after"].isdigit())
        # a cap at or over --queue-size is --queue-size - 1; one may be running
        self.assertIn(codes.count(202), (19, 20), codes)
        self.assertNotIn(503, codes)
        self.assertEqual(d.request("GET", "/readyz")[0], 200)
        st, _, body = d.request("POST", "/v1/plans", plan(4999), auth("bob"))
        self.assertEqual(st, 202, body)

    def test_trusted_proxy_names_clients(self):
        d = self.start(["--workers", "1", "--max-queued-per-client", "2", "--trusted-proxy", "127.0.0.0/8"],
                       hold=True)
        codes = [d.request("POST", "/v1/plans", plan(5000 + i), auth("alice", {"X-Client-Id": "c%d" % i}))[0]
                 for i in range(6)]
        self.assertEqual(codes, [202] * 6)
        codes = [d.request("POST", "/v1/plans", plan(5100 + i), auth("alice", {"X-Client-Id": "same"}))[0]
                 for i in range(4)]
        self.assertEqual(codes[:2], [202, 202])
        self.assertEqual(codes[2:], [429, 429])

    def test_auth_throttle(self):
        """Past --auth-failures-per-minute wrong tokens from one address get
        429 with Retry-After, even with the right token, on every guarded
        route; the open routes still answer."""
        d = self.start(["--auth-failures-per-minute", "5"])
        for i in range(5):
            st, _, _ = d.request("GET", "/v1/plans", headers={"Authorization": "Bearer guess-%d" % i})
            self.assertEqual(st, 401)
        for h in ({"Authorization": "Bearer guess-x"}, auth("alice"), {}):
            st, hdrs, body = d.request("GET", "/v1/plans", headers=h)
            self.assertEqual((st, body["error"]["code"]), (429, "auth_throttled"), body)
            self.assertTrue(1 <= int(hdrs["retry-after"]) <= 60, hdrs)
        st, _, body = d.request("POST", "/v1/plans", plan(6000), auth("alice"))
        self.assertEqual(st, 429, body)
        self.assertEqual(d.request("GET", "/healthz")[0], 200)

    def test_throttle_keys_on_forwarded_address(self):
        """Behind a trusted proxy, failures count against the forwarded
        client address, not the proxy's; elsewhere X-Forwarded-For is
        ignored (a guesser cannot rotate it)."""
        d = self.start(["--auth-failures-per-minute", "3", "--trusted-proxy", "127.0.0.1"])
        bad = {"Authorization": "Bearer nope"}
        for i in range(3):
            self.assertEqual(d.request("GET", "/v1/plans", headers=dict(bad, **{"X-Forwarded-For": "10.0.0.1"}))[0],
                             401)
        self.assertEqual(d.request("GET", "/v1/plans", headers=dict(bad, **{"X-Forwarded-For": "10.0.0.1"}))[0], 429)
        # another client behind the same proxy is not throttled
        self.assertEqual(d.request("GET", "/v1/plans", headers=auth("alice", {"X-Forwarded-For": "10.0.0.2"}))[0],
                         200)
        d.cleanup()
        d = self.start(["--auth-failures-per-minute", "3"])
        for i in range(3):
            st = d.request("GET", "/v1/plans", headers=dict(bad, **{"X-Forwarded-For": "10.1.0.%d" % i}))[0]
            self.assertEqual(st, 401)
        self.assertEqual(d.request("GET", "/v1/plans", headers=dict(bad, **{"X-Forwarded-For": "10.1.0.9"}))[0], 429)

    def test_newcomer_before_flooders_next(self):
        """Two workers busy with a flooding principal's plans (held): another
        principal's plan starts at the first worker to free, before every
        plan the flooder still had queued when it came (a ring that served
        the flooder first made it wait for both workers)."""
        d = self.start(["--workers", "2", "--max-queued-per-client", "20"], hold=True)
        flood = []
        for i in range(8):
            st, _, body = d.request("POST", "/v1/plans", plan(7000 + i), auth("alice"))
            self.assertEqual(st, 202, body)
            flood.append(body["id"])

        def status(pid, who):
            return d.request("GET", "/v1/plans/" + pid, headers=auth(who))[2]["status"]
        self.assertTrue(wait_until(lambda: [status(i, "alice") for i in flood[:2]] == ["running"] * 2, 60))
        st, _, small = d.request("POST", "/v1/plans", plan(7999), auth("bob"))
        self.assertEqual(st, 202, small)
        queued = flood[2:]
        self.assertEqual([status(i, "alice") for i in queued], ["queued"] * len(queued))
        # one worker frees: it takes bob's plan, the other worker still holds
        # the flooder's second
        st, _, body = d.request("DELETE", "/v1/plans/" + flood[0], headers=auth("alice"))
        self.assertIn(st, (200, 202), body)
        self.assertTrue(wait_until(lambda: status(small["id"], "bob") == "running", 60))
        self.assertEqual([status(i, "alice") for i in queued], ["queued"] * len(queued))
        d.release()

        def final(pid, who):
            v = d.request("GET", "/v1/plans/%s?wait=60" % pid, headers=auth(who))[2]
            return v if v["status"] == "done" else None
        small = wait_until(lambda: final(small["id"], "bob"), 60)
        self.assertTrue(small)
        starts = [wait_until(lambda i=i: final(i, "alice"), 60)["started_ms"] for i in queued]
        self.assertLess(small["started_ms"], min(starts), (small["started_ms"], sorted(starts)))


class OwnershipTest(_Base):
    """Each submission is a plan of its own, owned by its principal."""

    def test_own_plans(self):
        d = self.start(["--workers", "1"], hold=True)  # alice's computation unfinished when bob's comes
        st, _, a = d.request("POST", "/v1/plans", plan(8000), auth("alice"))
        self.assertEqual(st, 202, a)
        st, _, b = d.request("POST", "/v1/plans", plan(8000), auth("bob"))
        self.assertEqual(st, 202, b)
        # the same computation, not the same plan: bob never learns alice's id
        self.assertTrue(b["deduplicated"])
        self.assertNotEqual(a["id"], b["id"])
        # each reads only its own; another's is unknown, even to cancel
        self.assertEqual(d.request("GET", "/v1/plans/" + a["id"], headers=auth("bob"))[0], 404)
        self.assertEqual(d.request("GET", "/v1/plans/%s?wait=5" % a["id"], headers=auth("bob"))[0], 404)
        self.assertEqual(d.request("DELETE", "/v1/plans/" + a["id"], headers=auth("bob"))[0], 404)
        self.assertEqual(d.request("GET", "/v1/plans/" + a["id"], headers=auth("eve"))[0], 404)
        d.release()
        for who, pid in (("alice", a["id"]), ("bob", b["id"])):
            v = d.request("GET", "/v1/plans/%s?wait=60" % pid, headers=auth(who))[2]
            self.assertEqual((v["status"], v["id"], v["owner"]), ("done", pid, who), v)
        lists = {who: [p["id"] for p in d.request("GET", "/v1/plans", headers=auth(who))[2]["plans"]]
                 for who in ("alice", "bob", "eve", "dash", "root")}
        self.assertEqual(lists["alice"], [a["id"]])
        self.assertEqual(lists["bob"], [b["id"]])
        self.assertEqual(lists["eve"], [])
        self.assertEqual(lists["dash"], [b["id"], a["id"]])
        self.assertEqual(lists["root"], [b["id"], a["id"]])
        owners = [p["owner"] for p in d.request("GET", "/v1/plans", headers=auth("dash"))[2]["plans"]]
        self.assertEqual(owners, ["bob", "alice"])
        # ?after= names one's own plan only
        self.assertEqual(d.request("GET", "/v1/plans?after=" + a["id"], headers=auth("bob"))[0], 400)
        # the read-all principal reads both
        self.assertEqual(d.request("GET", "/v1/plans/" + a["id"], headers=auth("dash"))[0], 200)
        # a finished answer served again is a plan of its own too: a new id,
        # bob's, and no one else's
        st, _, c = d.request("POST", "/v1/plans", plan(8000), auth("bob"))
        self.assertEqual((st, c["cache"]), (200, "hit"), c)
        self.assertNotIn(c["id"], (a["id"], b["id"]))
        self.assertEqual(d.request("GET", "/v1/plans/" + c["id"], headers=auth("bob"))[2]["owner"], "bob")
        self.assertEqual(d.request("GET", "/v1/plans/" + c["id"], headers=auth("alice"))[0], 404)

    def test_cancel_needs_no_other(self):
        """alice cancels her plan; bob's identical one is still computed and
        ends done; an admin may cancel anyone's."""
        d = self.start(["--workers", "1"], hold=True)  # each plan unfinished until cancelled or released
        a = d.request("POST", "/v1/plans", plan(8100), auth("alice"))[2]
        b = d.request("POST", "/v1/plans", plan(8100), auth("bob"))[2]
        st, _, v = d.request("DELETE", "/v1/plans/" + a["id"], headers=auth("alice"))
        self.assertEqual((st, v["status"]), (200, "cancelled"), v)
        d.release()
        v = d.request("GET", "/v1/plans/%s?wait=60" % b["id"], headers=auth("bob"))[2]
        self.assertEqual(v["status"], "done", v)
        self.assertIn("result", v)
        self.assertEqual(d.request("GET", "/v1/plans/" + a["id"], headers=auth("alice"))[2]["status"], "cancelled")
        d.hold()
        c = d.request("POST", "/v1/plans", plan(8200), auth("alice"))[2]
        st, _, v = d.request("DELETE", "/v1/plans/" + c["id"], headers=auth("root"))
        self.assertIn(st, (200, 202), v)
        v = d.request("GET", "/v1/plans/%s?wait=60" % c["id"], headers=auth("alice"))[2]
        self.assertEqual(v["status"], "cancelled", v)

    def test_cached_answer_is_own_plan(self):
        """A submission answered from a result computed before (the body's
        cached answer, the plan's, and the store's after a restart) is a plan
        handle of its own: a new id in the 200, owned by the submitter, read
        and listed as a done plan with that very result, unknown to others;
        a cancel of it is 409 (it finished)."""
        d = self.start(["--workers", "1"])
        st, _, a = d.request("POST", "/v1/plans", plan(8400, wait=30), auth("alice"))
        self.assertEqual((st, a["status"]), (200, "done"), a)
        ids = [a["id"]]

        def check_handle(who, body, st, hdrs, v):
            self.assertEqual((st, v["status"], v["cache"]), (200, "done", "hit"), v)
            self.assertNotIn(v["id"], ids)
            ids.append(v["id"])
            self.assertEqual(v["result"], a["result"])
            st, _, view = d.request("GET", "/v1/plans/" + v["id"], headers=auth(who))
            self.assertEqual((st, view["id"], view["owner"], view["status"]), (200, v["id"], who, "done"), view)
            self.assertEqual(view["result"], a["result"])
            self.assertEqual(view["graph_hash"], a["graph_hash"])
            other = "alice" if who == "bob" else "bob"
            self.assertEqual(d.request("GET", "/v1/plans/" + v["id"], headers=auth(other))[0], 404)
            self.assertEqual(d.request("GET", "/v1/plans/" + v["id"], headers=auth("dash"))[0], 200)
            self.assertIn(v["id"], [p["id"] for p in d.request("GET", "/v1/plans", headers=auth(who))[2]["plans"]])
            self.assertNotIn(v["id"],
                             [p["id"] for p in d.request("GET", "/v1/plans", headers=auth(other))[2]["plans"]])

        # the same bytes: the body's cached answer
        body = plan(8400, wait=30)
        check_handle("bob", body, *d.request("POST", "/v1/plans", body, auth("bob"))[:3])
        # other bytes, the same plan: the plan's cached answer
        raw = json.dumps(body, indent=1).encode()
        check_handle("bob", raw, *d.request("POST", "/v1/plans", raw, auth("bob"))[:3])
        # a finished plan is not cancelled, by its owner or an admin
        for who in ("bob", "root"):
            st, _, e = d.request("DELETE", "/v1/plans/" + ids[-1], headers=auth(who))
            self.assertEqual((st, e["error"]["code"]), (409, "already_finished"), e)
        # a daemon killed at once keeps them (the handle's write is not
        # waited for on the disk, but is in the file), and after the
        # restart memory is empty: the store's result
        d.kill()
        d.start()
        for pid in ids[1:]:
            st, _, view = d.request("GET", "/v1/plans/" + pid, headers=auth("bob"))
            self.assertEqual((st, view["owner"], view["result"]), (200, "bob", a["result"]), view)
        check_handle("alice", body, *d.request("POST", "/v1/plans", body, auth("alice"))[:3])
        check_handle("bob", body, *d.request("POST", "/v1/plans", body, auth("bob"))[:3])
        mine = [p["id"] for p in d.request("GET", "/v1/plans", headers=auth("alice"))[2]["plans"]]
        self.assertEqual(mine, [ids[3], ids[0]])
        # one computation for all five: one job, five handles on it
        d.stop()
        import sqlite3
        db = sqlite3.connect(os.path.join(d.dir, "data", "memplan.db"))
        self.assertEqual(db.execute("SELECT count(*), min(status) FROM jobs").fetchone(), (1, "done"))
        self.assertEqual(sorted(r[0] for r in db.execute("SELECT id FROM handles")), sorted(ids))
        db.close()

    def test_cached_answer_without_its_job(self):
        """A result kept in the store whose job is gone: the submission gets
        a done plan of its own for that result."""
        import sqlite3
        d = self.start(["--workers", "1"])
        body = plan(8500, wait=30)
        st, _, a = d.request("POST", "/v1/plans", body, auth("alice"))
        self.assertEqual((st, a["status"]), (200, "done"), a)
        d.stop()
        db = sqlite3.connect(os.path.join(d.dir, "data", "memplan.db"))
        db.execute("DELETE FROM jobs")
        db.execute("DELETE FROM handles")
        db.commit()
        db.close()
        d.start()
        for who in ("bob", "alice"):
            st, hdrs, v = d.request("POST", "/v1/plans", body, auth(who))
            self.assertEqual((st, v["cache"]), (200, "hit"), v)
            self.assertNotEqual(v["id"], a["id"])
            self.assertEqual(v["result"], a["result"])
            st, _, view = d.request("GET", "/v1/plans/" + v["id"], headers=auth(who))
            self.assertEqual((st, view["owner"], view["status"]), (200, who, "done"), view)
            self.assertEqual(view["result"], a["result"])
            self.assertEqual([p["id"] for p in d.request("GET", "/v1/plans", headers=auth(who))[2]["plans"]],
                             [v["id"]])
        self.assertEqual(d.request("GET", "/v1/plans/" + a["id"], headers=auth("alice"))[0], 404)

    def test_fits_are_their_askers(self):
        """An async fit's id is its asker's: the same request from another
        principal is a fit of its own with another id; each reads only its
        own (another's is 404, before and after it is computed, also from
        the cached answer); an admin reads any; a read-all principal may
        not poll fits (a poll may start work: 403)."""
        d = self.start(["--workers", "1"], hold=True)  # the fit unfinished while both are asked
        body = {"graph": GRAPH, "budgets": [8600, 8700], "wait": 0}
        st, _, a = d.request("POST", "/v1/fit", body, auth("alice"))
        self.assertEqual(st, 202, a)
        st, _, b = d.request("POST", "/v1/fit", body, auth("bob"))
        self.assertEqual(st, 202, b)
        self.assertNotEqual(a["id"], b["id"])
        for _ in range(2):  # while it runs, then once its answer is kept
            self.assertEqual(d.request("GET", "/v1/fit/" + a["id"], headers=auth("bob"))[0], 404)
            self.assertEqual(d.request("GET", "/v1/fit/%s?wait=5" % b["id"], headers=auth("alice"))[0], 404)
            self.assertEqual(d.request("GET", "/v1/fit/" + a["id"], headers=auth("dash"))[0], 403)
            d.release()
            answers = {}
            for who, f in (("alice", a), ("bob", b), ("root", a), ("root", b)):
                st, _, got = d.request("GET", "/v1/fit/%s?wait=60" % f["id"], headers=auth(who))
                self.assertEqual(st, 200, (who, got))
                answers.setdefault(f["id"], got["budgets"])
                self.assertEqual(got["budgets"], answers[f["id"]])
            self.assertEqual(answers[a["id"]], answers[b["id"]])

    def test_store_from_before_handles(self):
        """A SQLite store written before plans had owners is migrated at
        start: its plans keep their ids, owned by nobody, so that only the
        principals that read all plans see them."""
        import sqlite3
        d = Daemon(None, ["--grace", "1"])
        self.d = d
        os.makedirs(os.path.join(d.dir, "data"))
        db = sqlite3.connect(os.path.join(d.dir, "data", "memplan.db"))
        db.executescript("""
            CREATE TABLE graphs (hash TEXT PRIMARY KEY, json TEXT NOT NULL, nodes INTEGER NOT NULL,
                                 created_ms REAL NOT NULL);
            CREATE TABLE jobs (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE,
                status TEXT NOT NULL, graph_hash TEXT NOT NULL, result_key TEXT NOT NULL, budget TEXT NOT NULL,
                solver TEXT NOT NULL, objective TEXT NOT NULL, accounting TEXT NOT NULL,
                timeline INTEGER NOT NULL, created_ms REAL NOT NULL, started_ms REAL NOT NULL DEFAULT 0,
                finished_ms REAL NOT NULL DEFAULT 0, error TEXT, request_id TEXT NOT NULL DEFAULT '',
                client TEXT NOT NULL DEFAULT '');
            CREATE TABLE results (key TEXT PRIMARY KEY, json TEXT NOT NULL, job_id TEXT NOT NULL DEFAULT '',
                                  created_ms REAL NOT NULL);
        """)
        old = "0123456789abcdef0123456789abcdef"
        db.execute("INSERT INTO jobs(id, status, graph_hash, result_key, budget, solver, objective, accounting,"
                   " timeline, created_ms, started_ms, finished_ms, error) VALUES(?, 'failed', ?, 'k', '1000',"
                   " 'auto', 'time', 'exact', 0, 1.0e12, 1.0e12, 1.0e12 + 5,"
                   " '{\"code\":\"x\",\"message\":\"old\"}')", (old, "ab" * 32))
        db.commit()
        db.close()
        path = os.path.join(d.dir, "tokens")
        with open(path, "w") as f:
            for name, tok in TOKENS.items():
                f.write("%s %s %s\n" % (name, ROLES[name], tok))
        d.flags += ["--token-file", path]
        d.start()
        st, _, v = d.request("GET", "/v1/plans/" + old, headers=auth("dash"))
        self.assertEqual((st, v["status"], v["id"], v["owner"]), (200, "failed", old, ""), v)
        self.assertEqual(d.request("GET", "/v1/plans/" + old, headers=auth("alice"))[0], 404)
        self.assertEqual([p["id"] for p in d.request("GET", "/v1/plans", headers=auth("root"))[2]["plans"]], [old])
        self.assertEqual(d.request("GET", "/v1/plans", headers=auth("alice"))[2]["plans"], [])
        # new plans get handles next to it
        st, _, a = d.request("POST", "/v1/plans", plan(8300, wait=30), auth("alice"))
        self.assertEqual(st, 200, a)
        self.assertEqual([p["id"] for p in d.request("GET", "/v1/plans", headers=auth("root"))[2]["plans"]],
                         [a["id"], old])


if __name__ == "__main__":
    unittest.main()
