"""memplan.torch - plan the memory of a PyTorch training step with memplan.

export() turns a model and example inputs into a memplan.graph/1 graph
measured on this device; apply() runs a memplan plan on the model,
recomputing exactly the plan's nodes when its schedule says (or, with
mode="checkpoint", with torch.utils.checkpoint); fit_plan() picks the plan to apply at a budget by
memplan's prediction of what torch will run; measure_peak() measures the
real peak of one training step, counting the same things the prediction
counts. export(..., dims="batch") writes a memplan.graph/2 whose sizes
and times are laws in the batch (docs/forecast.md); bind() turns it into
the memplan.graph/1 at a batch. plan(), plain() and predict() are a
training job's path from the exported graph to the plan it applies
(clients/python/README.md).
"""

from ._trace import TraceError, trace
from ._export import default_loss, export, export_full, step_peak
from ._apply import (Applied, AppliedRecompute, PlanError, apply, honest_schedule,
                     plan_mapping, recompute_mapping)
from ._recompute import RecomputeError
from ._measure import measure, measure_peak
from ._fit import fit_plan
from ._dims import bind
from ._laws import DimsError
from ._job import ExportedGraph, plain, plan, predict
from ._planner import PlannerError

__all__ = ["TraceError", "trace", "export", "export_full", "default_loss", "step_peak", "Applied",
           "AppliedRecompute", "PlanError", "RecomputeError", "apply", "fit_plan",
           "honest_schedule", "plan_mapping", "recompute_mapping", "measure", "measure_peak",
           "bind", "DimsError", "ExportedGraph", "PlannerError", "plain", "plan", "predict"]
