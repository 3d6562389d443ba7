"""memplan-server as a process of a test, restartable, in a directory of its
own (standard library only). The chaos test, the resilience tests and the
PostgreSQL replicas (tests/pg/cluster.py) all start it through Daemon.

Daemon(directory or None, flags, env, delay_ms) keeps everything in the
directory (a temporary one it removes at cleanup() when given None): the
port file, the store (--data-dir), the log (--log-file) and stderr, which
every start appends to. start() runs the binary ($MEMPLAN_SERVER, else
build/memplan-server of this checkout) on a free loopback port
(--listen 127.0.0.1:0, --port-file) and returns once it listens; stop()
sends SIGTERM and, asked to check, fails on an unclean exit or a sanitizer
report; kill() sends any signal (kill -9 to test recovery). hold() and
release() create and remove the directory's hold file, which every start
names in MEMPLAN_TEST_PLAN_HOLD_FILE: while it exists every job waits before
it plans (server/jobs.c; a cancel, --plan-timeout or a shutdown's stop
still ends the wait), so a test keeps plans queued and running exactly as
long as it needs, however loaded the machine. request() speaks HTTP/1.1 to
it, on a connection of its own or one kept by the caller.

(clients/python/tests/harness.py keeps its own Daemon: the client and
contract tests need a one-shot daemon started in its constructor, with a
token file, that removes its directory when it stops.)
"""

import http.client
import json
import os
import pathlib
import shutil
import signal
import subprocess
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
SERVER = os.environ.get("MEMPLAN_SERVER") or str(ROOT / "build" / "memplan-server")
SANITIZER_WORDS = ("AddressSanitizer", "LeakSanitizer", "runtime error:")


def wait_until(pred, timeout, step=0.1):
    """pred()'s first true value, polled for `timeout` seconds; else its
    last (false) value."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(step)
    return pred()


def until(what, cond, seconds=30.0, step=0.05):
    """cond()'s first true value, polled; AssertionError naming `what` after
    `seconds`."""
    value = wait_until(cond, seconds, step)
    if not value:
        raise AssertionError("timed out after %g s waiting for %s" % (seconds, what))
    return value


def request(port, method, path, body=None, headers=None, timeout=60.0, conn=None):
    """One exchange with the daemon on `port` (on `conn` when given, kept
    open): (status, headers with lower-case names, parsed JSON or the text,
    seconds). A dict or list body is sent as JSON, bytes as they are.
    Connection errors are raised."""
    t0 = time.monotonic()
    own = conn is None
    if own:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    data = json.dumps(body).encode() if isinstance(body, (dict, list)) else body
    h = {"Content-Type": "application/json"} if data is not None else {}
    h.update(headers or {})
    try:
        conn.request(method, path, body=data, headers=h)
        resp = conn.getresponse()
        raw = resp.read()
        hdrs = {k.lower(): v for k, v in resp.getheaders()}
    finally:
        if own:
            conn.close()
    try:
        parsed = json.loads(raw) if raw else None
    except ValueError:
        parsed = raw.decode("utf-8", "replace")
    return resp.status, hdrs, parsed, time.monotonic() - t0


class Daemon:
    def __init__(self, directory=None, flags=(), env=None, delay_ms=0, binary=None):
        """`flags` follow the harness's own; `env` adds to the daemon's
        environment; delay_ms holds every job that long before it plans
        (MEMPLAN_TEST_PLAN_DELAY_MS)."""
        self.binary = binary or SERVER
        self.flags = list(flags)
        self.env = dict(env or {})
        self.delay_ms = delay_ms
        self.own_dir = directory is None
        self.dir = tempfile.mkdtemp(prefix="memplan-daemon-") if directory is None else directory
        os.makedirs(self.dir, exist_ok=True)
        self.log = os.path.join(self.dir, "log")
        self.hold_file = os.path.join(self.dir, "hold")
        self.proc = None
        self.port = None
        self.killed = False

    def start(self, delay_ms=None, timeout=30):
        """Start (again) and wait until it listens; returns self."""
        portfile = os.path.join(self.dir, "port")
        if os.path.exists(portfile):
            os.unlink(portfile)
        env = dict(os.environ)
        env.pop("MEMPLAN_TEST_PLAN_DELAY_MS", None)
        delay_ms = self.delay_ms if delay_ms is None else delay_ms
        if delay_ms:
            env["MEMPLAN_TEST_PLAN_DELAY_MS"] = str(delay_ms)
        env["MEMPLAN_TEST_PLAN_HOLD_FILE"] = self.hold_file
        env.update(self.env)
        argv = [self.binary, "--listen", "127.0.0.1:0", "--port-file", portfile,
                "--data-dir", os.path.join(self.dir, "data"), "--log-file", self.log] + self.flags
        with open(os.path.join(self.dir, "stderr"), "ab") as err:
            self.proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=err)
        self.killed = False
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("memplan-server exited with %s during start-up (in %s): %s"
                                   % (self.proc.returncode, self.dir, self.log_tail()))
            try:
                with open(portfile) as f:
                    self.port = int(f.read().strip())
                return self
            except (OSError, ValueError):
                time.sleep(0.05)
        raise RuntimeError("memplan-server did not start (in %s)" % self.dir)

    def hold(self):
        """Hold every job picked from now on (this start and the next ones)
        before it plans, until release(). A stop with jobs held waits out
        --grace before it ends them (they stay queued for the next start)."""
        open(self.hold_file, "w").close()

    def release(self):
        """End the hold: held jobs go on planning."""
        try:
            os.unlink(self.hold_file)
        except FileNotFoundError:
            pass

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def kill(self, sig=signal.SIGKILL, timeout=60):
        """Send `sig` and wait for the exit: its status."""
        self.proc.send_signal(sig)
        self.killed = sig == signal.SIGKILL
        return self.proc.wait(timeout=timeout)

    def stop(self, check=True, timeout=60):
        """SIGTERM and wait (SIGKILL after `timeout`): the exit status, None
        when it had to be killed. With `check`, an unclean exit or a
        sanitizer report raises AssertionError."""
        forced = False
        if self.proc is None:
            return 0
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                forced = True
        code = None if forced else self.proc.returncode
        if check and (code != 0 or self.sanitizer_report()):
            raise AssertionError("memplan-server exited %s: %s" % (code, self.stderr_text()[-2000:]))
        return code

    def cleanup(self, check=True):
        """stop(), then remove the directory when it is the daemon's own."""
        try:
            self.stop(check=check)
        finally:
            if self.own_dir:
                shutil.rmtree(self.dir, ignore_errors=True)

    def _read(self, name):
        try:
            return pathlib.Path(self.dir, name).read_text(errors="replace")
        except OSError:
            return ""

    def log_text(self):
        return self._read("log")

    def log_tail(self, n=4000):
        return self.log_text()[-n:]

    def stderr_text(self):
        return self._read("stderr")

    def sanitizer_report(self):
        text = self.stderr_text() + self.log_text()
        return any(w in text for w in SANITIZER_WORDS)

    def request(self, method, path, body=None, headers=None, timeout=60.0, conn=None):
        """(status, headers, parsed JSON or text) of one exchange."""
        return request(self.port, method, path, body, headers, timeout, conn)[:3]


def chain_graph(n, tag="g", id_len=8):
    """A chain of n nodes whose ids carry `tag` (distinct tags: distinct
    graphs); id_len pads the ids to make the graph's JSON larger."""
    nodes = []
    for i in range(n):
        node = {"id": "%s_%0*d" % (tag, id_len, i), "bytes": 1000 + 10 * (i % 7), "time": 1 + i % 3}
        if i:
            node["inputs"] = [nodes[-1]["id"]]
        nodes.append(node)
    return {"format": "memplan.graph/1", "name": tag, "nodes": nodes}
