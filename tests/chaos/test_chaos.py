#!/usr/bin/python3
"""A bounded chaos test of memplan-server (run by `make test`, about 30 s).

While hostile clients run against a real daemon on loopback, a well-behaved
client must keep getting correct answers, none refused, and after the
daemon is killed (-9) and restarted every plan it accepted must finish.
How fast the good client is answered is a figure, printed, not a verdict:
`--bench` (run by `make bench`) compares its p99 with the target,
CHAOS_P99_TARGET seconds (2.0).

The hostile clients, each a process of its own from its own loopback
address (127.0.0.x, so that --max-connections-per-ip does not hide one
behind another):

  slow-heads   200 connections sending a request head a byte a second, each
               reconnecting as soon as it is closed (slowloris)
  slow-bodies  20 uploads trickling 10 bytes a second
  big-bodies   bodies over --max-body-bytes (413), and 900 KiB bodies six at a
               time, more than --max-inflight-body-bytes holds (503 or 400)
  flood        16 keep-alive connections from one address sending GETs,
               404s and bad JSON as fast as they can
  plan-flood   a principal of its own (the token file's "flooder") on 4
               keep-alive connections from one address submitting new plans
               as fast as they can, each under a new X-Client-Id and
               X-Forwarded-For (ignored: the address is no trusted proxy):
               past its share of the queue (--max-queued-per-client 8 of
               --queue-size 32) it must get 429 client_queue_full, and only
               that, however many ids it claims
  auth-guess   wrong tokens from one address as fast as it can: 401 until
               --auth-failures-per-minute, then 429 auth_throttled only

The well-behaved client (127.0.0.1, the principal "good") submits a small
plan (202), reads it back, asks /healthz, /readyz and /v1/status, in a
loop, a plan every half second, which its turn of the fair queue keeps up
with; every answer is checked (and timed, for the summary), and none may
be refused: the flooding principal never fills the queue, nor turns
/readyz unready. The
daemon runs with a token file of named principals; the other attackers
use a principal of their own ("bulk"). The daemon holds each job 300 ms
(MEMPLAN_TEST_PLAN_DELAY_MS), so that the plan flood meets its share of
the queue. Before the kill every job is held (the hold file,
MEMPLAN_TEST_PLAN_HOLD_FILE) and one more plan is submitted, so at least
one plan is queued or running when the daemon is killed, however loaded
the machine; every plan accepted, the good client's and the flood's and
that one, must finish after the restart.

Usage: test_chaos.py [--bench] SERVER_BINARY   (standard library only;
loopback only; every loop is bounded by a deadline). One summary line at
the end; exit status 0 when every check held.
"""

import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import memplan_daemon  # noqa: E402

ATTACK_SECONDS = 12.0
P99_TARGET_S = float(os.environ.get("CHAOS_P99_TARGET", "2.0"))  # --bench only
# Two workers drain about 6.7 plans a second; the fair queue gives the good
# client half of that against the plan flood, which is capped at 8 queued.
GOOD_PLAN_PERIOD_S = 0.5
DAEMON_FLAGS = [
    "--workers", "2", "--http-threads", "2", "--queue-size", "32", "--max-queued-per-client", "8",
    "--auth-failures-per-minute", "20",
    "--max-connections", "256", "--max-connections-per-ip", "64",
    "--header-timeout", "2", "--min-body-rate", "1KiB", "--request-timeout", "10",
    "--max-body-bytes", "1MiB", "--max-inflight-body-bytes", "4MiB",
]
# The token file's principals: the good client, the plan flooder, the other
# attackers, and an admin that reads every plan after the restart.
TOKENS = {"good": ("work", "good-0123456789abcdef"), "flooder": ("work", "flood-0123456789abcdef"),
          "bulk": ("work", "bulk-0123456789abcdef"), "ops": ("admin", "ops-0123456789abcdef")}
AUTH_FAILURES = 20


def bearer(name):
    return {"Authorization": "Bearer " + TOKENS[name][1]}


GRAPH = {"format": "memplan.graph/1", "name": "chaos", "nodes": [
    {"id": "a", "bytes": 1000, "time": 1},
    {"id": "b", "inputs": ["a"], "bytes": 2000, "time": 2},
    {"id": "c", "inputs": ["b"], "bytes": 3000, "time": 3},
    {"id": "d", "inputs": ["c"], "bytes": 1000, "time": 1}]}


# ---- the daemon (tests/memplan_daemon.py) ----

def request(port, method, path, body=None, timeout=10.0, conn=None, who="good", headers=None):
    """One exchange as principal `who`; (status, parsed JSON or None, seconds)."""
    h = dict(bearer(who), **(headers or {}))
    status, _, parsed, secs = memplan_daemon.request(port, method, path, body, h, timeout=timeout, conn=conn)
    return status, parsed if not isinstance(parsed, str) else None, secs


# ---- the hostile clients (each run as `test_chaos.py --attack ROLE PORT SECONDS`) ----

def bound_socket(src):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind((src, 0))
    return s


def peer_closed(s):
    """Has the daemon closed this non-blocking socket (EOF or reset)?"""
    try:
        return s.recv(4096) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


def attack_slow_heads(port, seconds):
    """200 connections from 127.0.0.2-5, a head byte a second each."""
    head = b"GET /healthz HTTP/1.1\r\nHost: chaos\r\nX-Pad: " + b"p" * 200 + b"\r\n\r\n"
    conns = {}
    stats = {"opened": 0, "closed_by_server": 0}

    def open_one(i):
        s = bound_socket("127.0.0.%d" % (2 + i % 4))
        s.setblocking(False)
        try:
            s.connect(("127.0.0.1", port))
        except BlockingIOError:
            pass
        except OSError:
            s.close()
            return
        conns[s] = [i, 0, time.monotonic() + 0.2]
        stats["opened"] += 1

    for i in range(200):
        open_one(i)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        now = time.monotonic()
        for s, st in list(conns.items()):
            gone = peer_closed(s)
            if not gone and now >= st[2]:
                try:
                    s.send(head[st[1] % len(head):st[1] % len(head) + 1])
                    st[1] += 1
                    st[2] = now + 1.0
                except BlockingIOError:
                    st[2] = now + 0.2
                except OSError:
                    gone = True
            if gone:
                stats["closed_by_server"] += 1
                del conns[s]
                s.close()
                open_one(st[0])
        time.sleep(0.05)
    for s in conns:
        s.close()
    return stats


def attack_slow_bodies(port, seconds):
    """20 uploads from 127.0.0.6 trickling 10 bytes a second."""
    head = (b"POST /v1/plans HTTP/1.1\r\nHost: chaos\r\nContent-Type: application/json\r\n"
            b"Authorization: Bearer " + TOKENS["bulk"][1].encode() + b"\r\nContent-Length: 100000\r\n\r\n")
    stats = {"opened": 0, "closed_by_server": 0}
    conns = {}

    def open_one():
        s = bound_socket("127.0.0.6")
        s.settimeout(2)
        try:
            s.connect(("127.0.0.1", port))
            s.sendall(head)
        except OSError:
            s.close()
            return
        s.setblocking(False)
        conns[s] = time.monotonic()
        stats["opened"] += 1

    for _ in range(20):
        open_one()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for s in list(conns):
            gone = peer_closed(s)
            if not gone:
                try:
                    s.send(b" ")
                except (BlockingIOError, OSError):
                    gone = True
            if gone:
                stats["closed_by_server"] += 1
                del conns[s]
                s.close()
                open_one()
        time.sleep(0.1)
    for s in conns:
        s.close()
    return stats


def attack_big_bodies(port, seconds):
    """From 127.0.0.7: bodies over the limit, and more large bodies at once
    than the bound on bodies in flight holds."""
    stats = {}
    lock = threading.Lock()
    deadline = time.monotonic() + seconds
    auth = b"Authorization: Bearer " + TOKENS["bulk"][1].encode() + b"\r\n"

    def count(key):
        with lock:
            stats[key] = stats.get(key, 0) + 1

    def exchange(head, body):
        s = bound_socket("127.0.0.7")
        s.settimeout(10)
        try:
            s.connect(("127.0.0.1", port))
            s.sendall(head)
            try:
                if body:
                    s.sendall(body)
            except OSError:
                pass  # refused before the body: the daemon closed
            answer = s.recv(64)
            return answer.split(b" ")[1].decode() if answer.startswith(b"HTTP/1.1 ") else "none"
        except OSError:
            return "error"
        finally:
            s.close()

    def too_large():
        while time.monotonic() < deadline:
            count(exchange(b"POST /v1/plans HTTP/1.1\r\nHost: chaos\r\n" + auth + b"Content-Length: 5242880\r\n\r\n",
                           b""))
            time.sleep(0.05)

    def large():
        body = b"{" + b" " * (900 * 1024 - 2) + b"}"
        head = b"POST /v1/plans HTTP/1.1\r\nHost: chaos\r\n" + auth + b"Content-Length: %d\r\n\r\n" % len(body)
        while time.monotonic() < deadline:
            count(exchange(head, body))

    threads = [threading.Thread(target=too_large)] + [threading.Thread(target=large) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return stats


def attack_flood(port, seconds):
    """16 keep-alive connections from 127.0.0.8, as fast as they go."""
    stats = {}
    lock = threading.Lock()
    deadline = time.monotonic() + seconds
    asks = [("GET", "/healthz", None), ("GET", "/no/such/route", None), ("POST", "/v1/plans", b"{not json"),
            ("GET", "/v1/plans?limit=500", None), ("DELETE", "/healthz", None)]

    def worker(k):
        conn = None
        n = 0
        while time.monotonic() < deadline:
            if conn is None:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10, source_address=("127.0.0.8", 0))
            method, path, body = asks[(n + k) % len(asks)]
            n += 1
            try:
                conn.request(method, path, body=body, headers=bearer("bulk"))
                resp = conn.getresponse()
                resp.read()
                key = str(resp.status)
                if resp.getheader("Connection", "").lower() == "close":
                    conn.close()
                    conn = None
            except (OSError, http.client.HTTPException):
                key = "error"
                conn.close()
                conn = None
            with lock:
                stats[key] = stats.get(key, 0) + 1
        if conn is not None:
            conn.close()

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return stats


def attack_plan_flood(port, seconds):
    """The principal "flooder" on 4 keep-alive connections from 127.0.0.9
    submitting new plans as fast as they go, each under an X-Client-Id and
    X-Forwarded-For of its own: the answers by status, the 429s' error
    codes, and the ids of the plans accepted."""
    stats = {"codes_429": {}, "accepted": []}
    lock = threading.Lock()
    deadline = time.monotonic() + seconds
    budgets = iter(range(10 ** 6, 10 ** 7))

    def worker():
        conn = None
        while time.monotonic() < deadline:
            if conn is None:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10, source_address=("127.0.0.9", 0))
            with lock:
                budget = next(budgets)
            claims = {"X-Client-Id": "flood-%d" % budget, "X-Forwarded-For": "10.%d.%d.1" % (budget % 250, budget % 7)}
            try:
                status, doc, _ = request(port, "POST", "/v1/plans", {"graph": GRAPH, "budget": budget}, conn=conn,
                                         who="flooder", headers=claims)
                key = str(status)
            except (OSError, http.client.HTTPException):
                key, doc = "error", None
                conn.close()
                conn = None
            with lock:
                stats[key] = stats.get(key, 0) + 1
                if key == "202":
                    stats["accepted"].append(doc["id"])
                elif key == "429":
                    code = (doc or {}).get("error", {}).get("code", "?")
                    stats["codes_429"][code] = stats["codes_429"].get(code, 0) + 1
        if conn is not None:
            conn.close()

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return stats


def attack_auth_guess(port, seconds):
    """Wrong tokens from 127.0.0.10 on 2 keep-alive connections, as fast as
    they go: the answers by status and the 429s' error codes."""
    stats = {"codes_429": {}}
    lock = threading.Lock()
    deadline = time.monotonic() + seconds

    def worker(k):
        conn, n = None, 0
        while time.monotonic() < deadline:
            if conn is None:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10, source_address=("127.0.0.10", 0))
            n += 1
            try:
                status, _, doc, _ = memplan_daemon.request(
                    port, "GET", "/v1/plans", None, {"Authorization": "Bearer guess-%d-%d" % (k, n),
                                                     "X-Forwarded-For": "10.0.%d.%d" % (k, n % 250)}, conn=conn)
                key = str(status)
            except (OSError, http.client.HTTPException):
                key, doc = "error", None
                conn.close()
                conn = None
            with lock:
                stats[key] = stats.get(key, 0) + 1
                if key == "429":
                    code = (doc or {}).get("error", {}).get("code", "?") if isinstance(doc, dict) else "?"
                    stats["codes_429"][code] = stats["codes_429"].get(code, 0) + 1
        if conn is not None:
            conn.close()

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return stats


ATTACKS = {"slow-heads": attack_slow_heads, "slow-bodies": attack_slow_bodies,
           "big-bodies": attack_big_bodies, "flood": attack_flood, "plan-flood": attack_plan_flood,
           "auth-guess": attack_auth_guess}


# ---- the well-behaved client ----

def good_client(port, seconds, accepted, latencies, failures):
    """Submit, read back, check health and status, until `seconds` pass."""
    deadline = time.monotonic() + seconds
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    budget = 7000
    while time.monotonic() < deadline:
        t0 = time.monotonic()
        budget += 1  # a new plan each time (the budget is part of its key)
        steps = [("POST", "/v1/plans", {"graph": GRAPH, "budget": budget, "solver": "exact"}),
                 ("GET", None, None), ("GET", "/healthz", None), ("GET", "/readyz", None),
                 ("GET", "/v1/status", None)]
        plan_id = None
        for method, path, body in steps:
            if path is None:
                if plan_id is None:
                    continue
                path = "/v1/plans/" + plan_id
            try:
                status, doc, dur = request(port, method, path, body, conn=conn)
            except (OSError, http.client.HTTPException) as e:
                failures.append("%s %s: %s" % (method, path, e))
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
                continue
            latencies.append(dur)
            ok = False
            if method == "POST":
                ok = status == 202 and doc and len(doc.get("id", "")) == 32 and doc.get("status") == "queued"
                if ok:
                    plan_id = doc["id"]
                    accepted.append(plan_id)
            elif path.startswith("/v1/plans/"):
                ok = status == 200 and doc and doc.get("id") == plan_id and \
                    doc.get("status") in ("queued", "running", "done")
            elif path == "/healthz":
                ok = status == 200 and doc == {"status": "ok"}
            elif path == "/readyz":  # no principal at its cap makes the daemon unready
                ok = status == 200 and doc == {"status": "ready"}
            else:
                ok = status == 200 and doc and "queue_depth" in doc
            if not ok:
                failures.append("%s %s: %s %s" % (method, path, status, json.dumps(doc)[:200]))
        time.sleep(max(0.02, GOOD_PLAN_PERIOD_S - (time.monotonic() - t0)))
    conn.close()


def percentile(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * len(xs)))] if xs else float("nan")


def main():
    if len(sys.argv) == 5 and sys.argv[1] == "--attack":
        print(json.dumps(ATTACKS[sys.argv[2]](int(sys.argv[3]), float(sys.argv[4]))))
        return 0
    bench = len(sys.argv) == 3 and sys.argv[1] == "--bench"
    if len(sys.argv) != 2 and not bench:
        print(__doc__, file=sys.stderr)
        return 2
    binary = os.path.abspath(sys.argv[-1])
    workdir = tempfile.mkdtemp(prefix="mp-chaos-")
    problems = []
    with open(os.path.join(workdir, "tokens"), "w") as f:
        for name, (role, tok) in TOKENS.items():
            f.write("%s %s %s\n" % (name, role, tok))
    daemon = memplan_daemon.Daemon(workdir, DAEMON_FLAGS + ["--token-file", os.path.join(workdir, "tokens")],
                                   binary=binary)
    try:
        daemon.start(delay_ms=300)
        attackers = {role: subprocess.Popen([sys.executable, os.path.abspath(__file__), "--attack", role,
                                             str(daemon.port), str(ATTACK_SECONDS)],
                                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                     for role in ATTACKS}
        time.sleep(1.0)  # let the attacks build up
        accepted, latencies, failures = [], [], []
        good_client(daemon.port, ATTACK_SECONDS - 2.0, accepted, latencies, failures)
        reports = {}
        for role, proc in attackers.items():
            out, err = proc.communicate(timeout=60)
            if proc.returncode != 0:
                problems.append("attacker %s failed: %s" % (role, err.decode()[-500:]))
            else:
                reports[role] = json.loads(out)
        p50, p99, worst = percentile(latencies, 0.5), percentile(latencies, 0.99), max(latencies or [0])
        if failures:
            problems.append("%d wrong answers, first: %s" % (len(failures), failures[:3]))
        if not latencies:
            problems.append("the good client got no answer")
        if reports.get("slow-heads", {}).get("closed_by_server", 0) < 200:
            problems.append("slow heads were not shed: %s" % reports.get("slow-heads"))
        if reports.get("slow-bodies", {}).get("closed_by_server", 0) < 20:
            problems.append("slow bodies were not closed: %s" % reports.get("slow-bodies"))
        big = reports.get("big-bodies", {})
        if big.get("413", 0) == 0 or set(big) - {"400", "413", "503"}:
            problems.append("oversized bodies were answered %s" % big)
        if reports.get("flood", {}).get("error", 0):
            problems.append("the flood saw connection errors: %s" % reports.get("flood"))
        plan_flood = reports.get("plan-flood", {})
        if not plan_flood.get("accepted") or not plan_flood.get("429") or \
                set(plan_flood) - {"202", "429", "accepted", "codes_429"} or \
                set(plan_flood.get("codes_429", {})) != {"client_queue_full"}:
            problems.append("the plan flood was not held to its share (202s, then 429 client_queue_full "
                            "only): %s" % {k: v for k, v in plan_flood.items() if k != "accepted"})
        guess = reports.get("auth-guess", {})
        if not guess.get("429") or not 0 < guess.get("401", 0) <= AUTH_FAILURES or \
                set(guess) - {"401", "429", "codes_429"} or set(guess.get("codes_429", {})) != {"auth_throttled"}:
            problems.append("wrong tokens were not throttled (at most %d 401s, then 429 auth_throttled only): %s"
                            % (AUTH_FAILURES, guess))
        accepted += plan_flood.get("accepted", [])

        # kill -9 with plans queued and running (held, one at least), restart:
        # every accepted plan finishes
        daemon.hold()
        st, doc, _ = request(daemon.port, "POST", "/v1/plans", {"graph": GRAPH, "budget": 999_999_999}, who="ops")
        if st == 202 and doc:
            accepted.append(doc["id"])
        else:
            problems.append("the plan held for the kill was answered %d: %s" % (st, doc))
        st, doc, _ = request(daemon.port, "GET", "/v1/status")
        pending = doc.get("queue_depth", 0) + doc.get("running", 0) if st == 200 and doc else -1
        daemon.kill(signal.SIGKILL)
        daemon.release()
        daemon.start(delay_ms=0)
        unfinished = []
        deadline = time.monotonic() + 60
        for plan_id in accepted:
            status = "?"
            while time.monotonic() < deadline:
                st, doc, _ = request(daemon.port, "GET", "/v1/plans/%s?wait=10&timeline=false" % plan_id, timeout=30,
                                     who="ops")
                status = doc.get("status", "?") if st == 200 and doc else "http %d" % st
                if status not in ("queued", "running"):
                    break
            if status != "done":
                unfinished.append("%s: %s" % (plan_id, status))
        if unfinished:
            problems.append("%d of %d accepted plans did not finish after the restart: %s"
                            % (len(unfinished), len(accepted), unfinished[:3]))
        if pending <= 0:
            problems.append("no plan was pending at the kill (%d): the restart proved nothing" % pending)
        rc = daemon.kill(signal.SIGTERM)
        if rc != 0:
            problems.append("the restarted daemon exited %d on SIGTERM" % rc)
        with open(os.path.join(workdir, "stderr"), errors="replace") as f:
            if any(w in f.read() for w in ("ERROR: AddressSanitizer", "runtime error:", "LeakSanitizer")):
                problems.append("a sanitizer report in %s/stderr" % workdir)

        plan_flood.pop("accepted", None)
        summary = ("chaos: %d answers to the good client, p50 %.3f s, p99 %.3f s, worst %.3f s; "
                   "%d plans accepted, %d pending at kill -9, all finished after the restart: %s; attacks %s"
                   % (len(latencies), p50, p99, worst, len(accepted), pending,
                      "yes" if not unfinished else "no", json.dumps(reports, sort_keys=True)))
        print(summary)
        if bench:
            print("chaos bench: the good client's p99 under the attacks %.3f s, target %.1f s: %s"
                  % (p99, P99_TARGET_S, "met" if p99 < P99_TARGET_S else "MISSED"))
    except Exception as e:  # noqa: BLE001 - a harness failure is a failed test
        problems.append("harness: %r at %s" % (e, traceback.format_exc()[-1500:]))
    finally:
        if daemon.proc and daemon.proc.poll() is None:
            daemon.proc.kill()
            daemon.proc.wait()
    if problems:
        print("chaos: FAILED (%s kept)\n  %s" % (workdir, "\n  ".join(problems)))
        return 1
    shutil.rmtree(workdir, ignore_errors=True)
    print("chaos: OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
