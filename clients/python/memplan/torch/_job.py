"""_job.py - the public path of a training job: plan an exported graph
(plan, plain), predict what the applied step will measure (predict).

    graph = memplan.torch.export(model, inputs, loss_fn, optimizer)
    plan = memplan.torch.plan(graph, budget)             # or server=URL
    memplan.torch.predict(graph, plan)["peak_bytes"]     # what the step measures
    step = memplan.torch.apply(model, plan)

export() returns the graph as a dict that also carries the export's
details (ExportedGraph.export: the traced module, the optimizer step's
peak), so that predict() counts the whole training step.
"""

from . import _planner
from ._apply import plan_mapping
from ._predict import predict_applied


class ExportedGraph(dict):
    """A memplan.graph/1 dict (JSON-serialisable as it is) with `.export`,
    the Export it came from (None once copied with dict())."""
    export = None


def _split(graph):
    """(graph dict, Export or None) from an ExportedGraph, an Export or a
    plain graph dict."""
    exp = getattr(graph, "export", None)
    if exp is None and hasattr(graph, "graph") and hasattr(graph, "gm"):
        exp, graph = graph, graph.graph
    return graph, exp


def plan(graph, budget, *, server=None, solver="auto", dims=None, token=None, timeout=600.0):
    """memplan's plan for `graph` (export()'s answer, an Export or any
    graph dict) under `budget` bytes for the whole step: a dict with
    feasible, peak_bytes, time, schedule, ... and, when infeasible,
    min_feasible_budget (the least budget the applied step meets). From the
    daemon at `server` (with `token`), else the memplan CLI ($MEMPLAN_CLI,
    or memplan on PATH). dims binds a graph's symbolic dimensions
    ({"batch": 64}). Failures raise PlannerError or memplan's client
    errors."""
    g, _ = _split(graph)
    return _planner.plan(g, int(budget), solver=solver, server=server, timeout=timeout,
                         dims=dims, token=token)


def plain(graph, *, server=None, dims=None, token=None, timeout=600.0):
    """The planner's answer for plain backpropagation (nothing recomputed,
    every value freed after its last use): its peak_bytes is what the
    unmodified training step peaks at (forward and backward; see predict
    for the optimizer's step), const_bytes what is resident."""
    g, _ = _split(graph)
    return _planner.plain(g, server=server, timeout=timeout, dims=dims, token=token)


def predict(graph, plan, *, mode="recompute"):
    """What memplan predicts the step will measure once `plan` is applied
    with memplan.torch.apply(model, plan, mode=mode), as a dict:
    peak_bytes (the whole training step: forward and backward, or the
    optimizer's step when export was given an optimizer and that is
    higher), backward_peak_bytes (forward and backward alone), time (the
    plan's forward and backward, in the graph's time unit) and
    predicted_by ("plan": the planner's own figures; "simulator": memplan
    simulate on the schedule torch.utils.checkpoint runs).

    mode "recompute" runs the plan's own schedule, so the prediction is the
    plan's figures and needs neither the model nor the CLI. mode
    "checkpoint" needs the export of this process (export()'s answer) and
    the local CLI."""
    g, exp = _split(graph)
    if mode == "recompute":
        peak, t = plan["peak_bytes"], plan["time"]["total"]
        by = "plan"
    elif mode == "checkpoint":
        if exp is None:
            raise ValueError("memplan.torch.predict: mode 'checkpoint' needs the graph that "
                             "memplan.torch.export returned in this process")
        peak, t, _ = predict_applied(g, plan_mapping(exp.gm, plan, exp.group_of, g), plan)
        by = "simulator"
    else:
        raise ValueError("memplan.torch.predict: mode must be 'recompute' or 'checkpoint'")
    whole = peak
    if exp is not None:
        from ._export import step_peak
        whole = step_peak(exp, peak)
    return {"peak_bytes": int(whole), "backward_peak_bytes": int(peak), "time": t,
            "predicted_by": by}

