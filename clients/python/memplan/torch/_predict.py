"""_predict.py - memplan's prediction of a plan as torch runs it.

Mode "recompute" (the default applier) runs the plan's own schedule, so
the prediction is the planner's own figure for it: the simulator on that
schedule. What the applier holds beyond the values and what ops save is in
the graph export writes (the RNG states of recomputed random nodes, the
loss and its seed gradient), so nothing is added.

Mode "checkpoint": torch.utils.checkpoint re-runs a whole region (its kept outputs and the
nodes the plan would not recompute, whose saved tensors it drops in the
forward pass) and keeps each region's CPU RNG state from the region's
forward until its backward. The prediction is memplan's simulator on the
schedule torch really runs (_apply.honest_schedule) plus the RNG states
alive at the simulated peak (export's RNGState nodes, which are for mode
"recompute", count nothing here); region nodes whose value stays alive are
re-run by torch all the same, which the schedule cannot say (see
predict_applied). It needs the local CLI (the daemon has no
route that simulates a given schedule).

Errors are errors: a CLI that fails raises PlannerError.
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


def _simulate(graph, sched):
    """The simulator's report on sched (the local CLI)."""
    rep = _planner.simulate(graph, sched)
    if not rep.get("valid", False):
        raise _planner.PlannerError("the applied schedule is invalid in memplan's model: %s"
                                    % rep.get("error", rep))
    return rep


def _without_rng_nodes(graph):
    """A copy of graph without export's RNGState nodes (mode "recompute"'s
    RNG states; torch.utils.checkpoint keeps its own, one per region)."""
    rng = {n["id"] for n in graph["nodes"] if n.get("op") == "RNGState"}
    g = dict(graph)
    g["nodes"] = [dict(n, inputs=[i for i in n["inputs"] if i not in rng])
                  if rng & set(n.get("inputs", ())) else n
                  for n in graph["nodes"] if n["id"] not in rng]
    return g


def predict_applied(graph, mapping, plan=None):
    """memplan's prediction of the applied step's forward and backward:
    (peak bytes, time, report). Mode "recompute": the plan's own figures
    when `plan` (the planner's answer for this graph) is given, else the
    simulator on the plan's schedule. Mode "checkpoint": the simulator on
    the honest schedule, where nodes torch re-runs although their value is
    alive (_rerun_in_place) count without their saved_bytes and their
    forward time is added, plus the RNG states alive at the peak."""
    if mapping.mode == "recompute":
        if plan is not None and "peak_bytes" in plan:
            return plan["peak_bytes"], plan["time"]["total"], plan
        rep = _simulate(graph, {"format": "memplan.schedule/1", "steps": list(mapping.schedule)})
        return rep["peak_bytes"], rep["time"]["total"], rep
    graph = _without_rng_nodes(graph)
    sched = honest_schedule(mapping, graph)
    again = _rerun_in_place(mapping, sched)
    graph["nodes"] = [dict(n, saved_bytes=0) if n["id"] in again and n.get("saved_bytes") else n
                      for n in graph["nodes"]]
    rep = _simulate(graph, sched)
    peak = rep["peak_bytes"] + _rng_bytes() * _alive_regions(sched, mapping, rep["peak_step"])
    extra = sum(n.get("time", 0.0) for n in graph["nodes"] if n["id"] in again)
    return peak, rep["time"]["total"] + extra, rep
