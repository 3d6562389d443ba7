"""python3 -m memplan.torch - export a model's training graph, or check how
well memplan predicts it.

  export    --model M --batch N --out graph.json [--dims batch]
  fidelity  --model M --batch N [--budget-fraction F] [--server URL]
            [--mode recompute|checkpoint] [--export-batch K]
  max-batch --model M --budget B [--export-batch K] [--measure] [--no-probe]

Every command takes --threads N (torch's CPU threads; torch's default
otherwise, which may be 1).

--dims batch exports a memplan.graph/2 (laws in the batch, from replays
at N/2, 3N/4 and N). fidelity --export-batch K forecasts: it exports at
batches no larger than K and plans the step at N from the laws, then
measures at N. max-batch prints the largest batch whose plan fits B
(bytes, or a size such as 2GiB), from an export at batches up to K
(default 4), checked by running each node alone at the answer (--no-probe:
the laws alone); --measure applies that plan and measures one step
(docs/forecast.md).

M is torchvision:NAME (input N x 3 x S x S, S = --image-size, default 64)
or FILE.py:FUNC, where FUNC(N) or FUNC() returns (model, example_inputs);
the loss is the sum of the outputs. fidelity prints one JSON object (see
memplan/torch/fidelity.py). Without --server the plans come from the local
CLI ($MEMPLAN_CLI, else memplan on PATH), with it from the daemon.

Exit status: 0 done; 2 a model that cannot be loaded or traced, or bad
arguments (one line on stderr); 3 the planner failed.
"""

import argparse
import json
import sys


def _parser():
    ap = argparse.ArgumentParser(prog="python3 -m memplan.torch", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    from ._forecast import add_max_batch_parser
    add_max_batch_parser(sub)
    for name in ("export", "fidelity"):
        p = sub.add_parser(name)
        p.add_argument("--model", required=True, help="torchvision:NAME or FILE.py:FUNC")
        p.add_argument("--batch", type=int, required=True)
        p.add_argument("--dims" if name == "export" else "--export-batch",
                       default=None, type=str if name == "export" else int,
                       help="export laws in these dims (batch)" if name == "export" else
                       "forecast: export at batches no larger than this, plan at --batch")
        p.add_argument("--image-size", type=int, default=64)
        p.add_argument("--reps", type=int, default=3, help="timing repetitions (median)")
        p.add_argument("--threads", type=int, default=None,
                       help="torch's CPU threads (default: torch's own)")
        if name == "export":
            p.add_argument("--out", required=True, help="graph file to write ('-': stdout)")
        else:
            p.add_argument("--budget-fraction", type=float, default=0.6,
                           help="budget = constant memory + F x plain backprop's dynamic peak")
            p.add_argument("--server", default=None, help="memplan daemon URL")
            p.add_argument("--solver", default="auto")
            p.add_argument("--mode", default="recompute", choices=("recompute", "checkpoint"),
                           help="the applier (memplan.torch.apply's mode)")
    return ap


def _export_dims(args):
    if args.dims is None:
        return None
    if args.dims != "batch":
        raise SystemExit("memplan.torch: export --dims takes only 'batch' on the command line "
                         "(other dims: memplan.torch.export(..., dims=, axes=))")
    from ._forecast import export_batches
    return {"batch": export_batches(args.batch)}


def _one_line(e):
    return " ".join(str(e).split())


def main(argv=None):
    args = _parser().parse_args(argv)
    from . import PlanError, PlannerError, TraceError
    if args.cmd != "max-batch" and args.batch < 1:
        print("memplan.torch: --batch must be at least 1", file=sys.stderr)
        return 2
    if args.threads is not None:
        if args.threads < 1:
            print("memplan.torch: --threads must be at least 1", file=sys.stderr)
            return 2
        import torch
        torch.set_num_threads(args.threads)
    try:
        if args.cmd == "max-batch":
            from ._forecast import main_max_batch
            return main_max_batch(args)
        return _run(args)
    except (ValueError, OSError, ImportError, TraceError, PlanError) as e:
        # the user's model or arguments: one line, exit status 2
        print(_one_line(e), file=sys.stderr)
        return 2
    except PlannerError as e:
        print(_one_line(e), file=sys.stderr)
        return 3


def _run(args):
    from . import export
    from .fidelity import fidelity
    from .models import load
    model, inputs = load(args.model, args.batch, args.image_size)
    if args.cmd == "export":
        g = export(model, inputs, name=args.model, reps=args.reps,
                   dims=_export_dims(args))
        text = json.dumps(g, indent=1)
        if args.out == "-":
            print(text)
        else:
            with open(args.out, "w") as f:
                f.write(text + "\n")
        return 0
    if args.export_batch is not None:
        from ._forecast import forecast_fidelity
        rec = forecast_fidelity(model, inputs, args.batch, args.export_batch,
                                (args.budget_fraction,), name=args.model, server=args.server,
                                solver=args.solver, reps=args.reps, mode=args.mode)[0]
        print(json.dumps(rec, indent=1))
        return 0
    rec = fidelity(model, inputs, args.budget_fraction, name=args.model, batch=args.batch,
                   server=args.server, solver=args.solver, reps=args.reps, mode=args.mode)
    print(json.dumps(rec, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
