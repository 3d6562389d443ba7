"""The real memplan-server for the client tests, and the offline CLI to
check its answers against.

A Daemon owns a temp dir (store, port file, log, token file) and the
server process, started on a free loopback port (--listen 127.0.0.1:0,
--port-file) and stopped with SIGTERM; it dies with the test process
(PR_SET_PDEATHSIG) when a test run is killed. DaemonTestCase starts one
per test class. The binaries are $MEMPLAN_SERVER and $MEMPLAN_CLI (the
Makefile's test-python sets them), else build/ of this checkout; the
package under test is this checkout's clients/python, ahead of any
installed copy.
"""

import ctypes
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
PKG_DIR = os.path.dirname(HERE)
REPO = os.path.dirname(os.path.dirname(PKG_DIR))
if sys.path[:1] != [PKG_DIR]:
    sys.path.insert(0, PKG_DIR)

import summary  # noqa: E402  (the run's closing line)

SERVER = os.environ.get("MEMPLAN_SERVER") or os.path.join(REPO, "build", "memplan-server")
CLI = os.environ.get("MEMPLAN_CLI") or os.path.join(REPO, "build", "memplan")
GRAPHS = os.path.join(REPO, "tests", "graphs")
VGG19 = os.path.join(GRAPHS, "cg_vgg19.txt")


def _die_with_parent():
    """In the child: SIGKILL when the test process goes."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def cli_json(*args, ok_codes=(0,)):
    """Run the memplan CLI with --compact and return its JSON output."""
    proc = subprocess.run([CLI, *args, "--compact"], capture_output=True, text=True, timeout=300)
    if proc.returncode not in ok_codes:
        raise AssertionError("memplan %s exited %d: %s" % (" ".join(args), proc.returncode, proc.stderr))
    return json.loads(proc.stdout)


def wait_for_status(client, plan_id, status, limit=30.0):
    """Poll until the plan has `status` (the daemon's own word)."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < limit:
        if client.get_plan(plan_id, timeline=False)["status"] == status:
            return
        time.sleep(0.02)
    raise AssertionError("plan %s never got to %s" % (plan_id, status))


class Daemon:
    """memplan-server on 127.0.0.1 with its own temp dir."""

    def __init__(self, *flags, token=None, delay_ms=0, workers=2, env=None):
        """`flags` follow the harness's own (a free loopback port, the temp
        dir's store and log, `--workers` unless `workers` is None); `env`
        adds to the daemon's environment. MEMPLAN_TEST_PLAN_HOLD_FILE names
        the temp dir's hold file (see hold())."""
        for binary in (SERVER, CLI):
            if not os.access(binary, os.X_OK):
                raise RuntimeError("%s is missing: run `make all` (or set MEMPLAN_SERVER / MEMPLAN_CLI)" % binary)
        self.dir = tempfile.mkdtemp(prefix="mp-py-test-")
        self.token = token
        portfile = os.path.join(self.dir, "port")
        argv = [SERVER, "--listen", "127.0.0.1:0", "--port-file", portfile, "--data-dir",
                os.path.join(self.dir, "data"), "--log-file", os.path.join(self.dir, "log"),
                *(["--workers", str(workers)] if workers is not None else []), *flags]
        if token is not None:
            tokfile = os.path.join(self.dir, "token")
            with open(tokfile, "w") as f:
                f.write(token + "\n")
            argv += ["--token-file", tokfile]
        env_extra, env = env or {}, dict(os.environ)
        env.pop("MEMPLAN_TEST_PLAN_DELAY_MS", None)
        if delay_ms:
            env["MEMPLAN_TEST_PLAN_DELAY_MS"] = str(delay_ms)
        self.hold_file = os.path.join(self.dir, "hold")
        env["MEMPLAN_TEST_PLAN_HOLD_FILE"] = self.hold_file
        env.update(env_extra)
        self._stderr = open(os.path.join(self.dir, "stderr"), "wb")
        self.proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=self._stderr,
                                     preexec_fn=_die_with_parent)
        self.url = None
        t0 = time.monotonic()
        while self.url is None:
            if self.proc.poll() is not None:
                raise RuntimeError("memplan-server exited during start-up: %s" % self.stop())
            if time.monotonic() - t0 > 30:
                raise RuntimeError("memplan-server did not become healthy: %s" % self.stop())
            self.url = self._healthy(portfile)
            if self.url is None:
                time.sleep(0.02)

    @staticmethod
    def _healthy(portfile):
        try:
            with open(portfile) as f:
                port = int(f.read().strip() or 0)
        except (OSError, ValueError):
            return None
        if port <= 0:
            return None
        url = "http://127.0.0.1:%d" % port
        try:
            with urllib.request.urlopen(url + "/healthz", timeout=5) as r:
                return url if r.status == 200 else None
        except OSError:
            return None

    def metric(self, name, **labels):
        """Sum of the /metrics samples of `name` whose labels include `labels`."""
        with urllib.request.urlopen(self.url + "/metrics", timeout=10) as r:
            text = r.read().decode()
        total = 0.0
        want = ['%s="%s"' % kv for kv in labels.items()]
        for line in text.splitlines():
            if line.startswith("#") or not (line.startswith(name + "{") or line.startswith(name + " ")):
                continue
            series, _, value = line.rpartition(" ")
            if all(w in series for w in want):
                total += float(value)
        return total

    def hold(self):
        """Hold every job the daemon picks from now on before it plans, until
        release() (server/jobs.c: MEMPLAN_TEST_PLAN_HOLD_FILE; a cancel,
        --plan-timeout or a shutdown's stop still ends a held job): a test
        that needs a plan unfinished at some later moment holds it so,
        rather than for a time the machine's load can outrun."""
        open(self.hold_file, "w").close()

    def release(self):
        """End the hold: held jobs go on planning."""
        try:
            os.unlink(self.hold_file)
        except FileNotFoundError:
            pass

    def stop(self):
        """Release a hold, SIGTERM, reap (SIGKILL after 60 s), remove the temp dir. Returns
        a complaint ("" when none): an unclean exit, which under the
        sanitizers also means a leak, or a sanitizer report on stderr."""
        if self.proc.poll() is None:
            self.release()
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._stderr.close()
        with open(self._stderr.name, "rb") as f:
            err = f.read().decode("utf-8", "replace")
        shutil.rmtree(self.dir, ignore_errors=True)
        if "Sanitizer" in err or "runtime error" in err:
            return "memplan-server reported:\n" + err
        if self.proc.returncode != 0:
            return "memplan-server exited with %d:\n%s" % (self.proc.returncode, err)
        return ""


class DaemonTestCase(summary.SummarisedTestCase):
    """One daemon per test class, started with DAEMON_FLAGS (more flags of
    memplan-server) and DAEMON_ARGS (keyword arguments of Daemon);
    self.daemon and self.url reach it."""

    DAEMON_FLAGS = ()
    DAEMON_ARGS = {}

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.daemon = Daemon(*cls.DAEMON_FLAGS, **cls.DAEMON_ARGS)
        cls.url = cls.daemon.url

    @classmethod
    def tearDownClass(cls):
        complaint = cls.daemon.stop()
        super().tearDownClass()
        if complaint:
            raise AssertionError(complaint)


