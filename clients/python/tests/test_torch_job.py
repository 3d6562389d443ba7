"""Tests of memplan.torch's public path for a training job: export, plan
(the CLI or the daemon alone), predict, apply; plain backpropagation's
peak; where the CLI is found; errors that are errors (a failing CLI raises,
never "nothing fits"); the command line's one-line error and exit status 2
for a model torch.fx cannot trace. Real torch, the real CLI and daemon of
this checkout. Skipped when torch cannot be imported.
"""

import json
import os
import stat
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
PKG = os.path.dirname(HERE)
sys.path.insert(0, PKG)
sys.path.insert(0, HERE)

try:
    import torch
except ImportError as e:  # pragma: no cover - depends on the interpreter
    raise unittest.SkipTest("torch not importable (%s): use an interpreter with torch, "
                            "e.g. /usr/bin/python3" % e)

import memplan.torch as mt  # noqa: E402
from memplan.torch import _planner  # noqa: E402
from memplan.torch.fidelity import grads_match  # noqa: E402

torch.set_num_threads(1)

REPO = os.path.dirname(os.path.dirname(PKG))
CLI = os.environ.get("MEMPLAN_CLI") or os.path.join(REPO, "build", "memplan")


class _Env:
    """Set environment variables for a block, then put them back."""

    def __init__(self, **kv):
        self.kv = kv

    def __enter__(self):
        self.old = {k: os.environ.get(k) for k in self.kv}
        for k, v in self.kv.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v

    def __exit__(self, *exc):
        for k, v in self.old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _mlp():
    with torch.random.fork_rng():
        torch.manual_seed(0)
        model = torch.nn.Sequential(*[m for _ in range(6) for m in
                                      (torch.nn.Linear(128, 128), torch.nn.ReLU())],
                                    torch.nn.Linear(128, 10))
        x = torch.randn(256, 128)
        y = torch.randint(0, 10, (256,))
    return model, x, y


class PublicPathTest(unittest.TestCase):
    """export -> plan -> predict -> apply, with an optimizer, through the
    CLI and through the daemon alone."""

    @classmethod
    def setUpClass(cls):
        cls.model, cls.x, y = _mlp()
        cls.opt = torch.optim.Adam(cls.model.parameters())
        cls.loss_fn = staticmethod(lambda out: torch.nn.functional.cross_entropy(out, y))
        with _Env(MEMPLAN_CLI=CLI):
            cls.graph = mt.export(cls.model, (cls.x,), cls.loss_fn, cls.opt, reps=1)

    def budget(self, plain, server=None):
        least = mt.plan(self.graph, 0, server=server)["min_feasible_budget"]
        return (least + plain["peak_bytes"]) // 2

    def check(self, plan, budget):
        self.assertTrue(plan["feasible"])
        pred = mt.predict(self.graph, plan)
        self.assertEqual(pred["backward_peak_bytes"], plan["peak_bytes"])
        self.assertGreaterEqual(pred["peak_bytes"], pred["backward_peak_bytes"])
        step = mt.apply(self.model, plan)
        meas = mt.measure(step, (self.x,), self.loss_fn, self.opt, time_reps=0)
        self.assertLessEqual(meas["peak_bytes"], budget)
        self.assertLessEqual(meas["peak_bytes"], pred["peak_bytes"])
        self.assertLess(pred["peak_bytes"] - meas["peak_bytes"], 0.01 * pred["peak_bytes"])
        self.assertTrue(grads_match(self.model, step, (self.x,), self.loss_fn))

    def test_cli(self):
        with _Env(MEMPLAN_CLI=CLI):
            self.assertTrue(hasattr(self.graph, "export"))
            plain = mt.plain(self.graph)
            self.assertEqual(plain["solver_used"], "none")
            meas = mt.measure(self.model, (self.x,), self.loss_fn, self.opt, time_reps=0)
            self.assertLessEqual(abs(mt.predict(self.graph, plain)["peak_bytes"]
                                     - meas["peak_bytes"]), 0.01 * meas["peak_bytes"])
            b = self.budget(plain)
            self.check(mt.plan(self.graph, b), b)

    def test_daemon_alone(self):
        import harness  # the real daemon of this checkout, on a free port
        daemon = harness.Daemon()
        try:
            # no CLI anywhere: the daemon alone plans, predicts and fits
            with _Env(MEMPLAN_CLI="/nonexistent/memplan", PATH="/nonexistent"):
                plain = mt.plain(self.graph, server=daemon.url)
                b = self.budget(plain, daemon.url)
                self.check(mt.plan(self.graph, b, server=daemon.url), b)
                fitted = mt.fit_plan(self.model, b, server=daemon.url, points=4)
                self.assertIsNotNone(fitted)
                self.assertLessEqual(fitted["predicted_peak_bytes"], b)
        finally:
            complaint = daemon.stop()
        self.assertEqual(complaint, "")


class ExportCacheTest(unittest.TestCase):
    """A repeated export of the same model on the same device reuses the
    measured times and workspaces: the same graph, the same hash."""

    def test_reuse(self):
        from memplan.torch import _cache
        model, x, _ = _mlp()
        with tempfile.TemporaryDirectory() as d, _Env(MEMPLAN_TORCH_CACHE=d, MEMPLAN_CLI=CLI):
            _cache.clear()
            first = mt.export(model, (x,), reps=1)
            self.assertFalse(first.export.cached)
            self.assertEqual(len(os.listdir(d)), 1)
            again = mt.export(model, (x,), reps=1)
            self.assertTrue(again.export.cached)
            self.assertEqual(dict(again), dict(first))
            # from the file, as a job started again finds it
            _cache.clear()
            other, _, _ = _mlp()
            with torch.no_grad():
                for p in other.parameters():
                    p.mul_(0.5)  # other weights, same costs
            third = mt.export(other, (x,), reps=1)
            self.assertTrue(third.export.cached)
            self.assertEqual(dict(third), dict(first))
            h = [mt.plain(g)["graph_hash"] for g in (first, third)]
            self.assertEqual(h[0], h[1])
            # and from another process (the key holds nothing that differs
            # between processes, such as addresses)
            code = ("import json, memplan.torch as mt\n"
                    "from test_torch_job import _mlp\n"
                    "model, x, _ = _mlp()\n"
                    "g = mt.export(model, (x,), reps=1)\n"
                    "print(json.dumps([g.export.cached, mt.plain(g)['graph_hash']]))\n")
            env = dict(os.environ, PYTHONPATH=os.pathsep.join([PKG, HERE]))
            p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                               env=env, timeout=600)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(json.loads(p.stdout.strip().splitlines()[-1]), [True, h[0]])
            # another shape, or cache=False: measured
            self.assertFalse(mt.export(model, (x[:128],), reps=1).export.cached)
            self.assertFalse(mt.export_full(model, (x,), reps=1, cache=False).cached)


class PackageReadmeTest(unittest.TestCase):
    """clients/python/README.md's memplan.torch example runs as written."""

    def test_example(self):
        with open(os.path.join(PKG, "README.md")) as f:
            text = f.read()
        part = text.split("## memplan.torch", 1)[1]
        code = part.split("```python\n", 1)[1].split("```", 1)[0]
        env = dict(os.environ, PYTHONPATH=PKG, MEMPLAN_CLI=CLI)
        p = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                           text=True, env=env, timeout=900)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertGreater(int(p.stdout.strip().splitlines()[-1]), 0)


class CliLookupTest(unittest.TestCase):
    def test_memplan_cli_then_path(self):
        with tempfile.TemporaryDirectory() as d:
            fake = os.path.join(d, "memplan")
            os.symlink(os.path.abspath(CLI), fake)
            with _Env(MEMPLAN_CLI=None, PATH=d + os.pathsep + os.environ.get("PATH", "")):
                self.assertEqual(_planner.cli_path(), fake)
                self.assertTrue(_planner.cli_supports_saved_bytes())
            with _Env(MEMPLAN_CLI=CLI, PATH=d):
                self.assertEqual(_planner.cli_path(), CLI)


class ErrorsTest(unittest.TestCase):
    """A CLI that fails is an error, not an answer."""

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="memplan-torch-test-")
        cls.broken = os.path.join(cls.dir, "memplan")
        with open(cls.broken, "w") as f:
            f.write("#!/bin/sh\necho 'memplan: internal error' >&2\nexit 3\n")
        os.chmod(cls.broken, stat.S_IRWXU)
        cls.model, cls.x, _ = _mlp()
        with _Env(MEMPLAN_CLI=CLI):
            cls.graph = mt.export(cls.model, (cls.x,), reps=1)

    @classmethod
    def tearDownClass(cls):
        os.unlink(cls.broken)
        os.rmdir(cls.dir)

    def test_broken_cli_raises(self):
        with _Env(MEMPLAN_CLI=self.broken):
            with self.assertRaises(mt.PlannerError) as cm:
                mt.fit_plan(self.model, 10 ** 9)
            self.assertIn("internal error", str(cm.exception))
            with self.assertRaises(mt.PlannerError):
                _planner.cli_supports_saved_bytes()
            with self.assertRaises(mt.PlannerError):
                mt.plan(self.graph, 10 ** 9)

    def test_no_cli(self):
        # as installed: no checkout around the package, no CLI on PATH
        repo, _planner._REPO = _planner._REPO, self.dir
        try:
            with _Env(MEMPLAN_CLI=None, PATH="/nonexistent"):
                self.assertEqual(_planner.cli_path(), "memplan")
                with self.assertRaises(mt.PlannerError) as cm:
                    mt.plain(self.graph)
                self.assertIn("MEMPLAN_CLI", str(cm.exception))
        finally:
            _planner._REPO = repo

    def test_untraceable_model_exit_2(self):
        src = os.path.join(self.dir, "branchy.py")
        with open(src, "w") as f:
            f.write("import torch\n"
                    "class Branchy(torch.nn.Module):\n"
                    "    def forward(self, x):\n"
                    "        if x.sum() > 0:\n"
                    "            return x * 2\n"
                    "        return x\n"
                    "def make(batch):\n"
                    "    return Branchy(), (torch.randn(batch, 4),)\n")
        env = dict(os.environ, PYTHONPATH=PKG, MEMPLAN_CLI=CLI)
        try:
            for cmd in (["export", "--out", "-"], ["fidelity"]):
                p = subprocess.run([sys.executable, "-m", "memplan.torch", cmd[0], "--model",
                                    src + ":make", "--batch", "2", *cmd[1:]],
                                   capture_output=True, text=True, env=env, timeout=300)
                self.assertEqual(p.returncode, 2, p.stderr)
                self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)
                self.assertIn("cannot trace", p.stderr)
                self.assertNotIn("Traceback", p.stderr)
                self.assertEqual(p.stdout, "")
        finally:
            os.unlink(src)


if __name__ == "__main__":
    unittest.main()
