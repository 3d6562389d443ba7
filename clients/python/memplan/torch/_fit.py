"""_fit.py - choosing the plan to apply when torch's checkpointing and
memplan's schedule disagree.

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
"""

import json

from . import _planner
from ._apply import plan_mapping


class Candidate:
    def __init__(self, asked, plan, mapping, peak, time):
        self.asked, self.plan, self.mapping = asked, plan, mapping
        self.peak, self.time = peak, time


def candidates(graph, gm, group_of, predict, budgets, server=None, solver="auto"):
    """Candidates from the planner's answers at `budgets` (infeasible ones
    and repeats dropped). predict(graph, mapping) -> (peak, time, report)."""
    out, seen = [], set()
    for b in sorted(set(int(x) for x in budgets)):
        p = _planner.plan(graph, b, solver=solver, server=server)
        if not p.get("feasible") or "schedule" not in p:
            continue
        key = json.dumps(p["schedule"], sort_keys=True)
        if key in seen:
            continue
        seen.add(key)
        m = plan_mapping(gm, p, group_of, graph)
        pred = predict(graph, m)
        if pred is None:
            continue
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
