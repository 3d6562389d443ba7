"""_predict.py - memplan's prediction of a plan as torch runs it.

torch.utils.checkpoint re-runs a whole region (its kept outputs and the
nodes the plan would not recompute, whose saved tensors it drops in the
forward pass) and keeps each region's CPU RNG state from the region's
forward until its backward. The prediction is memplan's simulator on the
schedule torch really runs (_apply.honest_schedule) plus the RNG states
alive at the simulated peak. It needs the local CLI (the daemon has no
route that simulates a given schedule).
"""

import torch

from . import _planner
from ._apply import honest_schedule


def _rng_bytes():
    return torch.get_rng_state().numel()


def _alive_regions(schedule, mapping, step):
    """Regions whose RNG state torch still holds at schedule step `step`."""
    first, last = {}, {}
    where = {}
    for bi, b in enumerate(mapping.blocks):
        for v in b["region"]:
            where[v] = bi
    for i, s in enumerate(schedule["steps"]):
        bi = where.get(s["node"])
        if bi is None:
            continue
        if s["op"] == "compute":
            first.setdefault(bi, i)
        elif s["op"] == "backward":
            last[bi] = i
    return sum(1 for bi in first if first[bi] <= step <= last.get(bi, step))


def predict_applied(graph, mapping):
    """memplan's prediction of the applied step: (peak bytes, time, report)
    from the simulator on the honest schedule, or None without a local CLI."""
    sched = honest_schedule(mapping, graph)
    try:
        rep = _planner.simulate(graph, sched)
    except _planner.PlannerError:
        return None
    if not rep.get("valid", False):
        raise _planner.PlannerError("the applied schedule is invalid in memplan's model: %s"
                                    % rep.get("error", rep))
    peak = rep["peak_bytes"] + _rng_bytes() * _alive_regions(sched, mapping, rep["peak_step"])
    return peak, rep["time"]["total"], rep
