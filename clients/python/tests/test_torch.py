"""Tests of memplan.torch: export, apply (both modes: "recompute", which
runs the plan's own schedule, and "checkpoint") and measure_peak on
ResNet-18, MobileNet-V2 and a small transformer with dropout, a
hand-written schedule run as written, the allocator trace against known
allocation sequences, the fidelity record and the command line. Skipped
when torch (or torchvision) cannot be imported.

Planner-backed checks need a memplan CLI that reads saved_bytes
($MEMPLAN_CLI, default build/memplan); without one they are skipped with a
message. Models are small (batch 2-4, 64x64 images) to stay within a few
minutes on two cores.
"""

import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

# deploy/deps.sh installs Debian's torch and torchvision: without them the
# module fails to load (an error in the run, not a skip).
try:
    import torch
    import torchvision  # noqa: F401
except ImportError as e:  # pragma: no cover - depends on the interpreter
    raise ImportError("torch/torchvision not importable (%s): use an interpreter "
                      "with torch, e.g. /usr/bin/python3 (deploy/deps.sh installs python3-torch)" % e)

import memplan.torch as mt  # noqa: E402
from memplan.torch import _mem, _planner  # noqa: E402
from memplan.torch._export import preserved  # noqa: E402
from memplan.torch._apply import _Checkpointed  # noqa: E402
from memplan.torch.fidelity import fidelity, grads_match, predict_applied  # noqa: E402
from memplan.torch.models import torchvision_model, transformer  # noqa: E402

torch.set_num_threads(1)

_CLI_OK = None


def _cli_ok():
    global _CLI_OK
    if _CLI_OK is None:
        _CLI_OK = os.path.exists(_planner.cli_path()) and _planner.cli_supports_saved_bytes()
    return _CLI_OK


def _need_cli(tc):
    tc.assertTrue(_cli_ok(), "no memplan CLI reading saved_bytes at %s (set MEMPLAN_CLI)"
                  % _planner.cli_path())


def _held(graph):
    """Bytes the loss and its seed gradient hold through backward: export
    counts them as an input node, so the planner's constant memory is
    resident memory plus these."""
    return sum(n["bytes"] for n in graph["nodes"] if n.get("op") == "LossAndSeed")


def _dyn_err(pred, const, meas):
    return 100.0 * ((pred - const) - meas["dynamic_peak_bytes"]) / meas["dynamic_peak_bytes"]


class AllocTraceTest(unittest.TestCase):
    def test_known_sequence(self):
        with _mem.AllocTrace() as tr:
            a = torch.empty(25_000_000)   # 100 MB
            b = torch.empty(10_000_000)   # 40 MB
            del a
            c = torch.empty(5_000_000)    # 20 MB
        self.assertEqual(tr.peak, 140_000_000)
        self.assertEqual(tr.net, 60_000_000)
        del b, c

    def test_measure_peak_known_step(self):
        # y = x * w (4N), z = relu(y) (4N, saved), y freed, loss (4),
        # seed (4); backward: dy (4N), z released, dw (4N) added into
        # w.grad in place: peak 8N + 8 above resident x, w, w.grad (12N).
        n = 250_000

        class M(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.w = torch.nn.Parameter(torch.ones(n))

            def forward(self, x):
                return (x * self.w).relu()

        m, x = M(), torch.randn(n)
        r = mt.measure(m, (x,), time_reps=0)
        self.assertEqual(r["resident_bytes"], 12 * n)
        self.assertEqual(r["dynamic_peak_bytes"], 8 * n + 8)
        self.assertEqual(mt.measure_peak(m, (x,)), 20 * n + 8)
        self.assertIsNone(m.w.grad)  # the model is left as it was

    def test_optimizer_state_is_resident(self):
        m = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 8))
        opt = torch.optim.Adam(m.parameters())
        x = torch.randn(16, 64)
        r = mt.measure(m, (x,), optimizer=opt, time_reps=0)
        pbytes = sum(p.numel() * 4 for p in m.parameters())
        # params + grads + exp_avg + exp_avg_sq, plus Adam's step counters
        self.assertGreaterEqual(r["state_bytes"], 4 * pbytes)
        self.assertLess(r["state_bytes"], 4 * pbytes + 64)
        self.assertEqual(len(opt.state), 0)
        g = mt.export(m, (x,), optimizer=opt, reps=1)
        self.assertEqual(g["param_bytes"], r["state_bytes"])

    def test_optimizer_step_peak(self):
        # Adam on one large weight and a tiny batch: the step's peak is
        # optimizer.step()'s temporaries, with only resident memory left
        _need_cli(self)
        m = torch.nn.Linear(1000, 1000)
        opt = torch.optim.Adam(m.parameters())
        x = torch.randn(2, 1000)
        exp = mt.export_full(m, (x,), optimizer=opt, reps=1)
        p = _planner.plan(exp.graph, _planner.NO_BUDGET, solver="none")
        meas = mt.measure(m, (x,), optimizer=opt, time_reps=0)
        self.assertEqual(p["const_bytes"], meas["resident_bytes"] + _held(exp.graph))
        self.assertLess(p["peak_bytes"], meas["peak_bytes"])
        self.assertEqual(mt.step_peak(exp, p["peak_bytes"]), meas["peak_bytes"])


class TraceTest(unittest.TestCase):
    def test_untraceable_names_the_node(self):
        class Branchy(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = torch.nn.Linear(4, 4)

            def forward(self, x):
                y = self.fc(x)
                if y.sum() > 0:
                    return y
                return -y

        with self.assertRaises(mt.TraceError) as cm:
            mt.export(Branchy(), torch.randn(2, 4))
        msg = str(cm.exception)
        self.assertIn("Branchy", msg)
        self.assertIn("after node 'gt'", msg)
        self.assertIn("control flow", msg)


class _ModelCase:
    """Export, plain prediction, apply, gradients, applied prediction."""
    batch = 4
    fraction = 0.5

    def load(self):
        raise NotImplementedError

    @classmethod
    def setUpClass(cls):
        cls.model, cls.inputs = cls.load(cls)
        cls.exp = mt.export_full(cls.model, cls.inputs, reps=1)
        cls.graph = cls.exp.graph

    def test_graph_shape(self):
        g = self.graph
        self.assertEqual(g["format"], "memplan.graph/1")
        self.assertEqual(g["time_unit"], "ms")
        ids = [n["id"] for n in g["nodes"]]
        self.assertEqual(len(ids), len(set(ids)))
        self.assertEqual(ids[-1], "loss")
        seen = set()
        for n in g["nodes"]:
            for i in n.get("inputs", []):
                self.assertIn(i, seen, "inputs precede their readers")
            seen.add(n["id"])
            self.assertIsInstance(n["bytes"], int)
            self.assertGreaterEqual(n.get("saved_bytes", 0), 0)
            if n.get("kind") != "input":
                self.assertIn(n["bwd_reads"], ("inputs", "output", "both", "none"))
                self.assertGreaterEqual(n["time"], 0)
                self.assertGreaterEqual(n["bwd_time"], 0)
        state, _ = _mem.resident_bytes(self.model, None, self.inputs)
        self.assertGreater(g["param_bytes"], state)  # gradients count too

    def test_plain_prediction(self):
        _need_cli(self)
        p = _planner.plan(self.graph, _planner.NO_BUDGET, solver="none")
        meas = mt.measure(self.exp.gm, self.inputs, time_reps=0)
        self.assertEqual(p["const_bytes"], meas["resident_bytes"] + _held(self.graph))
        self.assertLess(abs(_dyn_err(p["peak_bytes"], p["const_bytes"], meas)), 3.0)

    def plan_at(self, fraction):
        p0 = _planner.plan(self.graph, _planner.NO_BUDGET, solver="none")
        c = p0["const_bytes"]
        plan = _planner.plan(self.graph, int(c + fraction * (p0["peak_bytes"] - c)))
        self.assertTrue(plan["feasible"], plan.get("min_feasible_budget"))
        return p0, c, plan

    def test_apply(self):
        # mode "recompute" (the default) runs the plan's own schedule: the
        # planner's figure is the prediction, up to the RNG states kept
        _need_cli(self)
        p0, c, plan = self.plan_at(self.fraction)
        applied = mt.apply(self.model, plan)
        self.assertIsInstance(applied, mt.AppliedRecompute)
        redone = [s["node"] for s in plan["schedule"] if s["op"] == "recompute"]
        self.assertTrue(redone, "the plan recomputes")
        self.assertEqual(sorted(v for r in applied.regions for v in r), sorted(redone))
        self.assertTrue(grads_match(self.model, applied, self.inputs))
        meas = mt.measure(applied, self.inputs, time_reps=0)
        self.assertLess(meas["peak_bytes"], p0["peak_bytes"])
        pred = predict_applied(self.graph, applied.mapping)
        self.assertLess(abs(_dyn_err(pred[0], c, meas)), 3.0)
        self.assertLessEqual(pred[0] - plan["peak_bytes"],
                             len(applied.mapping.random) * torch.get_rng_state().numel())
        self.assertLess(abs(_dyn_err(plan["peak_bytes"], c, meas)), 3.0)
        # a model instance that was never exported: storage groups from a
        # recording run on example inputs
        twin, _ = self.load()
        twin.load_state_dict(self.model.state_dict())
        with self.assertRaises(mt.PlanError):
            mt.apply(twin, plan)
        self.assertTrue(grads_match(twin, mt.apply(twin, plan, example_inputs=self.inputs),
                                    self.inputs))

    def test_apply_checkpoint_mode(self):
        _need_cli(self)
        p0, c, plan = self.plan_at(self.fraction)
        applied = mt.apply(self.model, plan, mode="checkpoint")
        self.assertIsInstance(applied, mt.Applied)
        self.assertTrue(applied.regions, "the plan recomputes, so something is checkpointed")
        self.assertTrue(applied.kept <= set(plan["checkpoints"]),
                        "regions keep only the plan's checkpoints")
        self.assertTrue(grads_match(self.model, applied, self.inputs))
        meas = mt.measure(applied, self.inputs, time_reps=0)
        self.assertLess(meas["peak_bytes"], p0["peak_bytes"])
        pred = predict_applied(self.graph, applied.mapping)
        self.assertLess(abs(_dyn_err(pred[0], c, meas)), 3.0)
        # a model instance that was never exported: the fallback mapping
        twin, _ = self.load()
        twin.load_state_dict(self.model.state_dict())
        self.assertTrue(grads_match(twin, mt.apply(twin, plan, mode="checkpoint"), self.inputs))
        # the planner's own figure is for its own schedule, not this one:
        # torch usually frees more (up to 25%), but a plan fine-tuned for its
        # own schedule can peak a little higher here (the transformer's plan
        # at 50%, lowered by the least plan's local search, measures 3.7%
        # above the figure); the honest prediction above is the check
        self.assertLess(_dyn_err(plan["peak_bytes"], c, meas), 25.0)
        self.assertGreater(_dyn_err(plan["peak_bytes"], c, meas), -5.0)


class ResNet18Test(_ModelCase, unittest.TestCase):
    batch = 8
    fraction = 0.7

    def load(self):
        return torchvision_model("resnet18", self.batch)


class MobileNetV2Test(_ModelCase, unittest.TestCase):
    fraction = 0.5

    def load(self):
        return torchvision_model("mobilenet_v2", self.batch)


class TransformerTest(_ModelCase, unittest.TestCase):
    fraction = 0.5

    def load(self):
        return transformer(self.batch)

    def test_dropout_masks_are_saved_bytes(self):
        drops = [n for n in self.graph["nodes"] if n.get("op") == "Dropout"]
        self.assertEqual(len(drops), 7)
        for n in drops:
            self.assertEqual(n["bwd_reads"], "none")
            self.assertEqual(n["saved_bytes"], n["bytes"])  # a float mask of the input's size
            self.assertNotIn("recompute", n)  # replayed with the RNG state preserved

    def test_recomputed_dropout_replays_its_masks(self):
        # a plan that recomputes dropout: the applied step draws the same
        # masks (equal gradients), and only because the RNG state is kept
        _need_cli(self)
        _, _, plan = self.plan_at(self.fraction)
        drops = {n["id"] for n in self.graph["nodes"] if n.get("op") == "Dropout"}
        redone = drops & {s["node"] for s in plan["schedule"] if s["op"] == "recompute"}
        self.assertTrue(redone, "the plan recomputes a dropout")
        self.assertTrue(redone <= self.exp.random, "export notes that dropout draws")
        applied = mt.apply(self.model, plan)
        self.assertTrue(grads_match(self.model, applied, self.inputs))
        # one RNG state per run of recomputed random nodes of a segment
        heads = applied.program.rng_heads
        self.assertTrue(heads)
        self.assertTrue({n.name for n in heads} <= redone)
        self.assertLessEqual(len(heads), len(redone))
        # the same recomputation without the RNG states: other masks
        applied.program.rng_heads = []
        self.assertFalse(grads_match(self.model, applied, self.inputs))
        # mode "checkpoint" replays them too, and not without the RNG state
        applied = mt.apply(self.model, plan, mode="checkpoint")
        self.assertTrue(redone <= {v for r in applied.regions for v in r})
        self.assertTrue(grads_match(self.model, applied, self.inputs))
        from torch.utils.checkpoint import checkpoint
        ckpts = [m for m in applied.modules() if isinstance(m, _Checkpointed)]
        self.assertTrue(ckpts)
        for m in ckpts:
            m.forward = (lambda *a, fn=m.fn: checkpoint(fn, *a, use_reentrant=False,
                                                        preserve_rng_state=False))
        self.assertFalse(grads_match(self.model, applied, self.inputs))

    def test_direct_plans_are_monotone(self):
        # the planner's answers, applied as they are: a smaller budget never
        # measures a higher peak, and each measures the planner's figure
        _need_cli(self)
        last = None
        for f in (0.9, 0.7, 0.5):
            p0, c, plan = self.plan_at(f)
            meas = mt.measure(mt.apply(self.model, plan), self.inputs, time_reps=0)
            self.assertLess(abs(_dyn_err(plan["peak_bytes"], c, meas)), 3.0)
            if last is not None:
                self.assertLessEqual(meas["peak_bytes"], last)
            last = meas["peak_bytes"]

    def test_recomputed_tensor_unpacked_twice(self):
        # retain_graph: a second backward cannot take recomputed tensors
        # again; the error says so instead of using wrong values
        _need_cli(self)
        _, _, plan = self.plan_at(self.fraction)
        applied = mt.apply(self.model, plan)
        with preserved(self.model):
            loss = mt.default_loss(applied(*self.inputs))
            loss.backward(retain_graph=True)
            with self.assertRaises(RuntimeError) as cm:
                loss.backward()
        self.assertIn("unpacked twice", str(cm.exception))

    def test_fit_plan(self):
        # the plan fitting picks: predicted within the budget by what torch
        # runs, measured as predicted, same gradients; a smaller budget
        # never gets a higher predicted peak
        _need_cli(self)
        p0 = _planner.plan(self.graph, _planner.NO_BUDGET, solver="none")
        c = p0["const_bytes"]
        budgets = [int(c + f * (p0["peak_bytes"] - c)) for f in (0.8, 0.5)]
        plans = [mt.fit_plan(self.model, b) for b in budgets]
        for b, plan in zip(budgets, plans):
            self.assertIsNotNone(plan)
            self.assertLessEqual(plan["predicted_peak_bytes"], b)
        self.assertLessEqual(plans[1]["predicted_peak_bytes"], plans[0]["predicted_peak_bytes"])
        applied = mt.apply(self.model, plans[1])
        meas = mt.measure(applied, self.inputs, time_reps=0)
        self.assertLess(abs(_dyn_err(plans[1]["predicted_peak_bytes"], c, meas)), 3.0)
        self.assertTrue(grads_match(self.model, applied, self.inputs))
        self.assertIsNone(mt.fit_plan(self.model, c))  # nothing fits constant memory alone
        with self.assertRaises(ValueError):
            mt.fit_plan(transformer(2)[0], budgets[0])  # never exported

    def test_export_leaves_model_alone(self):
        before = [p.detach().clone() for p in self.model.parameters()]
        rng = torch.get_rng_state()
        mt.export(self.model, self.inputs, reps=1)
        self.assertTrue(all(torch.equal(a, b) for a, b in zip(before, self.model.parameters())))
        self.assertTrue(all(p.grad is None for p in self.model.parameters()))
        self.assertTrue(torch.equal(rng, torch.get_rng_state()))


class _TwoBranches(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin1 = torch.nn.Linear(64, 64)
        self.lin2 = torch.nn.Linear(64, 64)
        self.drop = torch.nn.Dropout(0.5)
        self.lin4 = torch.nn.Linear(64, 64)
        self.lin3 = torch.nn.Linear(64, 8)

    def forward(self, x):
        a = torch.relu(self.lin1(x))
        b = self.drop(self.lin2(x))
        b = self.lin4(b * b)
        return self.lin3(a + b)


class ScheduleTest(unittest.TestCase):
    """Mode "recompute" runs a given schedule as written, here one whose
    forward order is not the model's (the second branch is the first
    segment) and that recomputes a dropout."""

    def test_hand_written_schedule(self):
        _need_cli(self)
        with torch.random.fork_rng():
            torch.manual_seed(0)
            model = _TwoBranches()
        x = torch.randn(256, 64)
        exp = mt.export_full(model, (x,), reps=1)
        self.assertEqual(exp.random_fx, {"drop"})
        fwd = ["lin2", "drop.rng", "drop", "mul", "lin4", "lin1", "relu", "add", "lin3", "loss"]
        steps = [{"op": "compute", "node": v} for v in fwd]
        steps += [{"op": "backward", "node": v} for v in ["loss", "lin3", "add", "relu", "lin1"]]
        steps += [{"op": "recompute", "node": v} for v in ["lin2", "drop", "mul"]]
        steps += [{"op": "backward", "node": v} for v in ["lin4", "mul", "drop", "drop.rng",
                                                          "lin2"]]
        applied = mt.apply(model, {"feasible": True, "schedule": steps})
        self.assertEqual([n.name for n in applied.program.order],
                         [v for v in fwd[:-1] if v != "drop.rng"])
        self.assertEqual(applied.regions, [["lin2", "drop", "mul"]])
        self.assertEqual([n.name for n in applied.program.rng_heads], ["drop"])
        self.assertTrue(grads_match(model, applied, (x,)))
        sim = _planner.simulate(exp.graph, {"format": "memplan.schedule/1", "auto_free": True,
                                            "steps": steps})
        self.assertTrue(sim["valid"])
        meas = mt.measure(applied, (x,), time_reps=0)
        self.assertLess(abs(sim["peak_bytes"] - meas["peak_bytes"]), 0.01 * meas["peak_bytes"])
        plain = mt.measure(model, (x,), time_reps=0)
        self.assertLess(meas["peak_bytes"], plain["peak_bytes"])


class FidelityTest(unittest.TestCase):
    FIELDS = ("predicted_peak_bytes", "measured_peak_bytes", "error_pct",
              "predicted_time_ms", "measured_time_ms")

    def check_record(self, rec):
        for k in ("model", "batch", "budget", "plain", "planned", "grads_match", "solver_used"):
            self.assertIn(k, rec)
        for part in ("plain", "planned"):
            for k in self.FIELDS:
                self.assertIn(k, rec[part])
        self.assertTrue(rec["grads_match"])
        self.assertLessEqual(rec["planned"]["predicted_peak_bytes"],
                             rec["plain"]["predicted_peak_bytes"])

    def test_fidelity_record(self):
        _need_cli(self)
        model, inputs = transformer(2)
        rec = fidelity(model, inputs, 0.5, name="transformer", batch=2, reps=1)
        self.check_record(rec)
        self.assertLess(abs(rec["planned"]["dynamic_error_pct"]), 3.0)

    def test_cli(self):
        _need_cli(self)
        models = os.path.join(os.path.dirname(HERE), "memplan", "torch", "models.py")
        env = dict(os.environ, PYTHONPATH=os.path.dirname(HERE))
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "g.json")
            p = subprocess.run([sys.executable, "-m", "memplan.torch", "export", "--model",
                                models + ":transformer", "--batch", "2", "--reps", "1",
                                "--out", out], capture_output=True, text=True, env=env,
                               timeout=300)
            self.assertEqual(p.returncode, 0, p.stderr)
            with open(out) as f:
                self.assertEqual(json.load(f)["format"], "memplan.graph/1")
        p = subprocess.run([sys.executable, "-m", "memplan.torch", "fidelity", "--model",
                            models + ":transformer", "--batch", "2", "--reps", "1",
                            "--budget-fraction", "0.5"],
                           capture_output=True, text=True, env=env, timeout=300)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.check_record(json.loads(p.stdout))
        p = subprocess.run([sys.executable, "-m", "memplan.torch", "export", "--model",
                            "nothing", "--batch", "2", "--out", "-"],
                           capture_output=True, text=True, env=env, timeout=300)
        self.assertEqual(p.returncode, 2)
        self.assertIn("neither torchvision:NAME nor FILE.py:FUNC", p.stderr)

    def test_server(self):
        import harness  # the real daemon of this checkout, on a free port
        daemon = harness.Daemon()
        try:
            model, inputs = transformer(2)
            rec = fidelity(model, inputs, 0.5, name="transformer", batch=2, reps=1,
                           server=daemon.url)
        finally:
            daemon.stop()
        self.check_record(rec)


class ReadmeExampleTest(unittest.TestCase):
    """The README's "Use it from a training job" example runs as written,
    from the repository root."""

    def test_readme_example(self):
        root = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
        self.assertTrue(os.path.exists(os.path.join(root, "build", "memplan")),
                        "no build/memplan in %s (run make)" % root)
        with open(os.path.join(root, "README.md")) as f:
            text = f.read()
        part = text.split("## Use it from a training job", 1)
        self.assertEqual(len(part), 2, "README.md has the section")
        code = part[1].split("```python\n", 1)[1].split("```", 1)[0]
        env = dict(os.environ, PYTHONPATH=os.path.join(root, "clients", "python"))
        p = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True,
                           text=True, env=env, timeout=600)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("planned peak", p.stdout)


if __name__ == "__main__":
    unittest.main()
