"""The real memplan-server on a free loopback port, for the resilience tests
(standard library only). Daemon(binary, extra flags, extra environment)
starts it in a temporary directory; request() speaks HTTP/1.1 to it."""

import http.client
import json
import os
import shutil
import subprocess
import tempfile
import time


class Daemon:
    def __init__(self, binary, flags=(), env=None, workdir=None):
        self.binary = binary
        self.flags = list(flags)
        self.env = dict(env or {})
        self.own_dir = workdir is None
        self.dir = workdir or tempfile.mkdtemp(prefix="memplan-res-")
        self.proc = None
        self.port = None

    def start(self):
        portfile = os.path.join(self.dir, "port")
        if os.path.exists(portfile):
            os.unlink(portfile)
        env = dict(os.environ)
        env.pop("MEMPLAN_TEST_PLAN_DELAY_MS", None)
        env.update(self.env)
        argv = [self.binary, "--listen", "127.0.0.1:0", "--port-file", portfile,
                "--data-dir", os.path.join(self.dir, "data"),
                "--log-file", os.path.join(self.dir, "log")] + self.flags
        with open(os.path.join(self.dir, "stderr"), "ab") as err:
            self.proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=err)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("the daemon exited: " + self.log_tail())
            try:
                with open(portfile) as f:
                    self.port = int(f.read().strip())
                return self
            except (OSError, ValueError):
                time.sleep(0.05)
        raise RuntimeError("the daemon did not start")

    def stop(self):
        """SIGTERM; the daemon must drain and exit 0 without a sanitizer report."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        code, self.proc = self.proc.returncode, None
        with open(os.path.join(self.dir, "stderr"), "rb") as f:
            err = f.read().decode("utf-8", "replace")
        if code != 0 or "Sanitizer" in err or "runtime error" in err:
            raise AssertionError("the daemon exited %s: %s" % (code, err[-2000:]))

    def cleanup(self):
        try:
            self.stop()
        finally:
            if self.own_dir:
                shutil.rmtree(self.dir, ignore_errors=True)

    def log_tail(self, n=4000):
        try:
            with open(os.path.join(self.dir, "log"), "rb") as f:
                return f.read()[-n:].decode("utf-8", "replace")
        except OSError:
            return ""

    def request(self, method, path, body=None, headers=None, timeout=60):
        """(status, headers dict, parsed JSON or raw text)."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        data = json.dumps(body).encode() if isinstance(body, (dict, list)) else body
        h = {"Content-Type": "application/json"} if data is not None else {}
        h.update(headers or {})
        try:
            conn.request(method, path, body=data, headers=h)
            resp = conn.getresponse()
            raw = resp.read()
            hdrs = {k.lower(): v for k, v in resp.getheaders()}
        finally:
            conn.close()
        try:
            return resp.status, hdrs, json.loads(raw)
        except ValueError:
            return resp.status, hdrs, raw.decode("utf-8", "replace")


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


def wait_until(pred, timeout, step=0.1):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(step)
    return pred()
