"""bench_fidelity.py - the fidelity table: memplan's predicted peak and time
against the measured ones, for plain backpropagation and for plans applied
at 40%, 60% and 80% of plain backpropagation's dynamic peak, on ResNet-18,
MobileNet-V2, the small transformer with dropout, DenseNet-121 and
EfficientNet-B0; and a monotonicity check (a smaller budget never measures a
higher peak).

  /usr/bin/python3 clients/python/bench_fidelity.py [--json OUT] [--models a,b] [--reps N]

The planner is $MEMPLAN_CLI (default build/memplan). Budgets are constant
memory + F x the dynamic part of plain backpropagation's predicted peak.
Rows "80%" apply the planner's answer at the budget (direct), rows "80%f"
the plan chosen by fitting (memplan/torch/_fit.py). "pred" is memplan's
simulator on the schedule torch really runs, "plan" the planner's own
answer; errors are over the dynamic part (above resident parameters,
gradients and inputs), (predicted - measured) / measured.
"""

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402

from memplan.torch.fidelity import fidelity_many  # noqa: E402
from memplan.torch.models import torchvision_model, transformer  # noqa: E402

MODELS = {
    "resnet18": (lambda b: torchvision_model("resnet18", b), 32),
    "mobilenet_v2": (lambda b: torchvision_model("mobilenet_v2", b), 16),
    "transformer": (lambda b: transformer(b, seq=64, dim=128, layers=4), 16),
    "densenet121": (lambda b: torchvision_model("densenet121", b), 8),
    "efficientnet_b0": (lambda b: torchvision_model("efficientnet_b0", b), 16),
}
FRACTIONS = (0.4, 0.6, 0.8)


def _mb(b):
    return "%.2f" % (b / 1e6)


def _line(name, batch, tag, q, const, grads):
    return ("%-18s %5d %6s %9s %9s %9s %9s %8.3f %8.3f %9.1f %9.1f %5s"
            % (name, batch, tag, _mb(q["plan_peak_bytes"]), _mb(q["predicted_peak_bytes"]),
               _mb(q["measured_peak_bytes"]), _mb(q["measured_peak_bytes"] - const),
               q["dynamic_error_pct"], q["plan_dynamic_error_pct"], q["predicted_time_ms"],
               q["measured_time_ms"], "equal" if grads else "DIFF"))


def _monotone(peaks):
    return all(a >= b for a, b in zip(peaks, peaks[1:]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    torch.set_num_threads(1)
    rows, worst = [], 0.0
    mono = {"direct": True, "fitted": True}
    hdr = ("%-18s %5s %6s %9s %9s %9s %9s %8s %8s %9s %9s %5s"
           % ("model", "batch", "budget", "plan MB", "pred MB", "meas MB", "dyn MB",
              "err%", "plan%", "pred ms", "meas ms", "grads"))
    print(hdr)
    print("-" * len(hdr))
    for name in args.models.split(","):
        make, batch = MODELS[name]
        model, inputs = make(batch)
        t0 = time.time()
        recs = fidelity_many(model, inputs, FRACTIONS, name=name, batch=batch, reps=args.reps)
        rows.extend(recs)
        const = recs[0]["const_bytes"]
        p = recs[0]["plain"]
        worst = max(worst, abs(p["dynamic_error_pct"]))
        print("%-18s %5d %6s %9s %9s %9s %9s %8.3f %8s %9.1f %9.1f %5s"
              % (name, batch, "plain", "-", _mb(p["predicted_peak_bytes"]),
                 _mb(p["measured_peak_bytes"]), _mb(p["measured_peak_bytes"] - const),
                 p["dynamic_error_pct"], "-", p["predicted_time_ms"], p["measured_time_ms"], "-"))
        peaks = {"direct": [p["measured_peak_bytes"]], "fitted": [p["measured_peak_bytes"]]}
        for r in reversed(recs):  # 80%, 60%, 40%
            pct = round(100 * r["budget_fraction"])
            for kind, q in (("direct", r["direct"]), ("fitted", r["planned"])):
                tag = "%d%%%s" % (pct, "" if kind == "direct" else "f")
                if q is None:
                    print("%-18s %5d %6s infeasible (least feasible budget %s MB)"
                          % (name, batch, tag, _mb(r.get("min_feasible_budget") or 0)))
                    continue
                worst = max(worst, abs(q["dynamic_error_pct"]))
                peaks[kind].append(q["measured_peak_bytes"])
                print(_line(name, batch, tag, q, const, r["grads_match"]))
        for kind in mono:
            mono[kind] &= _monotone(peaks[kind])
        print("%-18s monotone: direct %s, fitted %s   (%.0f s)"
              % ("", "yes" if _monotone(peaks["direct"]) else "NO",
                 "yes" if _monotone(peaks["fitted"]) else "NO", time.time() - t0))
    print("worst |dynamic error| of the predictions: %.3f%%; monotone on every model: "
          "direct plans %s, fitted plans %s" % (worst, "yes" if mono["direct"] else "NO",
                                               "yes" if mono["fitted"] else "NO"))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0 if mono["fitted"] else 1


if __name__ == "__main__":
    sys.exit(main())
