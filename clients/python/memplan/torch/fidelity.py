"""fidelity.py - how well memplan predicts a real PyTorch training step.

For one model and batch: export the graph, plan plain backpropagation
(solver none) and a recomputation plan at a budget, apply the plan, and
compare each prediction with the measured step (peak memory and time) and
the applied model's outputs and gradients with the original's.

Budgets. Resident memory (parameters, gradients, inputs) cannot be planned
away, so a budget fraction F means constant memory plus F times the
dynamic part of plain backpropagation's predicted peak.

Two predictions for the applied plan. `plan_peak_bytes` is the planner's
own answer. `predicted_peak_bytes` is memplan's simulator on the schedule
torch really runs plus the RNG states the applier holds (_predict.py): the
figure the measurement is compared with. With the default applier (mode
"recompute") that schedule is the plan's own, so the two differ only by
those RNG states. With mode "checkpoint", torch.utils.checkpoint re-runs a
whole region (its kept outputs and the nodes the plan would not recompute,
whose saved tensors it drops in the forward pass) and keeps each region's
RNG state until the region's backward, and the two differ more. Errors are
(predicted - measured) / measured in percent, over the whole step
(`error_pct`) and over the part above resident memory
(`dynamic_error_pct`).

Which plan is applied. `direct` is the planner's answer at the budget.
`planned` is the plan chosen by fitting (_fit.py): among the planner's answers at a grid of
budgets, the fastest whose applied schedule fits the budget in memplan's
simulator. Both are applied, measured and checked for equal gradients:
`grads_match` says whether outputs and parameter gradients are equal bit
for bit, each row's `grad_max_rel_diff` the largest relative difference of
a parameter gradient (max |a - b| / max |a| per parameter; 0.0 when equal)
and `grads_exact_expected` whether the applier promised bit-equality
(AppliedRecompute.grads_exact: not when the plan reorders the forward pass
around a value read by three or more ops); the record's
`grad_max_rel_diff` is the largest of its rows'.
"""

import json

import torch

from . import _fit, _planner
from ._apply import apply
from ._export import as_tuple, default_loss, export_full, preserved
from ._mem import tensors_in
from ._measure import measure
from ._predict import predict_applied


def _pct(pred, meas):
    if not meas:
        return None
    return round(100.0 * (pred - meas) / meas, 3) + 0.0  # no -0.0


def _outputs_and_grads(module, params, inputs, loss_fn, seed=1234):
    for p in params:
        p.grad = None
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        out = module(*inputs)
        loss = loss_fn(out)
        loss.backward()
    outs = [t.detach().clone() for t in tensors_in(out)]
    grads = [None if p.grad is None else p.grad.clone() for p in params]
    for p in params:
        p.grad = None
    return outs, grads


def grad_difference(model, applied, inputs, loss_fn=None):
    """(outputs equal bit for bit, the largest relative difference of a
    parameter gradient: max |a - b| / max |a| over each parameter, 0.0 when
    all are equal), same RNG seed for both."""
    loss_fn = loss_fn or default_loss
    inputs = as_tuple(inputs)
    params = list(model.parameters())
    with preserved(model):
        ro, rg = _outputs_and_grads(model, params, inputs, loss_fn)
        ao, ag = _outputs_and_grads(applied, params, inputs, loss_fn)
    same_out = len(ro) == len(ao) and all(torch.equal(a, b) for a, b in zip(ro, ao))
    worst = 0.0
    for a, b in zip(rg, ag):
        if (a is None) != (b is None):
            return same_out, float("inf")
        if a is None or torch.equal(a, b):
            continue
        scale = a.abs().max().item()
        d = (a - b).abs().max().item()
        if d != d or not scale:  # a NaN, or a gradient that was all zeros
            return same_out, float("inf")
        worst = max(worst, d / scale)
    return same_out, worst


def grads_match(model, applied, inputs, loss_fn=None):
    """Whether the applied module's outputs and parameter gradients equal
    the original model's bit for bit (same RNG seed for both)."""
    same_out, worst = grad_difference(model, applied, inputs, loss_fn)
    return same_out and worst == 0.0


def _row(pred_peak, pred_time, meas, const):
    dyn_pred = pred_peak - const
    return {"predicted_peak_bytes": int(pred_peak), "measured_peak_bytes": int(meas["peak_bytes"]),
            "error_pct": _pct(pred_peak, meas["peak_bytes"]),
            "dynamic_error_pct": _pct(dyn_pred, meas["dynamic_peak_bytes"]),
            "predicted_time_ms": round(pred_time, 3), "measured_time_ms": round(meas["time_ms"], 3),
            **_reserved(pred_peak, meas)}


def _reserved(pred_peak, meas):
    """On CUDA: what the caching allocator reserved at its peak, against the
    prediction (which counts allocated bytes)."""
    if "reserved_peak_bytes" not in meas:
        return {}
    return {"measured_reserved_bytes": int(meas["reserved_peak_bytes"]),
            "reserved_error_pct": _pct(pred_peak, meas["reserved_peak_bytes"])}


def fidelity_many(model, example_inputs, fractions, *, name=None, batch=None, loss_fn=None,
                  server=None, solver="auto", reps=3, fit=True, mode="recompute", exp=None,
                  graph=None):
    """Fidelity records for several budget fractions of one model, sharing
    the export, the plain measurement and the fitting candidates.

    `direct`: the planner's plan at the budget, applied. `planned`: the plan
    applied after fitting (see _fit.py; the direct plan when fit is False
    or there is no local simulator). When the budget is infeasible,
    `at_min` is the planner's plan at the least feasible budget it reports,
    applied (and `grads_match_at_min`). `grads_match` is the applied
    plan's (fitted), `grads_match_direct` the direct one's. mode: the
    applier's (memplan.torch.apply). exp, graph: an export of this model
    made already and the graph to plan (default: exp.graph), e.g. a
    forecast bound at this batch (_forecast.py)."""
    inputs = as_tuple(example_inputs)
    exp = exp or export_full(model, inputs, loss_fn, reps=reps)
    graph = graph or exp.graph
    plain = _planner.plain(graph, server=server)
    const = plain["const_bytes"]
    meas_plain = measure(exp.gm, inputs, loss_fn, time_reps=reps)
    plain_row = _row(plain["peak_bytes"], plain["time"]["total"], meas_plain, const)
    budgets = [int(const + f * (plain["peak_bytes"] - const)) for f in fractions]
    cands = []
    if fit:
        asked = _fit.grid(graph, plain["peak_bytes"], server=server, solver=solver) + budgets
        cands = _fit.candidates(graph, exp.gm, exp.group_of, predict_applied, asked, server,
                                solver, mode, exp.random_fx, exp.aux_of)
    done = {}  # schedule -> (row, grads_match), each plan applied and measured once
    out = []
    for f, budget in zip(fractions, budgets):
        rec = {"model": name or type(model).__name__, "batch": batch, "budget": budget,
               "mode": mode,
               "budget_fraction": f, "const_bytes": const, "plain": dict(plain_row)}
        plan = _planner.plan(graph, budget, solver=solver, server=server)
        rec["solver_used"] = plan.get("solver_used")
        rec["feasible"] = bool(plan.get("feasible"))
        rec["direct"] = None
        if plan.get("feasible"):
            rec["direct"], gm_ok = _applied_row(model, inputs, graph, plan, budget, const, loss_fn,
                                                reps, done, mode)
            rec["grads_match"] = rec["grads_match_direct"] = gm_ok
        else:
            rec["min_feasible_budget"] = plan.get("min_feasible_budget")
            rec["grads_match"] = None
            least = rec["min_feasible_budget"]
            pmin = _planner.plan(graph, least, solver=solver, server=server) if least else {}
            if pmin.get("feasible"):  # the nearest budget that works, measured too
                rec["at_min"], rec["grads_match_at_min"] = _applied_row(
                    model, inputs, graph, pmin, least, const, loss_fn, reps, done, mode)
        chosen = _fit.choose(cands, budget)
        if chosen is None:
            rec["planned"] = rec["direct"]
        else:
            rec["planned"], rec["grads_match"] = _applied_row(model, inputs, graph, chosen.plan,
                                                              chosen.asked, const, loss_fn, reps,
                                                              done, mode)
            rec["feasible"] = True
        rows = [rec[k] for k in ("direct", "planned", "at_min") if rec.get(k)]
        rec["grad_max_rel_diff"] = max((r["grad_max_rel_diff"] for r in rows), default=None)
        out.append(rec)
    return out


def _applied_row(model, inputs, graph, plan, asked, const, loss_fn, reps, done, mode):
    key = json.dumps(plan["schedule"])
    if key in done:
        row, ok = done[key]
        return dict(row), ok
    applied = apply(model, plan, mode=mode)
    meas = measure(applied, inputs, loss_fn, time_reps=reps)
    pred = predict_applied(graph, applied.mapping, plan)
    row = _row(pred[0], pred[1], meas, const)
    row["predicted_by"] = "plan" if mode == "recompute" else "applied schedule"
    row["plan_budget"] = int(asked)
    row["plan_peak_bytes"] = int(plan["peak_bytes"])
    row["plan_error_pct"] = _pct(plan["peak_bytes"], meas["peak_bytes"])
    row["plan_dynamic_error_pct"] = _pct(plan["peak_bytes"] - const, meas["dynamic_peak_bytes"])
    row["plan_time_ms"] = round(plan["time"]["total"], 3)
    row["segments"] = plan.get("segments")
    row["checkpointed_regions"] = len(applied.regions)
    row["recomputed"] = len(plan.get("recomputed", []))
    same_out, worst = grad_difference(model, applied, inputs, loss_fn)
    ok = same_out and worst == 0.0
    row["grad_max_rel_diff"] = worst
    if hasattr(applied, "grads_exact"):
        row["grads_exact_expected"] = applied.grads_exact
    done[key] = (row, ok)
    return dict(row), ok


def fidelity(model, example_inputs, budget_fraction=0.6, **kw):
    """The fidelity record (a dict, see the module comment) for one model
    at one budget fraction."""
    return fidelity_many(model, example_inputs, [budget_fraction], **kw)[0]
