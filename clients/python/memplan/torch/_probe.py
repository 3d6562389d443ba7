"""_probe.py - each node of an exported training step run alone at a
batch it was never exported at, to check the graph's laws there without
running the whole step.

A law fitted at batches 2-4 cannot see an op that changes how it works at
a larger batch (torch's CPU convolutions pick another algorithm, with
megabytes of workspace, past some size). Running the whole step at that
batch would answer it, but a step that does not fit cannot run; one node
at a time needs only that node's inputs, outputs and workspace.

How. The traced model runs forward once at the export's largest batch K,
keeping every value, and once at K - 1 for the values' shapes. A value's
form at batch b follows from the two: a tensor whose size changes along
one axis is cut or repeated along it to size(K) + (b - K) * (size(K) -
size(K-1)); an integer (a size read by a view) goes the same way; values
that do not change stay. Each node then runs alone on its inputs so made,
forward and backward, under the allocator trace that the export measures
workspaces with (_export._measure_group): the same figures, at b. A node
whose inputs change along more than one axis, or not along a straight
line, is not probed and is listed in `unprobed`.
"""

import copy
import gc

import torch
import torch.fx as fx

from . import _dims, _mem
from ._export import LOSS_ID, _measure_group, _NodeRunner, as_tuple, default_loss, preserved


class Unprobeable(ValueError):
    pass


def _form(v):
    """What of a value the scaling reads: tensors' shapes, numbers."""
    if isinstance(v, torch.Tensor):
        return ("T", tuple(v.shape))
    if isinstance(v, (tuple, list)):
        return ("S", type(v), tuple(_form(x) for x in v))
    if isinstance(v, bool):
        return ("B", v)
    if isinstance(v, (int, float, str)) or v is None:
        return ("V", v)
    return ("O", None)


def _grow(t, ax, n):
    """t cut or repeated along ax to n, with t's order of strides (an op
    may copy a transposed input that it would read in place)."""
    order = sorted(range(t.dim()), key=lambda i: -t.stride(i))
    back = [order.index(i) for i in range(t.dim())]
    out = _dims._resize(t.permute(order).contiguous(), order.index(ax), n)
    return out.contiguous().permute(back)


def _scale(v, lo, k, b):
    """Value v at batch k (form `lo` at batch k - 1) made for batch b."""
    if isinstance(v, torch.Tensor):
        hi = tuple(v.shape)
        if lo[0] != "T" or len(lo[1]) != len(hi):
            raise Unprobeable("a tensor changes rank with the batch")
        axes = [i for i, (x, y) in enumerate(zip(hi, lo[1])) if x != y]
        if not axes:
            return v
        if len(axes) > 1:
            raise Unprobeable("a tensor of shape %s changes along %d axes with the batch"
                              % (list(hi), len(axes)))
        ax = axes[0]
        n = hi[ax] + (b - k) * (hi[ax] - lo[1][ax])
        if n < 1:
            raise Unprobeable("a tensor's axis would be empty at batch %d" % b)
        t = _grow(v.detach(), ax, n)
        return t.requires_grad_(True) if v.requires_grad else t
    if isinstance(v, (tuple, list)):
        if lo[0] != "S" or len(lo[2]) != len(v):
            raise Unprobeable("a sequence changes length with the batch")
        out = [_scale(x, f, k, b) for x, f in zip(v, lo[2])]
        if isinstance(v, torch.Size):
            return torch.Size(out)
        return type(v)(out) if type(v) in (tuple, list) else type(v)(*out)
    if isinstance(v, int) and not isinstance(v, bool) and lo[0] == "V" and \
            isinstance(lo[1], int) and not isinstance(lo[1], bool):
        return v + (b - k) * (v - lo[1])
    if _form(v) != lo:
        raise Unprobeable("a value other than a tensor or a whole number changes with the batch")
    return v


class _Values:
    """Every fx node's value at batch k and its form at k - 1."""

    def __init__(self, gm, inputs_k, inputs_lo):
        with torch.no_grad():
            lo = fx.Interpreter(gm, garbage_collect_values=False)
            lo.run(*inputs_lo)
            self.lo = {n: _form(v) for n, v in lo.env.items()}
            del lo
        hi = fx.Interpreter(gm, garbage_collect_values=False)
        hi.run(*inputs_k)  # with autograd: which values need a gradient
        self.env = hi.env

    def at(self, nodes, k, b):
        return {n: _scale(self.env[n], self.lo[n], k, b) for n in nodes}


def _outside(g, out_node):
    """The fx nodes a group reads that it does not make."""
    if g.id == LOSS_ID:
        return list(out_node.all_input_nodes)
    mem = set(g.members)
    seen = []
    for m in g.members:
        for i in m.all_input_nodes:
            if i not in mem and i not in seen:
                seen.append(i)
    return seen


def probe(model, example_inputs, exp, batches, loss_fn=None, axis=0, only=None):
    """{"at": {b: {node id: workspace bytes}}, "unprobed": {node id: why}}:
    each node of `exp` (an Export with dims in "batch") run alone at each
    batch in `batches`, its workspace as the export counts it (the larger
    of forward's and backward's, plus an RNG state for a node that draws
    random numbers). only: node ids to probe (default: every node)."""
    loss_fn = loss_fn or default_loss
    gm = exp.gm
    k = int(exp.binding["batch"])
    if k < 2:
        raise _dims.DimsError("memplan.torch: probing needs an export at batch 2 or more")
    inputs = as_tuple(example_inputs)
    ins_k = _dims.inputs_at(inputs, {"batch": axis}, {"batch": k})
    ins_lo = _dims.inputs_at(inputs, {"batch": axis}, {"batch": k - 1})
    out_node = next(n for n in gm.graph.nodes if n.op == "output")
    groups = {g.id: g for g in exp.groups}
    stand = {n: ("group", exp.group_of[n.name]) for n in gm.graph.nodes
             if n.name in exp.group_of}
    random = set(exp.random)
    res = {"at": {}, "unprobed": {}}
    was_training = gm.training
    gm.train()
    dev = next((t.device for t in list(_mem.tensors_in(ins_k)) + list(gm.parameters())),
               torch.device("cpu"))
    try:
        with preserved(gm), _mem.traced_device(dev):
            vals = _Values(gm, ins_k, ins_lo)
            runner = _NodeRunner(gm, {}, stand, loss_fn, out_node)
            for b in batches:
                at = res["at"].setdefault(int(b), {})
                for g in exp.groups:
                    if (only is not None and g.id not in only) or g.id in res["unprobed"]:
                        continue
                    try:
                        runner.env = vals.at(_outside(g, out_node), k, int(b))
                    except Unprobeable as e:
                        res["unprobed"][g.id] = str(e)
                        continue
                    one = copy.copy(g)
                    _measure_group(runner, one, groups)
                    runner.env = {}
                    gc.collect()
                    ws = max(one.ws_fwd, one.ws_bwd)
                    if g.id in random or any(a in exp.random_fx for a in exp.aux_of.get(g.id, ())):
                        ws += exp.rng_bytes
                    at[g.id] = int(ws)
            del vals
    finally:
        gm.train(was_training)
    return res
