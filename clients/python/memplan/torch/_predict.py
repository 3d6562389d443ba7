"""_predict.py - memplan's prediction of a plan as torch runs it.

Mode "recompute" (the default applier) runs the plan's own schedule, so
the prediction is memplan's simulator on that schedule (the planner's own
figure) plus the RNG states the applier holds for recomputed random nodes
(dropout), each from the node's forward to its segment's recomputation
(predict_applied counts those alive at the simulated peak).

Mode "checkpoint": torch.utils.checkpoint re-runs a whole region (its kept outputs and the
nodes the plan would not recompute, whose saved tensors it drops in the
forward pass) and keeps each region's CPU RNG state from the region's
forward until its backward. The prediction is memplan's simulator on the
schedule torch really runs (_apply.honest_schedule) plus the RNG states
alive at the simulated peak; region nodes whose value stays alive are
re-run by torch all the same, which the schedule cannot say (see
predict_applied). It needs the local CLI (the daemon has no
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


def _rerun_in_place(mapping, sched):
    """Region nodes the honest schedule does not recompute: their value is
    still alive, but torch re-runs them with their region, so what they
    save (saved_bytes) is dropped in the forward pass and made again at
    the recomputation, not held from forward to backward."""
    redone = {s["node"] for s in sched["steps"] if s["op"] == "recompute"}
    return {v for b in mapping.blocks for v in b["region"] if v not in redone}


def _rng_states_alive(steps, random, step):
    """RNG states mode "recompute" holds at schedule step `step`: one per
    recomputed random node, from its compute step to the first recompute
    step of the segment that recomputes it."""
    computed = {}
    alive = 0
    seg_start = None
    for i, s in enumerate(steps):
        op, v = s["op"], s["node"]
        if op == "compute":
            computed.setdefault(v, i)
        elif op == "recompute":
            if seg_start is None:
                seg_start = i
            if v in random and computed.get(v, step + 1) <= step < seg_start:
                alive += 1
        elif op == "backward":
            seg_start = None
    return alive


def _simulate(graph, sched):
    """The simulator's report on sched, None without a local CLI."""
    try:
        rep = _planner.simulate(graph, sched)
    except _planner.PlannerError:
        return None
    if not rep.get("valid", False):
        raise _planner.PlannerError("the applied schedule is invalid in memplan's model: %s"
                                    % rep.get("error", rep))
    return rep


def predict_applied(graph, mapping):
    """memplan's prediction of the applied step: (peak bytes, time, report)
    from the simulator on the honest schedule, or None without a local CLI.
    Mode "recompute": the plan's schedule plus the RNG states alive at its
    peak. Mode "checkpoint": nodes torch re-runs although their value is
    alive (_rerun_in_place) count without their saved_bytes, and their
    forward time is added."""
    sched = honest_schedule(mapping, graph)
    if mapping.mode == "recompute":
        rep = _simulate(graph, sched)
        if rep is None:
            return None
        n = _rng_states_alive(sched["steps"], mapping.random, rep["peak_step"])
        return rep["peak_bytes"] + _rng_bytes() * n, rep["time"]["total"], rep
    again = _rerun_in_place(mapping, sched)
    if any(n.get("saved_bytes") for n in graph["nodes"] if n["id"] in again):
        graph = dict(graph)
        graph["nodes"] = [dict(n, saved_bytes=0) if n["id"] in again and n.get("saved_bytes")
                          else n for n in graph["nodes"]]
    rep = _simulate(graph, sched)
    if rep is None:
        return None
    peak = rep["peak_bytes"] + _rng_bytes() * _alive_regions(sched, mapping, rep["peak_step"])
    extra = sum(n.get("time", 0.0) for n in graph["nodes"] if n["id"] in again)
    return peak, rep["time"]["total"] + extra, rep
