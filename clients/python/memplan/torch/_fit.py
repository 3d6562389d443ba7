"""_fit.py - choosing the plan to apply by memplan's prediction of what
torch runs.

With the default applier (mode "recompute") torch runs the plan's own
schedule, so the prediction of each candidate is the planner's figure (plus
a few RNG states) and fitting only picks the fastest candidate that fits;
the planner's answer at the budget itself is monotone already. Fitting
matters for mode "checkpoint":

memplan's planner assumes its own schedule: only the values a segment's
backward needs are recomputed, and a node that is not recomputed keeps what
it saved in the forward pass. torch.utils.checkpoint re-runs whole regions
and drops everything the region saved, so the applied step often peaks
lower than the plan says (by up to 40% of the dynamic memory on
EfficientNet). A plan asked for at a larger budget may then fit the real
budget with less recomputation, and plans asked for at two budgets may
measure in the wrong order.

Fitting evaluates a fixed set of candidate plans (the planner's answers at
a grid of budgets between the least feasible one and plain
backpropagation's peak) with memplan's simulator on the schedule torch
really runs (fidelity.predict_applied), and for a budget picks the
candidate of least predicted time whose predicted peak fits. Because the
candidate set is the same for every budget, a smaller budget never gets a
plan with a higher predicted peak.

fit_plan() is the same choice for a training job: the plan to apply to an
exported model at one budget.
"""

import json

from . import _planner
from ._apply import _EXPORTS, plan_mapping, recompute_mapping
from ._export import step_peak
from ._predict import predict_applied


class Candidate:
    def __init__(self, asked, plan, mapping, peak, time):
        self.asked, self.plan, self.mapping = asked, plan, mapping
        self.peak, self.time = peak, time


def mapping_for(gm, plan, group_of, graph, mode="recompute", random_fx=(), aux_of=None):
    """The Mapping memplan.torch.apply builds for `plan` in `mode`."""
    if mode == "recompute":
        return recompute_mapping(gm, plan, group_of, random_fx, aux_of)
    return plan_mapping(gm, plan, group_of, graph)


def candidates(graph, gm, group_of, predict, budgets, server=None, solver="auto",
               mode="recompute", random_fx=(), aux_of=None):
    """Candidates from the planner's answers at `budgets` (infeasible ones
    and repeats dropped), for the applier's `mode`. predict(graph, mapping,
    plan) -> (peak, time, report)."""
    out, seen = [], set()
    for b in sorted(set(int(x) for x in budgets)):
        p = _planner.plan(graph, b, solver=solver, server=server)
        if not p.get("feasible") or "schedule" not in p:
            continue
        key = json.dumps(p["schedule"], sort_keys=True)
        if key in seen:
            continue
        seen.add(key)
        m = mapping_for(gm, p, group_of, graph, mode, random_fx, aux_of)
        pred = predict(graph, m, p)
        out.append(Candidate(b, p, m, pred[0], pred[1]))
    return out


def grid(graph, plain_peak, n=12, server=None, solver="auto"):
    """n budgets from the least feasible one (as the planner reports it) to
    plain backpropagation's peak."""
    p = _planner.plan(graph, 0, solver=solver, server=server)
    lo = p.get("min_feasible_budget") or p.get("const_bytes", 0)
    if lo >= plain_peak:
        return [plain_peak]
    return [lo + (plain_peak - lo) * i // (n - 1) for i in range(n)]


def choose(cands, budget):
    """The candidate of least predicted time whose predicted peak fits
    `budget` (ties: the lower peak), or None."""
    fit = [c for c in cands if c.peak <= budget]
    if not fit:
        return None
    return min(fit, key=lambda c: (c.time, c.peak))


def fit_plan(model, budget, *, graph=None, server=None, solver="auto", points=12,
             mode="recompute"):
    """The plan to apply to `model` (exported with memplan.torch.export in
    this process) under `budget` bytes, chosen by what torch will run: among
    the planner's answers at `points` budgets from the least feasible one to
    plain backpropagation's peak, and at `budget` itself, the fastest whose
    applied step (and the optimizer's step, when export was given one)
    memplan predicts within `budget`. The plan dict gains
    predicted_peak_bytes, predicted_time and asked_budget (the budget the
    planner was given); None when no answer fits (a planner that fails
    raises PlannerError). Plans come from the daemon at `server` (then
    mode "recompute" needs no CLI: its prediction is the plan's own
    figure) or the local CLI; mode "checkpoint" predicts with the local
    CLI's simulator. mode: the applier the plan is for
    (memplan.torch.apply's mode)."""
    exp = _EXPORTS.get(id(model))
    if exp is None or exp.model_ref() is not model:
        raise ValueError("memplan.torch.fit_plan: export this model first (memplan.torch.export)")
    graph = graph or exp.graph
    budget = int(budget)
    plain = _planner.plain(graph, server=server)
    asked = grid(graph, plain["peak_bytes"], n=points, server=server, solver=solver) + [budget]
    cands = candidates(graph, exp.gm, exp.group_of, predict_applied, asked, server, solver,
                       mode, exp.random_fx, exp.aux_of)
    for c in cands:  # the optimizer's step may top the backward pass
        c.peak = step_peak(exp, c.peak)
    best = choose(cands, budget)
    if best is None:
        return None
    plan = dict(best.plan)
    plan.update(predicted_peak_bytes=int(best.peak), predicted_time=best.time,
                asked_budget=best.asked)
    return plan
