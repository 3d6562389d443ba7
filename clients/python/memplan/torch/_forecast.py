"""_forecast.py - planning a training step at a batch it has never run
at: export at a few small batches (a memplan.graph/2 with laws in
"batch", _dims.py), bind the laws at the target batch, plan there; and
check the forecast against a real step at the target (forecast_fidelity)
or find the largest batch that fits a budget (max_batch).

The batches exported at, for --export-batch K: K/2, 3K/4 and K (rounded
down, distinct; K >= 3), so that K = 4 gives 2, 3, 4: a law of degree 1
needs two of them and the third checks it.

Binding happens here in Python (_dims.bind), so forecasts work with any
memplan CLI or daemon; the largest batch is the CLI's `plan --maximize
batch` where the CLI has it, otherwise (a daemon, an older CLI) the same
search done here over plans of the bound graphs: doubling from 1 until a batch does not fit, then
bisection (feasibility is monotone in the batch when every law is
nondecreasing, which the export's laws are for any real model; the search
relies on it as the CLI's does).
"""

import copy
import json
import math

from . import _dims, _laws, _planner
from ._export import as_tuple, default_loss, export_full
from ._predict import predict_applied

MAX_BATCH = 1 << 31
MAXIMIZE_TIMEOUT = 3600.0  # seconds the CLI's search may take


def export_batches(k):
    """The batches to export at for --export-batch k."""
    k = int(k)
    vals = sorted({max(1, k // 2), max(1, (3 * k) // 4), k})
    if k < 3 or len(vals) < 3:
        raise _dims.DimsError("memplan.torch: --export-batch must be at least 3 (three batches: "
                              "two fit the laws, one checks them)")
    return vals


def export_forecast(model, example_inputs, export_batch, loss_fn=None, optimizer=None, *,
                    name=None, reps=3, axes=None):
    """Export with dims {"batch": export_batches(export_batch)}; the
    example inputs' batch (sliced or repeated along the batch axis) is the
    graph's default."""
    return export_full(model, example_inputs, loss_fn, optimizer, name=name, reps=reps,
                       dims={"batch": export_batches(export_batch)}, axes=axes)


def _summary(plan):
    keys = ("feasible", "peak_bytes", "const_bytes", "budget", "min_feasible_budget",
            "solver_used")
    out = {k: plan[k] for k in keys if k in plan}
    if isinstance(plan.get("time"), dict):
        out["time"] = plan["time"].get("total")
    out["recomputed"] = len(plan.get("recomputed") or [])
    out["checkpoints"] = len(plan.get("checkpoints") or [])
    return out


def forecast_fidelity(model, inputs, batch, export_batch, fractions=(0.6,), *, name=None,
                      loss_fn=None, server=None, solver="auto", reps=3, mode="recompute",
                      fit=True):
    """Fidelity records (fidelity.fidelity_many's) for `model` at `batch`
    (inputs are at that batch) with the graph exported at batches no larger
    than export_batch and bound at `batch`; each record also has
    exported_at, forecast_batch and forecast (bounded_nodes, extrapolated,
    the graph's warnings)."""
    from .fidelity import fidelity_many
    inputs = as_tuple(inputs)
    exp = export_forecast(model, inputs, export_batch, loss_fn, name=name, reps=reps)
    g2 = exp.graph
    graph = _dims.bind(g2, {"batch": int(batch)})
    info = _dims.forecast_info(g2, {"batch": int(batch)})
    info["forecast"]["warnings"] = list(g2.get("warnings", []))
    recs = fidelity_many(model, inputs, fractions, name=name, batch=batch, loss_fn=loss_fn,
                         server=server, solver=solver, reps=reps, fit=fit, mode=mode,
                         exp=exp, graph=graph)
    for r in recs:
        r["exported_at"] = list(g2["dims"]["batch"]["exported_at"])
        r["forecast_batch"] = int(batch)
        r["forecast"] = info["forecast"]
    return recs


# ---- the largest batch --------------------------------------------------


class _Fits:
    """Whether the graph bound at a batch has a plan within the budget,
    each batch planned once."""

    def __init__(self, g2, budget, server, solver, extra):
        self.g2, self.budget, self.server, self.solver = g2, int(budget), server, solver
        self.extra = extra or {}
        self.plans = {}

    def plan(self, b):
        if b not in self.plans:
            g = _dims.bind(self.g2, dict(self.extra, batch=b))
            self.plans[b] = _planner.plan(g, self.budget, solver=self.solver, server=self.server)
        return self.plans[b]

    def __call__(self, b):
        return bool(self.plan(b).get("feasible"))


def search_max(fits, lo=1, limit=MAX_BATCH):
    """The largest b in [lo, limit] with fits(b), fits monotone
    (decreasing); 0 when fits(lo) is false."""
    if not fits(lo):
        return 0
    good, b = lo, lo
    while True:  # doubling until a batch does not fit
        nb = min(limit, b * 2)
        if nb == b:
            return b
        if not fits(nb):
            bad = nb
            break
        good = b = nb
    while bad - good > 1:
        mid = (good + bad) // 2
        if fits(mid):
            good = mid
        else:
            bad = mid
    return good


_CLI_HAS = {}
_PROBE = {"format": "memplan.graph/2",
          "dims": {"batch": {"exported_at": [1, 2, 3], "default": 1, "min": 1}},
          "nodes": [{"id": "a", "bytes": {"terms": [{"c": 1, "batch": 1}]}}]}


def _absent(err, what):
    """Whether a CLI failure says cleanly that the CLI lacks `what`: it
    refused an option it does not know (exit 2, "unknown option '--dim'"),
    or, for graph2, a native graph of another format version."""
    msg = str(err)
    if "(exit 2)" not in msg:
        return False
    opts = {"graph2": ("--dim",), "maximize": ("--maximize", "--max-value")}[what]
    if any("unknown option '%s'" % o in msg for o in opts):
        return True
    return 'got "memplan.graph/2"' in msg


def _cli_has(what, args):
    """Whether the CLI has a feature: True when the probe plans; False only
    when the CLI says cleanly that it does not know the feature (_absent);
    any other failure (a crash, a CLI that is missing or prints no JSON)
    raises PlannerError."""
    key = (_planner.cli_path(), what)
    if key not in _CLI_HAS:
        try:
            _planner._run_cli(args, _PROBE, timeout=60)
            _CLI_HAS[key] = True
        except _planner.PlannerError as e:
            if not _absent(e, what):
                raise
            _CLI_HAS[key] = False
    return _CLI_HAS[key]


def cli_reads_graph2():
    """Whether the CLI reads memplan.graph/2 and binds --dim."""
    return _cli_has("graph2", ["plan", "--budget", "100", "--dim", "batch=2"])


def cli_supports_dims():
    """Whether the CLI has `plan --maximize` on memplan.graph/2."""
    return _cli_has("maximize", ["plan", "--budget", "100", "--maximize", "batch",
                                 "--max-value", "1000"])


def _cli_maximize(g2, budget, solver, extra, limit=MAX_BATCH):
    """The CLI's `plan --maximize batch` answer, or None when the CLI
    does not have it."""
    if not cli_supports_dims():
        return None
    args = ["plan", "--budget", str(int(budget)), "--solver", solver, "--maximize", "batch",
            "--max-value", str(int(limit))]
    for k, v in (extra or {}).items():
        args += ["--dim", "%s=%d" % (k, v)]
    # about 2 log2(batch) plans, each as long as one plan may take
    return _planner._run_cli(args, g2, timeout=MAXIMIZE_TIMEOUT)


def max_batch(g2, budget, *, server=None, solver="auto", dims=None, limit=MAX_BATCH):
    """{"batch", "plan" (its summary and the full plan under "_plan"),
    "next": {"batch", "min_feasible_budget"}, "searched_by"} for a
    memplan.graph/2 with a batch dim at `budget` bytes; batch 0 when even
    batch 1 does not fit. dims: the values of the graph's other dims."""
    extra = {k: int(v) for k, v in (dims or {}).items() if k != "batch"}
    fits = _Fits(g2, budget, server, solver, extra)
    ans = None if server else _cli_maximize(g2, budget, solver, extra, limit)
    if ans is not None:
        best = int(ans.get("value") or 0)
        how = "memplan plan --maximize batch"
    else:
        best = search_max(fits, 1, limit)
        how = "bisection here over memplan plan"
    out = {"batch": best, "budget": int(budget), "searched_by": how}
    if ans is not None:
        # the CLI's answer carries the plan at the answer and the next
        # batch's least feasible budget: nothing to plan again
        if best:
            out["plan"] = _summary(ans["plan"])
            out["_plan"] = ans["plan"]
        nxt = ans.get("next")
        if nxt:
            out["next"] = {"batch": int(nxt["value"]), "feasible": False,
                           "min_feasible_budget": nxt.get("min_feasible_budget")}
    else:
        if best:
            plan = fits.plan(best)
            out["plan"] = _summary(plan)
            out["_plan"] = plan
        if best < limit:
            nxt = fits.plan(best + 1)
            least = nxt.get("min_feasible_budget")
            if least is None and not nxt.get("feasible"):
                least = _planner.plan(_dims.bind(g2, dict(extra, batch=best + 1)), 0, solver=solver,
                                      server=server).get("min_feasible_budget")
            out["next"] = {"batch": best + 1, "feasible": bool(nxt.get("feasible")),
                           "min_feasible_budget": least}
    info = _dims.forecast_info(g2, dict(extra, batch=max(1, best)))
    out["dims"], out["forecast"] = info["dims"], info["forecast"]
    return out


# ---- checking the answer's laws node by node ----------------------------

PROBE_ROUNDS = 8


def _exported_ws(exp, nid):
    """A node's workspace at each exported batch: [(batch, bytes)]."""
    out = []
    for p, g in sorted(exp.replays.items()):
        n = next(n for n in g["nodes"] if n["id"] == nid)
        out.append((p[0], int(n.get("workspace_bytes", 0))))
    return out


def raise_workspace(g2, exp, probed):
    """Raise the workspace law of every node that needed more, alone at a
    probed batch, than its law gives there: the new law is a bound at or
    above each of the node's measurements (exported and probed) and the
    old law (_laws.larger of the two). probed: {batch: {node id: bytes}}.
    Returns the warnings added (one per node raised); g2 is changed in
    place."""
    names = ["batch"]
    added = []
    by_id = {n["id"]: n for n in g2["nodes"]}
    for nid, node in by_id.items():
        pts = [(b, at[nid]) for b, at in sorted(probed.items()) if nid in at]
        law = _laws.from_json(node.get("workspace_bytes", 0), names)
        over = [(b, y, _laws.value(law, (b,))) for b, y in pts if y > _laws.value(law, (b,))]
        if not over:
            continue
        allp = sorted(dict(_exported_ws(exp, nid) + pts).items())
        s, c = _laws._envelope([x for x, _ in allp], [y for _, y in allp])
        s = math.ceil(s)
        c = max(math.ceil(c), -s)
        new, _ = _laws.larger(law, [(s, (1,)), (c, (0,))])
        node["workspace_bytes"] = _laws.to_json(new, names, bound=True, integer=True)
        b, y, was = over[0]
        added.append("node '%s': workspace_bytes needs more alone at batch=%d than its law says "
                     "(measured %d, law %d); bound used: %s"
                     % (nid, b, y, was, _laws.text(new, names)))
    if added:
        g2.setdefault("warnings", []).extend(added)
    return added


def max_batch_probed(model, example_inputs, exp, budget, *, server=None, solver="auto",
                     limit=MAX_BATCH, loss_fn=None, rounds=PROBE_ROUNDS):
    """max_batch on exp.graph, checked node by node: each node runs alone
    at the answer b and at b + 1 (_probe.py); where one needs more
    workspace than its law gives, the law is raised to a bound covering
    it (raise_workspace, named in the graph's warnings) and the search
    runs again, until the probes at the answer and the next batch all lie
    within the laws. exp.graph is left as it is; the answer's "probe"
    says which batches were probed, which nodes were raised, the rounds,
    whether it ended stable, and nodes that could not be probed."""
    from ._probe import probe
    if list(_dims.dims_of(exp.graph)) != ["batch"]:
        raise _dims.DimsError("memplan.torch: probing needs a graph whose one dim is batch")
    g2 = copy.deepcopy(dict(exp.graph))
    probed, raised, unprobed = {}, [], {}
    stable, r = False, 0
    for r in range(1, rounds + 1):
        out = max_batch(g2, budget, server=server, solver=solver, limit=limit)
        b = out["batch"]
        want = [x for x in (b, b + 1) if 1 <= x <= limit and x not in probed]
        if not want:
            stable = True
            break
        res = probe(model, example_inputs, exp, want, loss_fn=loss_fn)
        probed.update(res["at"])
        unprobed.update(res["unprobed"])
        added = raise_workspace(g2, exp, probed)
        raised += [w.split("'")[1] for w in added]
        if not added:
            stable = True
            break
    if not stable:  # the answer of the last laws, unchecked: "stable" says so
        out = max_batch(g2, budget, server=server, solver=solver, limit=limit)
    out["probe"] = {"batches": sorted(probed), "raised": sorted(set(raised)), "rounds": r,
                    "stable": stable, "unprobed": unprobed}
    out["_graph"] = g2
    return out


def measure_at(model, example_inputs, g2, plan, batch, loss_fn=None, reps=0, mode="recompute"):
    """Apply `plan` (made for `batch`) to `model` and measure one step on
    the example inputs resized to `batch`: {measured_peak_bytes,
    predicted_peak_bytes (memplan's prediction of the applied step),
    time_ms}."""
    from ._apply import apply
    from ._measure import measure
    inputs = _dims.inputs_at(as_tuple(example_inputs), {"batch": 0}, {"batch": int(batch)})
    graph = _dims.bind(g2, {"batch": int(batch)})
    applied = apply(model, plan, mode=mode)
    meas = measure(applied, inputs, loss_fn or default_loss, time_reps=reps)
    pred = predict_applied(graph, applied.mapping)
    return {"measured_peak_bytes": int(meas["peak_bytes"]),
            "predicted_peak_bytes": None if pred is None else int(pred[0]),
            "time_ms": round(meas["time_ms"], 3)}


def dumps(obj):
    return json.dumps({k: v for k, v in obj.items() if not k.startswith("_")}, indent=1)


# ---- the command line: python3 -m memplan.torch max-batch ----------------

_UNITS = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
          "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}


def parse_bytes(text):
    """Bytes from 123, 800MB, 2GiB, 1.5GB."""
    t = str(text).strip().lower().replace("_", "")
    num = t.rstrip("abcdefghijklmnopqrstuvwxyz")
    unit = t[len(num):]
    try:
        val = float(num)
    except ValueError:
        val = None
    if val is None or unit not in _UNITS or val < 0:
        raise ValueError("memplan.torch: --budget %r is not a size (bytes, or e.g. 800MB, 2GiB)"
                         % text)
    return int(val * _UNITS[unit])


def add_max_batch_parser(sub):
    p = sub.add_parser("max-batch", help="the largest batch whose plan fits a budget")
    p.add_argument("--model", required=True, help="torchvision:NAME or FILE.py:FUNC")
    p.add_argument("--budget", required=True, help="bytes, or a size: 800MB, 2GiB")
    p.add_argument("--export-batch", type=int, default=4,
                   help="export at batches up to this (default 4: at 2, 3, 4)")
    p.add_argument("--measure", action="store_true",
                   help="apply the plan at the answer and measure one step")
    p.add_argument("--image-size", type=int, default=64)
    p.add_argument("--reps", type=int, default=3, help="timing repetitions (median)")
    p.add_argument("--server", default=None, help="memplan daemon URL")
    p.add_argument("--solver", default="auto")
    p.add_argument("--limit", type=int, default=MAX_BATCH, help="largest batch to consider")
    p.add_argument("--threads", type=int, default=None,
                   help="torch's CPU threads (default: torch's own)")
    p.add_argument("--no-probe", action="store_true",
                   help="trust the laws: do not run each node alone at the answer")
    return p


def main_max_batch(args):
    import sys
    from .models import load
    try:
        budget = parse_bytes(args.budget)
        export_batches(args.export_batch)
        model, inputs = load(args.model, args.export_batch, args.image_size)
    except (ValueError, OSError, ImportError) as e:
        print(str(e), file=sys.stderr)
        return 2
    exp = export_forecast(model, inputs, args.export_batch, name=args.model, reps=args.reps)
    if args.no_probe:
        out = max_batch(exp.graph, budget, server=args.server, solver=args.solver,
                        limit=max(1, args.limit))
        g2 = exp.graph
    else:
        out = max_batch_probed(model, inputs, exp, budget, server=args.server,
                               solver=args.solver, limit=max(1, args.limit))
        g2 = out["_graph"]
    out = dict({"model": args.model, "exported_at": exp.graph["dims"]["batch"]["exported_at"]},
               **out)
    out["forecast"]["warnings"] = list(g2.get("warnings", []))
    if args.measure and out["batch"]:
        m = measure_at(model, inputs, g2, out["_plan"], out["batch"], reps=0)
        m["within_budget"] = m["measured_peak_bytes"] <= budget
        out["measured"] = m
    print(dumps(out))
    return 0
