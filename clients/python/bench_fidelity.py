"""bench_fidelity.py - the fidelity table: memplan's predicted peak and time
against the measured ones, for plain backpropagation and for plans applied
at 40%, 60% and 80% of plain backpropagation's dynamic peak, on ResNet-18,
MobileNet-V2, the small transformer with dropout, DenseNet-121 and
EfficientNet-B0; and a monotonicity check (a smaller budget never measures a
higher peak).

  /usr/bin/python3 clients/python/bench_fidelity.py [--json OUT] [--markdown]
                                                    [--models a,b] [--reps N]
                                                    [--mode recompute|checkpoint]
                                                    [--forecast [--export-batch K]
                                                     [--batch N] [--fractions F,..]]
                                                    [--device cuda]

--forecast gives the forecast rows: each model exported at batches no
larger than K (default 4: at 2, 3, 4; memplan.graph/2, laws in the batch)
and planned at N (default 16) from the laws, then measured at N; the batch
column reads "16<2-4". The three models beyond the five above
(squeezenet1_1, mnasnet0_5, regnet_x_400mf) are in the default set of
--forecast. On one CPU thread torch 1.13 runs 1x1 convolutions with another kernel
from batch 16 on (more workspace) than below it, so a forecast from
batches 2-4 to 16 would compare two different programs: the forecast
rows run on 2 threads (--threads), where torch uses one kernel at every
batch (the export warns about it on one thread). --device cuda runs everything on the GPU, plans and predicts with the
simulator's pytorch-cuda allocator (allocations rounded to 512-byte
blocks), and adds, per row, what the caching allocator reserved at its
peak (max_memory_reserved) against the same prediction ("res MB",
"res%"); without CUDA it says so and exits 0.

The planner is $MEMPLAN_CLI (default build/memplan). Budgets are constant
memory + F x the dynamic part of plain backpropagation's predicted peak
(constant memory: parameters, gradients, inputs; no plan goes below it).
Rows "80%" apply the planner's answer at the budget (direct), rows "80%f"
the plan chosen by fitting (memplan/torch/_fit.py); when a budget is
infeasible, a "min" row applies the planner's answer at the least feasible
budget it reports (its fraction in the same terms). --mode is the applier
(memplan.torch.apply's mode; default recompute, which runs the plan's own
schedule). "pred" is memplan's simulator on the schedule torch really runs
plus the RNG states the applier holds, "plan" the planner's own figure for
its own schedule. "err%"
is (pred - measured) / measured over the whole step's peak, "dyn%" the same
over the part above constant memory, "plan%" the planner's figure's error
over the whole step. A row whose |err%| exceeds 3 is marked MISS. "mono"
says whether the row measures at most what the next larger budget's row of
the same kind (or plain backpropagation) measured. --markdown prints the
table as docs/benchmarks.md shows it.
"""

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402

from memplan.torch._forecast import forecast_fidelity  # noqa: E402
from memplan.torch.fidelity import fidelity_many  # noqa: E402
from memplan.torch.models import torchvision_model, transformer  # noqa: E402

MODELS = {
    "resnet18": (lambda b: torchvision_model("resnet18", b), 32),
    "mobilenet_v2": (lambda b: torchvision_model("mobilenet_v2", b), 16),
    "transformer": (lambda b: transformer(b, seq=64, dim=128, layers=4), 16),
    "densenet121": (lambda b: torchvision_model("densenet121", b), 8),
    "efficientnet_b0": (lambda b: torchvision_model("efficientnet_b0", b), 16),
}
# more models for the forecast rows
MORE = {
    "squeezenet1_1": (lambda b: torchvision_model("squeezenet1_1", b), 16),
    "mnasnet0_5": (lambda b: torchvision_model("mnasnet0_5", b), 16),
    "regnet_x_400mf": (lambda b: torchvision_model("regnet_x_400mf", b), 16),
}
FRACTIONS = (0.4, 0.6, 0.8)
TARGET_PCT = 3.0
# the largest relative gradient difference a reordered sum may leave
GRAD_ROUNDING = 1e-5

COLS = ("model", "batch", "budget", "plan MB", "pred MB", "meas MB", "err%", "dyn%", "plan%",
        "pred ms", "meas ms", "grads", "mono", "")
MD_COLS = ("model", "batch", "budget", "predicted MB", "measured MB", "error %",
           "dynamic error %", "planner's figure MB (error %)", "grads match", "monotone")


def _mb(b):
    return "%.2f" % (b / 1e6)


def _rows_of(name, batch, recs):
    """Table rows (dicts) of one model, plain first, then budgets from the
    largest down; each applied row knows whether it is monotone."""
    p = recs[0]["plain"]
    rows = [dict(p, model=name, batch=batch, tag="plain")]
    last = {"direct": p["measured_peak_bytes"], "fitted": p["measured_peak_bytes"]}
    for r in reversed(recs):  # 80%, 60%, 40%
        pct = "%d%%" % round(100 * r["budget_fraction"])
        for kind, q, tag in (("direct", r["direct"], pct), ("fitted", r["planned"], pct + "f")):
            if q is None:
                rows.append({"model": name, "batch": batch, "tag": tag,
                             "infeasible": r.get("min_feasible_budget") or 0})
                continue
            mono = q["measured_peak_bytes"] <= last[kind]
            last[kind] = q["measured_peak_bytes"]
            grads = r["grads_match"] if kind == "fitted" else r["grads_match_direct"]
            rows.append(dict(q, model=name, batch=batch, tag=tag, mono=mono, grads=grads,
                             limit=r["budget"]))
        if r.get("at_min") is not None:
            q = r["at_min"]
            mono = q["measured_peak_bytes"] <= last["direct"]
            last["direct"] = q["measured_peak_bytes"]
            const, pk = r["const_bytes"], p["predicted_peak_bytes"]
            tag = "min %d%%" % round(100.0 * (r["min_feasible_budget"] - const) / (pk - const))
            rows.append(dict(q, model=name, batch=batch, tag=tag, mono=mono,
                             grads=r["grads_match_at_min"], limit=q["plan_budget"]))
    return rows


def _grads_ok(row):
    """Gradients as documented: equal bit for bit, or, where the applier
    said they may not be (a plan that reorders the forward pass around a
    value read by three or more ops), different at rounding level."""
    if row["grads"]:
        return True
    return (row.get("grads_exact_expected") is False
            and row.get("grad_max_rel_diff", 1.0) <= GRAD_ROUNDING)


def _grads_cell(row, yes, no):
    if row["grads"]:
        return yes
    d = row.get("grad_max_rel_diff")
    note = "%.1e" % d if d is not None else "?"
    if _grads_ok(row):
        return "reordered, %s" % note
    return "%s %s" % (no, note)


def _miss(row):
    return abs(row["error_pct"]) > TARGET_PCT


def _text(row):
    if "infeasible" in row:
        return ("%-16s %8s %7s infeasible: the least feasible budget is %s MB"
                % (row["model"], row["batch"], row["tag"], _mb(row["infeasible"])))
    plain = row["tag"] == "plain"
    res = ""
    if "measured_reserved_bytes" in row:
        res = " res %s MB (%.3f%%)" % (_mb(row["measured_reserved_bytes"]),
                                       row["reserved_error_pct"])
    return ("%-16s %8s %7s %8s %8s %8s %7.3f %7.3f %7s %8.1f %8.1f %5s %4s %s%s"
            % (row["model"], row["batch"], row["tag"],
               "-" if plain else _mb(row["plan_peak_bytes"]), _mb(row["predicted_peak_bytes"]),
               _mb(row["measured_peak_bytes"]), row["error_pct"], row["dynamic_error_pct"],
               "-" if plain else "%.2f" % row["plan_error_pct"], row["predicted_time_ms"],
               row["measured_time_ms"], "-" if plain else _grads_cell(row, "equal", "DIFF"),
               "-" if plain else ("yes" if row["mono"] else "NO"), "MISS" if _miss(row) else "", res))


def _markdown(row):
    if "infeasible" in row:
        cells = (row["model"], row["batch"], row["tag"], "infeasible: least feasible budget %s MB"
                 % _mb(row["infeasible"]), "", "", "", "", "", "")
    else:
        plain = row["tag"] == "plain"
        err = "%.3f" % row["error_pct"] + (" **miss**" if _miss(row) else "")
        cells = (row["model"], row["batch"], row["tag"], _mb(row["predicted_peak_bytes"]),
                 _mb(row["measured_peak_bytes"]), err, "%.3f" % row["dynamic_error_pct"],
                 "-" if plain else "%s (%+.2f)" % (_mb(row["plan_peak_bytes"]),
                                                   row["plan_error_pct"]),
                 "-" if plain else _grads_cell(row, "yes", "**no**"),
                 "-" if plain else ("yes" if row["mono"] else "**no**"))
    return "| " + " | ".join(str(c) for c in cells) + " |"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default=None,
                    help="default: the five (and with --forecast the three more)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--json", default=None)
    ap.add_argument("--markdown", action="store_true", help="print the table in Markdown")
    ap.add_argument("--mode", default="recompute", choices=("recompute", "checkpoint"))
    ap.add_argument("--forecast", action="store_true",
                    help="export at batches up to --export-batch, plan and measure at --batch")
    ap.add_argument("--export-batch", type=int, default=4)
    ap.add_argument("--batch", type=int, default=16, help="the forecast's batch")
    ap.add_argument("--fractions", default=None, help="budget fractions (default 0.4,0.6,0.8)")
    ap.add_argument("--device", default="cpu", help="cpu or cuda")
    ap.add_argument("--threads", type=int, default=None,
                    help="torch's CPU threads (default 1; 2 with --forecast, see above)")
    args = ap.parse_args()
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        print("bench_fidelity: --device %s: CUDA is not available here (torch %s, built %s); "
              "nothing run" % (args.device, torch.__version__,
                               "with CUDA " + torch.version.cuda if torch.version.cuda
                               else "without CUDA"))
        return 0
    fractions = FRACTIONS if args.fractions is None else \
        tuple(float(f) for f in args.fractions.split(","))
    if args.models is None:
        args.models = ",".join(list(MODELS) + (list(MORE) if args.forecast else []))
    models = dict(MODELS, **MORE)
    if args.device == "cpu":
        torch.set_num_threads(args.threads or (2 if args.forecast else 1))
    else:  # predict what the CUDA caching allocator hands out (512-byte blocks)
        from memplan.torch import _planner
        _planner.DEVICE_ARGS[:] = ["--allocator", "pytorch-cuda"]
    recs_all, rows = [], []
    hdr = ("%-16s %8s %7s %8s %8s %8s %7s %7s %7s %8s %8s %5s %4s %s" % COLS)
    fc = (", forecast at batch %d from an export at batches up to %d"
          % (args.batch, args.export_batch) if args.forecast else "")
    print("applier mode: %s, device: %s (%d threads)%s"
          % (args.mode, args.device, torch.get_num_threads(), fc))
    print(hdr)
    print("-" * len(hdr))
    for name in args.models.split(","):
        make, batch = models[name]
        batch = args.batch if args.forecast else batch
        model, inputs = make(batch)
        if args.device != "cpu":
            model = model.to(args.device)
            inputs = tuple(t.to(args.device) for t in inputs)
        t0 = time.time()
        if args.forecast:
            recs = forecast_fidelity(model, inputs, batch, args.export_batch, fractions,
                                     name=name, reps=args.reps, mode=args.mode)
            shown = "%d<%d-%d" % (batch, recs[0]["exported_at"][0], recs[0]["exported_at"][-1])
        else:
            recs = fidelity_many(model, inputs, fractions, name=name, batch=batch,
                                 reps=args.reps, mode=args.mode)
            shown = batch
        recs_all.extend(recs)
        mrows = _rows_of(name, shown, recs)
        rows.extend(mrows)
        for row in mrows:
            print(_text(row))
        print("%-16s (%.0f s)" % ("", time.time() - t0))
        sys.stdout.flush()
    done = [r for r in rows if "infeasible" not in r]
    applied = [r for r in done if r["tag"] != "plain"]
    worst = max(abs(r["error_pct"]) for r in done)
    worst_dyn = max(abs(r["dynamic_error_pct"]) for r in done)
    mono = {k: all(r["mono"] for r in applied if r["tag"].endswith("f") == (k == "fitted"))
            for k in ("direct", "fitted")}
    over = [r for r in applied if r["measured_peak_bytes"] > r["limit"]]
    print("worst |err%%| %.3f, worst |dyn%%| %.3f (target %.0f%%); rows missing it: %d; "
          "gradients as documented on every applied row: %s; monotone: direct plans %s, "
          "fitted plans %s"
          % (worst, worst_dyn, TARGET_PCT, sum(_miss(r) for r in done),
             "yes" if all(_grads_ok(r) for r in applied) else "NO",
             "yes" if mono["direct"] else "NO", "yes" if mono["fitted"] else "NO"))
    print("applied rows measured above their budget: %d%s"
          % (len(over), "".join(" (%s %s %s)" % (r["model"], r["batch"], r["tag"]) for r in over)))
    if args.markdown:
        print()
        print("| " + " | ".join(MD_COLS) + " |")
        print("|" + "---|" * len(MD_COLS))
        for row in rows:
            print(_markdown(row))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(recs_all, f, indent=1)
    return 0 if mono["fitted"] and not any(_miss(r) for r in done) else 1


if __name__ == "__main__":
    sys.exit(main())
