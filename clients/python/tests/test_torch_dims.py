"""Tests of memplan.torch's symbolic export (memplan.graph/2, laws in the
batch), its law check and bounds, forecasts and max-batch: the laws of
ResNet-18 and a small transformer evaluated at a batch never exported
equal a replay export there; a node made to grow with the square of the
batch breaks its law and gets a bound that covers every replay and is
named in the warnings; the largest batch that fits a budget fits and the
next does not, feasibility is monotone, and the applied step measured at
that batch stays within the budget. Small models (batch <= 6, 32x32
images) keep this to about a minute on two cores. Skipped without torch.
"""

import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from memplan.torch import _laws  # noqa: E402  (no torch needed)

try:
    import torch
    import torchvision  # noqa: F401
except ImportError as e:  # pragma: no cover - depends on the interpreter
    torch = None
    _NO_TORCH = str(e)

if torch is not None:
    import memplan.torch as mt
    from memplan.torch import _dims, _forecast, _planner, _probe
    from memplan.torch.models import torchvision_model, transformer
    torch.set_num_threads(1)

SIZES = ("bytes", "saved_bytes")


def _need_torch(tc):
    if torch is None:
        tc.fail("torch/torchvision not importable (%s): use /usr/bin/python3 (deploy/deps.sh installs "
                "python3-torch)" % _NO_TORCH)


def _need_cli(tc):
    if not os.path.exists(_planner.cli_path()):
        tc.fail("no memplan CLI at %s (set MEMPLAN_CLI)" % _planner.cli_path())


class LawsTest(unittest.TestCase):
    """_laws on known numbers."""

    SPEC = {"batch": [2, 3, 4]}

    def fit(self, ys):
        fit, check = _laws.points(self.SPEC)
        return _laws.fit_size(self.SPEC, fit, check, ys), fit + check

    def test_points(self):
        self.assertEqual(_laws.points(self.SPEC), ([(2,), (3,)], [(4,)]))
        spec = {"batch": [2, 3, 4], "seq": [8, 16, 24, 32]}
        fit, check = _laws.points(spec)
        self.assertEqual(len(fit), 6)  # degree 1 x degree 2
        self.assertEqual(check, [(4, 24), (3, 32)])
        self.assertIn((1, 2), _laws.exponents(spec))

    def test_exact_linear(self):
        (law, broken), _ = self.fit([2 * 100 + 7, 3 * 100 + 7, 4 * 100 + 7])
        self.assertIsNone(broken)
        self.assertEqual(_laws.value(law, (16,)), 1607)
        self.assertEqual(_laws.to_json(law, ["batch"]),
                         {"terms": [{"c": 100, "batch": 1}, {"c": 7}]})
        (law, broken), _ = self.fit([5, 5, 5])
        self.assertEqual(_laws.to_json(law, ["batch"]), 5)

    def test_quadratic_in_seq(self):
        spec = {"batch": [2, 3, 4], "seq": [8, 16, 24, 32]}
        fit, check = _laws.points(spec)

        def f(b, s):
            return 4 * b * s * s + 12 * b * s + 64

        law, broken = _laws.fit_size(spec, fit, check, [f(*p) for p in fit + check])
        self.assertIsNone(broken)
        self.assertEqual(_laws.value(law, (64, 512)), f(64, 512))

    def test_broken_law_gets_a_bound(self):
        ys = [4 * 100, 9 * 100, 16 * 100]  # 100 * batch^2
        (law, broken), pts = self.fit(ys)
        self.assertEqual(broken, ((4,), 1600, 1400))
        for p, y in zip(pts, ys):
            self.assertGreaterEqual(_laws.value(law, p), y)
        # at least as steep as the steepest chord (700 per batch)
        self.assertGreaterEqual(_laws.value(law, (10,)) - _laws.value(law, (9,)), 700)
        self.assertGreaterEqual(_laws.value(law, (1,)), 0)
        j = _laws.to_json(law, ["batch"], bound=True)
        self.assertTrue(j["bound"])

    def test_fractional_law_is_broken(self):
        (law, broken), pts = self.fit([1, 2, 2])
        self.assertIsNotNone(broken)
        for p, y in zip(pts, [1, 2, 2]):
            self.assertGreaterEqual(_laws.value(law, p), y)

    def test_larger(self):
        a = [(65536, (1,)), (147456, (0,))]
        b = [(131072, (1,)), (147452, (0,))]
        self.assertEqual(_laws.larger(a, b), (b, False))  # b >= a from batch 1 on
        c = [(1179644, (0,))]
        a2 = [(32768, (1,)), (589824, (0,))]
        law, crossed = _laws.larger(a2, c)
        self.assertTrue(crossed)
        for x in (1, 10, 18, 19, 40, 1000):
            self.assertGreaterEqual(_laws.value(law, (x,)),
                                    max(_laws.value(a2, (x,)), _laws.value(c, (x,))))

    def test_time_law(self):
        proxy = [(1000, (1,)), (0, (0,))]  # the node reads and writes 1000 B per sample
        pts = [(2,), (3,), (4,)]
        law, slow = _laws.fit_time(self.SPEC, pts, [0.2 + 0.01 * 2, 0.2 + 0.01 * 3,
                                                    0.2 + 0.01 * 4], proxy)
        self.assertIsNone(slow)
        self.assertAlmostEqual(_laws.value(law, (16,)), 0.36)
        # noise that falls with the batch gives no negative slope
        law, slow = _laws.fit_time(self.SPEC, pts, [0.5, 0.3, 0.1], proxy)
        self.assertGreaterEqual(min(_laws.value(law, (x,)) for x in (1, 100, 10**6)), 0)
        # a point far above the law: the law is raised to cover it, a bound
        law, slow = _laws.fit_time(self.SPEC, pts, [0.1, 0.1, 0.9], proxy)
        self.assertEqual(slow[0], (4,))
        for p, y in zip(pts, [0.1, 0.1, 0.9]):
            self.assertGreaterEqual(_laws.value(law, p) + 1e-12, y)

    def test_search_max(self):
        _need_torch(self)
        self.assertEqual(_forecast.search_max(lambda b: b <= 37), 37)
        self.assertEqual(_forecast.search_max(lambda b: b <= 1), 1)
        self.assertEqual(_forecast.search_max(lambda b: False), 0)
        self.assertEqual(_forecast.search_max(lambda b: True, limit=100), 100)

    def test_normalize_errors(self):
        for bad in ({"Batch": [2, 3, 4]}, {"batch": [2, 3]}, {"batch": [0, 1, 2]},
                    {"a": [1, 2, 3, 4], "b": [1, 2, 3, 4]}):
            with self.assertRaises(_laws.DimsError):
                _laws.normalize(bad)
        self.assertEqual(_laws.normalize("batch"), {"batch": [2, 3, 4]})


class _Quadratic(torch.nn.Module if torch is not None else object):
    """A node whose output grows with the square of the batch: each sample
    is paired with every sample (an outer product over the batch)."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(16, 16)

    def forward(self, x):
        h = torch.relu(self.fc(x))
        pairs = h.unsqueeze(0) * h.unsqueeze(1)  # batch x batch x 16
        return pairs.sum(1)


SCRATCH_FROM = 8  # batches above this need scratch_double's scratch buffer
SCRATCH_PER_SAMPLE = 1 << 18


def scratch_double(x):
    """x * 2, needing a scratch buffer of 256 KiB per sample above batch 8
    (as a kernel that picks another algorithm at larger batches does): no
    law fitted at batches 2-4 can see it."""
    if x.shape[0] > SCRATCH_FROM:
        t = torch.empty(x.shape[0] * SCRATCH_PER_SAMPLE, dtype=torch.uint8)
        t.fill_(1)
        del t
    return x * 2


if torch is not None:
    torch.fx.wrap("scratch_double")  # one node of the trace, its body run as it is


class _Jump(torch.nn.Module if torch is not None else object):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(256, 512)
        self.b = torch.nn.Linear(512, 512)
        self.c = torch.nn.Linear(512, 10)

    def forward(self, x):
        h = scratch_double(torch.relu(self.a(x)))
        return self.c(torch.relu(self.b(h)))


class SymbolicExportTest(unittest.TestCase):
    def setUp(self):
        _need_torch(self)

    def check_laws(self, make, unseen):
        model, inputs = make(4)
        g = mt.export(model, inputs, dims={"batch": [2, 3, 4]}, reps=1)
        self.assertEqual(g["format"], "memplan.graph/2")
        self.assertEqual(g["dims"], {"batch": {"exported_at": [2, 3, 4], "default": 4, "min": 1}})
        m2, i2 = make(unseen)
        replay = mt.export(m2, i2, reps=1)
        bound = _dims.bind(g, {"batch": unseen})
        self.assertEqual(bound["format"], "memplan.graph/1")
        self.assertEqual(bound["param_bytes"], replay["param_bytes"])
        self.assertEqual([n["id"] for n in bound["nodes"]], [n["id"] for n in replay["nodes"]])
        laws = 0
        for a, b, n in zip(bound["nodes"], replay["nodes"], g["nodes"]):
            for f in SIZES:
                self.assertEqual(a.get(f, 0), b.get(f, 0), "%s %s at %d" % (n["id"], f, unseen))
                laws += isinstance(n.get(f), dict)
            ws = n.get("workspace_bytes")
            if isinstance(ws, dict) and ws.get("bound"):  # a bound is above the replay
                self.assertGreaterEqual(a["workspace_bytes"], b.get("workspace_bytes", 0))
            self.assertFalse(isinstance(n.get("bytes"), dict) and n["bytes"].get("bound"),
                             n["id"])
        self.assertGreater(laws, 10)
        # the default binding is the export's own batch
        self.assertEqual(_dims.bind(g)["nodes"][0]["bytes"], i2[0].nelement() *
                         i2[0].element_size() * 4 // unseen)
        return g

    def test_resnet18(self):
        self.check_laws(lambda b: torchvision_model("resnet18", b, 32), 6)

    def test_transformer(self):
        g = self.check_laws(lambda b: transformer(b, seq=16, dim=32, heads=2, layers=1), 7)
        self.assertTrue(any(isinstance(n.get("saved_bytes"), dict) for n in g["nodes"]))

    def test_broken_law(self):
        torch.manual_seed(0)
        model, x = _Quadratic(), torch.randn(4, 16)
        g = mt.export(model, (x,), dims="batch", reps=1)
        node = next(n for n in g["nodes"] if n["id"] == "mul")
        self.assertTrue(node["bytes"]["bound"])
        self.assertTrue(any(w.startswith("node 'mul': bytes broke its law at batch=4")
                            for w in g["warnings"]), g.get("warnings"))
        for b in (2, 3, 4):  # the bound covers every replay
            replay = mt.export(model, (x[:b],), reps=1)
            got = _dims.bind(g, {"batch": b})
            want = next(n for n in replay["nodes"] if n["id"] == "mul")["bytes"]
            self.assertEqual(want, b * b * 16 * 4)
            self.assertGreaterEqual(next(n for n in got["nodes"] if n["id"] == "mul")["bytes"],
                                    want)
        info = _dims.forecast_info(g, {"batch": 16})
        self.assertGreaterEqual(info["forecast"]["bounded_nodes"], 1)
        self.assertTrue(info["forecast"]["extrapolated"])

    def test_seq_quadratic(self):
        """Batch and a sequence length (its values give degree 2): the
        attention scores' bytes are a law in batch * seq^2; every node's
        bytes at an unseen (batch, seq) equal a replay's there. The model's
        mask buffer is sized by the sequence, so make= builds each replay."""
        def make(b, s):
            return transformer(b, seq=s, dim=16, heads=2, layers=1)
        g = mt.export(None, None, dims={"batch": [2, 3, 4], "seq": [4, 8, 12, 16]},
                      make=lambda d: make(d["batch"], d["seq"]), measure=False)
        self.assertEqual(list(g["dims"]), ["batch", "seq"])
        soft = next(n for n in g["nodes"] if n["id"] == "softmax")
        self.assertEqual(soft["bytes"], {"terms": [{"c": 8, "batch": 1, "seq": 2}]})
        m, i = make(5, 20)
        replay = mt.export(m, i, measure=False)
        bound = _dims.bind(g, {"batch": 5, "seq": 20})
        self.assertEqual(bound["param_bytes"], replay["param_bytes"])
        for a, b in zip(bound["nodes"], replay["nodes"]):
            for f in SIZES:
                self.assertEqual(a.get(f, 0), b.get(f, 0), "%s %s" % (a["id"], f))
        with self.assertRaisesRegex(_laws.DimsError, "name the input axis of dim 'seq'"):
            mt.export(m, i, dims={"batch": [2, 3, 4], "seq": [4, 8, 12]})

    def test_batch_on_another_axis(self):
        """Inputs laid out (time, batch, features): axes={"batch": 1}."""
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.ReLU(),
                                    torch.nn.Linear(32, 4))
        x = torch.randn(5, 4, 8)
        g = mt.export(model, (x,), dims="batch", axes={"batch": 1}, measure=False)
        self.assertEqual(g["nodes"][0]["bytes"], {"terms": [{"c": 5 * 8 * 4, "batch": 1}]})
        self.assertEqual(g["dims"]["batch"]["default"], 4)
        want = mt.export(model, (torch.randn(5, 9, 8),), measure=False)
        got = _dims.bind(g, {"batch": 9})
        self.assertEqual([n["bytes"] for n in got["nodes"]], [n["bytes"] for n in want["nodes"]])

    def test_synthetic_replays(self):
        """symbolic_graph on hand-made replays: a slow timing on many nodes
        gives one warning within the format's 2,000 bytes, which the CLI
        reads; replays that differ in a node's inputs are refused."""
        spec = {"batch": [2, 3, 4]}

        def replays(inputs_at_4=("x",)):
            out = {}
            for b in (2, 3, 4):
                nodes = [{"id": "x", "kind": "input", "bytes": 64 * b}]
                for i in range(200):
                    nodes.append({"id": "node_with_a_long_name_%03d" % i, "bytes": 10 * b + 6,
                                  "inputs": list(inputs_at_4 if b == 4 and i == 7 else ("x",)),
                                  "time": 5.0 if b == 3 else 0.1})
                out[(b,)] = {"format": "memplan.graph/1", "param_bytes": 1000, "nodes": nodes}
            return out
        g = _dims.symbolic_graph(spec, replays())
        self.assertEqual(len(g["warnings"]), 1)
        self.assertLessEqual(len(g["warnings"][0].encode()), 2000)
        self.assertIn("times of 200 nodes", g["warnings"][0])
        self.assertEqual(g["nodes"][1]["bytes"], {"terms": [{"c": 10, "batch": 1}, {"c": 6}]})
        self.assertEqual(g["param_bytes"], 1000)
        if os.path.exists(_planner.cli_path()) and _forecast.cli_reads_graph2():
            at = _planner._run_cli(["plan", "--budget", str(1 << 40), "--dim", "batch=50"], g)
            self.assertTrue(at["feasible"])
            self.assertEqual(at["warnings"], g["warnings"])
        with self.assertRaisesRegex(_laws.DimsError, "batch=4 differs from the graph at batch=3 "
                                    "at node 'node_with_a_long_name_007'"):
            _dims.symbolic_graph(spec, replays(("x", "node_with_a_long_name_006")))

    def test_bind_errors(self):
        g = {"format": "memplan.graph/2", "dims": {"batch": {"exported_at": [2, 3, 4],
                                                             "default": 4, "min": 1}},
             "nodes": [{"id": "a", "bytes": {"terms": [{"c": 10, "batch": 1}, {"c": -25}]}}]}
        with self.assertRaisesRegex(_laws.DimsError, r"\$\.dims\.seq"):
            _dims.bind(g, {"seq": 3})
        with self.assertRaisesRegex(_laws.DimsError, r"\$\.nodes\[0\]\.bytes: law gives -15"):
            _dims.bind(g, {"batch": 1})
        self.assertEqual(_dims.bind(g, {"batch": 3})["nodes"][0]["bytes"], 5)


class MaxBatchTest(unittest.TestCase):
    def setUp(self):
        _need_torch(self)
        _need_cli(self)

    def test_max_batch(self):
        model, inputs = torchvision_model("resnet18", 4, 32)
        exp = _forecast.export_forecast(model, inputs, 4, reps=1)
        g2 = exp.graph
        one = _planner.plan(_dims.bind(g2, {"batch": 1}), 0)["min_feasible_budget"]
        budget = one + 40_000_000
        res = _forecast.max_batch(g2, budget)
        b = res["batch"]
        self.assertGreater(b, 4)
        self.assertTrue(res["plan"]["feasible"])
        self.assertLessEqual(res["plan"]["peak_bytes"], budget)
        self.assertFalse(res["next"]["feasible"])
        self.assertGreater(res["next"]["min_feasible_budget"], budget)
        # monotone: every batch below fits, every batch above does not
        for x in sorted({1, 2, b // 2, b - 1, b + 2, 2 * b}):
            if x >= 1:
                p = _planner.plan(_dims.bind(g2, {"batch": x}), budget)
                self.assertEqual(bool(p["feasible"]), x <= b, x)
        if _forecast.cli_reads_graph2():  # the CLI binds the laws as bind() does
            via = _planner._run_cli(["plan", "--budget", str(budget), "--dim", "batch=%d" % b],
                                    g2)
            self.assertEqual(via["peak_bytes"], res["plan"]["peak_bytes"])
            self.assertEqual(via["dims"], {"batch": b})
            self.assertGreaterEqual(via["forecast"]["bounded_nodes"], 0)
        if _forecast.cli_supports_dims():  # the CLI's own search agrees
            ans = _forecast._cli_maximize(g2, budget, "auto", {})
            self.assertEqual(ans["value"], b)
        m = _forecast.measure_at(model, inputs, g2, res["_plan"], b)
        self.assertLessEqual(m["measured_peak_bytes"], budget)

    def test_probe_matches_a_replay(self):
        """Each node run alone at an unseen batch (inputs scaled from batches
        3 and 4) needs the workspace a whole export there measures."""
        for make, b in ((lambda n: torchvision_model("resnet18", n, 32), 6),
                        (lambda n: transformer(n, seq=16, dim=32, heads=2, layers=1), 7)):
            model, inputs = make(4)
            exp = _forecast.export_forecast(model, inputs, 4, reps=1)
            res = _probe.probe(model, inputs, exp, [b])
            self.assertEqual(res["unprobed"], {})
            replay = mt.export(model, make(b)[1], reps=1)
            got = res["at"][b]
            self.assertEqual(len(got), len(exp.groups))
            for n in replay["nodes"]:
                if n["id"] in got:
                    self.assertEqual(got[n["id"]], n.get("workspace_bytes", 0), n["id"])

    def test_probe_raises_a_broken_workspace(self):
        """A node whose workspace appears only above batch 8: the laws from
        batches 2-4 answer a batch whose step measures far over the budget;
        probing each node alone at the answer raises the node's law to a
        bound, and the answer then measures within the budget while the
        next batch does not fit."""
        torch.manual_seed(0)
        model, x = _Jump(), torch.randn(4, 256)
        exp = _forecast.export_forecast(model, (x,), 4, reps=1)
        budget = 6_000_000
        blind = _forecast.max_batch(exp.graph, budget)
        self.assertGreater(blind["batch"], SCRATCH_FROM)
        m = _forecast.measure_at(model, (x,), exp.graph, blind["_plan"], blind["batch"])
        self.assertGreater(m["measured_peak_bytes"], budget)
        res = _forecast.max_batch_probed(model, (x,), exp, budget)
        b, probe = res["batch"], res["probe"]
        self.assertTrue(probe["stable"])
        self.assertEqual(probe["raised"], ["scratch_double"])
        self.assertTrue({blind["batch"], b, b + 1} <= set(probe["batches"]), probe)
        self.assertTrue(1 <= b < blind["batch"])
        self.assertLessEqual(res["plan"]["peak_bytes"], budget)
        self.assertFalse(res["next"]["feasible"])
        self.assertGreater(res["next"]["min_feasible_budget"], budget)
        g2 = res["_graph"]
        law = next(n for n in g2["nodes"] if n["id"] == "scratch_double")["workspace_bytes"]
        self.assertTrue(law["bound"])
        for at in probe["batches"]:  # the bound covers the scratch at every probed batch
            need = at * SCRATCH_PER_SAMPLE if at > SCRATCH_FROM else 0
            self.assertGreaterEqual(_dims.bind(g2, {"batch": at})["nodes"][4]["workspace_bytes"],
                                    need)
        self.assertEqual(g2["nodes"][4]["id"], "scratch_double")
        self.assertTrue(any(w.startswith("node 'scratch_double': workspace_bytes needs more "
                                         "alone at batch=%d" % blind["batch"])
                            for w in g2["warnings"]), g2["warnings"])
        self.assertGreaterEqual(res["forecast"]["bounded_nodes"], 1)
        self.assertNotIsInstance(exp.graph["nodes"][4].get("workspace_bytes", 0), dict)
        m = _forecast.measure_at(model, (x,), g2, res["_plan"], b)
        self.assertLessEqual(m["measured_peak_bytes"], budget)
        self.assertGreaterEqual(m["predicted_peak_bytes"], m["measured_peak_bytes"])

    def test_command(self):
        src = ("import torch\n"
               "def make(batch):\n"
               "    torch.manual_seed(0)\n"
               "    m = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(),\n"
               "                            torch.nn.Linear(512, 512), torch.nn.ReLU(),\n"
               "                            torch.nn.Linear(512, 10))\n"
               "    return m, (torch.randn(batch, 256),)\n")
        env = dict(os.environ, PYTHONPATH=os.path.dirname(HERE))
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "mlp.py")
            with open(path, "w") as f:
                f.write(src)
            p = subprocess.run([sys.executable, "-m", "memplan.torch", "max-batch", "--model",
                                path + ":make", "--budget", "6MB", "--measure", "--reps", "1",
                                "--threads", "1"],
                               capture_output=True, text=True, env=env, timeout=300)
            self.assertEqual(p.returncode, 0, p.stderr)
            out = json.loads(p.stdout)
            self.assertEqual(out["exported_at"], [2, 3, 4])
            self.assertGreater(out["batch"], 4)
            self.assertLessEqual(out["plan"]["peak_bytes"], 6_000_000)
            self.assertFalse(out["next"]["feasible"])
            self.assertLessEqual(out["measured"]["measured_peak_bytes"], 6_000_000)
            self.assertTrue(out["measured"]["within_budget"])
            self.assertTrue(out["probe"]["stable"])
            self.assertTrue({out["batch"], out["batch"] + 1} <= set(out["probe"]["batches"]))
            p = subprocess.run([sys.executable, "-m", "memplan.torch", "fidelity", "--model",
                                path + ":make", "--batch", "16", "--export-batch", "4",
                                "--reps", "1"], capture_output=True, text=True, env=env,
                               timeout=300)
            self.assertEqual(p.returncode, 0, p.stderr)
            rec = json.loads(p.stdout)
            self.assertEqual((rec["exported_at"], rec["forecast_batch"], rec["batch"]),
                             ([2, 3, 4], 16, 16))
            self.assertLess(abs(rec["plain"]["error_pct"]), 3.0)
            self.assertTrue(rec["forecast"]["extrapolated"])
            out = os.path.join(d, "g.json")
            p = subprocess.run([sys.executable, "-m", "memplan.torch", "export", "--model",
                                path + ":make", "--batch", "8", "--dims", "batch", "--reps", "1",
                                "--out", out], capture_output=True, text=True, env=env,
                               timeout=300)
            self.assertEqual(p.returncode, 0, p.stderr)
            with open(out) as f:
                g = json.load(f)
            self.assertEqual(g["dims"]["batch"], {"exported_at": [4, 6, 8], "default": 8,
                                                  "min": 1})
            if _forecast.cli_reads_graph2():
                at = _planner._run_cli(["plan", "--budget", str(1 << 40), "--dim", "batch=64"],
                                       g)
                self.assertEqual(at["dims"], {"batch": 64})
            p = subprocess.run([sys.executable, "-m", "memplan.torch", "max-batch", "--model",
                                path + ":make", "--budget", "lots"],
                               capture_output=True, text=True, env=env, timeout=300)
            self.assertEqual(p.returncode, 2)
            self.assertIn("--budget 'lots' is not a size", p.stderr)


class CliFeatureTest(unittest.TestCase):
    """cli_reads_graph2 and cli_supports_dims: a CLI that refuses the
    option cleanly lacks the feature; a CLI that crashes is an error."""

    def fake(self, d, name, body):
        path = os.path.join(d, name)
        with open(path, "w") as f:
            f.write("#!/bin/sh\n" + body + "\n")
        os.chmod(path, 0o755)
        return path

    def ask(self, cli):
        old = os.environ.get("MEMPLAN_CLI")
        os.environ["MEMPLAN_CLI"] = cli
        _forecast._CLI_HAS.clear()
        try:
            return _forecast.cli_reads_graph2(), _forecast.cli_supports_dims()
        finally:
            _forecast._CLI_HAS.clear()
            if old is None:
                del os.environ["MEMPLAN_CLI"]
            else:
                os.environ["MEMPLAN_CLI"] = old

    def test_absent_only_when_refused(self):
        _need_torch(self)
        _need_cli(self)
        self.assertEqual(self.ask(_planner.cli_path()), (True, True))
        with tempfile.TemporaryDirectory() as d:
            # a CLI from before the options: it refuses the first it does not know
            old = self.fake(d, "old", 'for a in "$@"; do case "$a" in --dim|--maximize) '
                            'echo "memplan plan: unknown option \'$a\' (see memplan --help)" >&2; '
                            'exit 2;; esac; done; exit 0')
            self.assertEqual(self.ask(old), (False, False))
            v1 = self.fake(d, "v1", "echo 'memplan: g.json: $.format: format must be "
                           "\"memplan.graph/1\", got \"memplan.graph/2\"' >&2; exit 2")
            self.assertEqual(self.ask(v1), (False, False))
            for name, body in (("crash", "echo 'memplan: internal error' >&2; exit 3"),
                               ("segv", "kill -SEGV $$"),
                               ("bad", "echo 'memplan: g.json: $.nodes[0].bytes: bad' >&2; exit 2"),
                               ("nojson", "echo 'not json'; exit 0")):
                with self.assertRaises(_planner.PlannerError, msg=name):
                    self.ask(self.fake(d, name, body))


class CudaCommandTest(unittest.TestCase):
    def test_skips_without_cuda(self):
        _need_torch(self)
        if torch.cuda.is_available():
            self.skipTest("CUDA is here: the command would run the whole table")
        bench = os.path.join(os.path.dirname(HERE), "bench_fidelity.py")
        p = subprocess.run([sys.executable, bench, "--forecast", "--device", "cuda"],
                           capture_output=True, text=True, timeout=300)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("CUDA is not available here", p.stdout)


class ForecastFidelityTest(unittest.TestCase):
    def setUp(self):
        _need_torch(self)
        _need_cli(self)

    def test_forecast_at_16(self):
        model, inputs = torchvision_model("mobilenet_v2", 16, 32)
        rec = _forecast.forecast_fidelity(model, inputs, 16, 4, (0.6,), reps=1)[0]
        self.assertEqual(rec["exported_at"], [2, 3, 4])
        self.assertEqual(rec["forecast_batch"], 16)
        self.assertTrue(rec["forecast"]["extrapolated"])
        self.assertLess(abs(rec["plain"]["error_pct"]), 3.0)
        self.assertIsNotNone(rec["planned"])
        self.assertLess(abs(rec["planned"]["error_pct"]), 3.0)
        self.assertLessEqual(rec["planned"]["measured_peak_bytes"], rec["budget"])
        if torch.get_num_threads() == 1:  # MobileNet-V2's pointwise convolutions
            self.assertTrue(any("1x1 convolutions" in w for w in rec["forecast"]["warnings"]))


if __name__ == "__main__":
    unittest.main()
