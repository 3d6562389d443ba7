"""_planner.py - asks memplan for a plan: the local CLI (a subprocess) or
the daemon (memplan.client.Client, imported only when used).

The CLI is $MEMPLAN_CLI, or build/memplan under the repository root.
"""

import json
import os
import subprocess
import tempfile

_REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))

# A budget no graph reaches: plain backpropagation's peak is then the answer
# of solver 'none'.
NO_BUDGET = 1 << 62


class PlannerError(RuntimeError):
    pass


def cli_path():
    return os.environ.get("MEMPLAN_CLI") or os.path.join(_REPO, "build", "memplan")


# Device options the CLI's plan and simulate get too, e.g. ["--allocator",
# "pytorch-cuda"] to charge what PyTorch's CUDA caching allocator hands out
# (bench_fidelity.py --device cuda sets it).
DEVICE_ARGS = []


def _run_cli(args, graph, extra_json=None, timeout=600):
    cli = cli_path()
    if not os.path.exists(cli):
        raise PlannerError("memplan CLI not found at %s (build it with make, or set MEMPLAN_CLI)" % cli)
    with tempfile.TemporaryDirectory(prefix="memplan-torch-") as d:
        gpath = os.path.join(d, "graph.json")
        with open(gpath, "w") as f:
            json.dump(graph, f)
        argv = [cli, args[0], gpath]
        if extra_json is not None:
            spath = os.path.join(d, "extra.json")
            with open(spath, "w") as f:
                json.dump(extra_json, f)
            argv.append(spath)
        argv += list(args[1:]) + ["--compact"]
        p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    if p.returncode not in (0, 1):
        raise PlannerError("%s failed (exit %d): %s" % (" ".join(argv[:2]), p.returncode,
                                                        p.stderr.strip() or p.stdout.strip()))
    try:
        return json.loads(p.stdout)
    except ValueError:
        raise PlannerError("%s printed no JSON: %s" % (cli, p.stderr.strip())) from None


def plan(graph, budget, solver="auto", server=None, timeout=600.0):
    """The planner's answer (a dict with feasible, peak_bytes, time,
    checkpoints, schedule, ...) for `graph` under `budget` bytes."""
    if server:
        from memplan.client import Client  # the stdlib HTTP client, lazily
        res = Client(server, token=None, timeout=timeout).plan(graph, int(budget), solver=solver,
                                                              wait=30.0, timeout=timeout)
        if "feasible" not in res and isinstance(res.get("result"), dict):
            res = res["result"]  # a plan view rather than its result
        return res
    return _run_cli(["plan", "--budget", str(int(budget)), "--solver", solver] + DEVICE_ARGS,
                    graph, timeout=timeout)


def simulate(graph, schedule, timeout=600.0):
    """memplan's simulation of an explicit schedule (memplan.schedule/1
    dict or list of steps) over graph."""
    if isinstance(schedule, list):
        schedule = {"format": "memplan.schedule/1", "steps": schedule}
    return _run_cli(["simulate"] + DEVICE_ARGS, graph, extra_json=schedule, timeout=timeout)


def cli_supports_saved_bytes():
    """Whether the CLI's graph loader knows the node field saved_bytes."""
    g = {"format": "memplan.graph/1", "nodes": [{"id": "a", "bytes": 1, "saved_bytes": 1}]}
    try:
        _run_cli(["inspect"], g, timeout=60)
        return True
    except PlannerError:
        return False


def without_saved_bytes(graph):
    """A copy of graph for planners that predate saved_bytes: the field is
    dropped (the prediction then misses masks and indices)."""
    g = dict(graph)
    g["nodes"] = [{k: v for k, v in n.items() if k != "saved_bytes"} for n in graph["nodes"]]
    return g
