"""memplan.torch - plan the memory of a PyTorch training step with memplan.

export() turns a model and example inputs into a memplan.graph/1 graph
measured on this device; apply() runs a memplan plan on the model with
torch.utils.checkpoint; fit_plan() picks the plan to apply at a budget by
memplan's prediction of what torch will run; measure_peak() measures the
real peak of one training step, counting the same things the prediction
counts.
"""

from ._trace import TraceError, trace
from ._export import default_loss, export, export_full, step_peak
from ._apply import Applied, PlanError, apply, honest_schedule, plan_mapping
from ._measure import measure, measure_peak
from ._fit import fit_plan

__all__ = ["TraceError", "trace", "export", "export_full", "default_loss", "step_peak", "Applied",
           "PlanError", "apply", "fit_plan", "honest_schedule", "plan_mapping", "measure",
           "measure_peak"]
