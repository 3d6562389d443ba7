"""_planner.py - asks memplan for a plan: the local CLI (a subprocess) or
the daemon (memplan.client.Client, imported only when used).

The CLI is $MEMPLAN_CLI, else `memplan` on PATH, else build/memplan of the
checkout this package is run from (not of an installed copy). A CLI that
fails (exit status other than 0 or 1, no JSON) raises PlannerError.
"""

import json
import os
import shutil
import subprocess
import tempfile

_REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))

# A budget no graph reaches: plain backpropagation's peak is then the answer
# of solver 'none'.
NO_BUDGET = 1 << 62


class PlannerError(RuntimeError):
    pass


def cli_path():
    """The memplan CLI to run: $MEMPLAN_CLI, memplan on PATH, or
    build/memplan of the checkout this package runs from; when there is
    none, the name `memplan` (running it then fails with PlannerError)."""
    env = os.environ.get("MEMPLAN_CLI")
    if env:
        return env
    found = shutil.which("memplan")
    if found:
        return found
    if os.path.isdir(os.path.join(_REPO, "planner")):
        return os.path.join(_REPO, "build", "memplan")
    return "memplan"


# Device options the CLI's plan and simulate get too, e.g. ["--allocator",
# "pytorch-cuda"] to charge what PyTorch's CUDA caching allocator hands out
# (bench_fidelity.py --device cuda sets it).
DEVICE_ARGS = []


def _run_cli(args, graph, extra_json=None, timeout=600):
    cli = cli_path()
    if not (os.path.isfile(cli) and os.access(cli, os.X_OK)):
        raise PlannerError("memplan CLI not found (%s): set MEMPLAN_CLI, put memplan on PATH, "
                           "or give a daemon (server=URL)" % cli)
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


def plan(graph, budget, solver="auto", server=None, timeout=600.0, dims=None, token=None):
    """The planner's answer (a dict with feasible, peak_bytes, time,
    checkpoints, schedule, ...) for `graph` under `budget` bytes, from the
    daemon at `server` or else the local CLI. dims: a binding of the
    graph's symbolic dimensions ({"batch": 64}), when it has them."""
    if server:
        from memplan.client import Client  # the stdlib HTTP client, lazily
        extra = {"dims": dict(dims)} if dims else {}
        res = Client(server, token=token, timeout=timeout).plan(
            graph, int(budget), solver=solver, wait=30.0, timeout=timeout, **extra)
        if "feasible" not in res and isinstance(res.get("result"), dict):
            res = res["result"]  # a plan view rather than its result
        return res
    args = ["plan", "--budget", str(int(budget)), "--solver", solver]
    for k, v in (dims or {}).items():
        args += ["--dim", "%s=%d" % (k, int(v))]
    return _run_cli(args + DEVICE_ARGS, graph, timeout=timeout)


def simulate(graph, schedule, timeout=600.0):
    """memplan's simulation of an explicit schedule (memplan.schedule/1
    dict or list of steps) over graph."""
    if isinstance(schedule, list):
        schedule = {"format": "memplan.schedule/1", "steps": schedule}
    return _run_cli(["simulate"] + DEVICE_ARGS, graph, extra_json=schedule, timeout=timeout)


def plain(graph, server=None, timeout=600.0, dims=None, token=None):
    """The planner's answer for plain backpropagation (keep everything,
    free each value after its last use): peak_bytes, const_bytes, time,
    schedule."""
    return plan(graph, NO_BUDGET, solver="none", server=server, timeout=timeout, dims=dims,
                token=token)


def cli_supports_saved_bytes():
    """Whether the CLI's graph loader knows the node field saved_bytes:
    False only when the CLI answers that the field is unknown; any other
    failure raises PlannerError."""
    g = {"format": "memplan.graph/1", "nodes": [{"id": "a", "bytes": 1, "saved_bytes": 1}]}
    try:
        _run_cli(["inspect"], g, timeout=60)
        return True
    except PlannerError as e:
        if "unknown field" in str(e) and "saved_bytes" in str(e):
            return False
        raise
