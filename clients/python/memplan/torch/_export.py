"""_export.py - a PyTorch training step as a memplan.graph/1 graph, from a
real run on this device.

What becomes a node. The model is traced with torch.fx and run once on the
example inputs with autograd on. Nodes of the memplan graph are storages,
not fx nodes: an fx node whose outputs all live in storages made earlier (a
view, flatten, an in-place ReLU, getitem) joins the node that made the
storage, because in PyTorch it keeps that storage alive and adds nothing.
So `bn1` followed by an in-place `relu` is one node of bn1's output size.
Tensors that need no gradient (masks built from shapes, sizes, index
tensors) are not nodes; an edge runs through them so that the planner's
order stays valid, and when an op saves one for backward it counts in that
op's saved_bytes. The loss (loss_fn of the model's output, by default the
sum of every output) is the last node, `loss`.

What backward keeps. While the recording run executes each fx node,
torch.autograd.graph.saved_tensors_hooks sees every tensor the op saves.
By storage identity each is the node's own output (bwd_reads "output"), an
activation input (bwd_reads "inputs"), a parameter, buffer or data input
(resident: ignored), or a buffer made by the op itself (a dropout mask,
max-pool indices, the copy ReLU6 in place saves): those count in the new
node field saved_bytes, held from the (re)computation until the node's
backward. Dropout stays recompute:true: memplan.torch.apply keeps the RNG
state of each recomputed random node (the recording run notes which nodes
draw random numbers: Export.random_fx) and replays the same masks.

Weights, gradients, optimizer state. The graph models steady-state
training with parameter gradients zeroed in place: parameters, buffers,
the gradients kept for the optimizer and the optimizer's state are resident
for the whole step, so their bytes are the graph's param_bytes. A freshly
computed weight gradient lives until AccumulateGrad adds it into .grad:
that is workspace of the op's backward (below). optimizer.step() runs after
backward with only resident memory left; its own peak is measured apart
(Export.optimizer_step_peak, step_peak()), since the graph has no step
after the last backward. The data
inputs are `input` nodes. Both are measured as storages (see _mem.py), the
same way measure_peak counts what is resident.

Sizes and workspaces come from the run and from each node run alone:
forward workspace = the allocator's peak during the node's forward minus
what is still allocated after it (output, saved buffers); backward
workspace = the peak during the node's backward minus its output gradient
and the gradients it makes for its activation inputs (this holds the
freshly computed weight gradient before AccumulateGrad adds it into .grad,
and the op's temporaries). memplan has one workspace_bytes for both steps,
so the node gets the larger.

Times come from `reps` real training steps (median per node), in
milliseconds: a node's forward time is its fx node(s) timed as they run; its
backward lasts from the moment its output gradient is complete (a tensor
hook) to the moment the next node's is, so the engine's overhead and the
accumulation of weight gradients are counted where they happen.
"""

import contextlib
import copy
import gc
import statistics
import weakref

import torch
import torch.fx as fx

from . import _cache, _mem
from ._apply import _EXPORTS, RNG_SUFFIX
from ._job import ExportedGraph
from ._trace import trace

GRAPH_FORMAT = "memplan.graph/1"
LOSS_ID = "loss"
# The loss tensor (the caller holds it while backward() runs) and the
# gradient that seeds backward (autograd holds it until backward is done)
# live through the whole backward pass: an input node counts them.
HELD_ID = "loss.held"


def default_loss(output):
    """The sum of every tensor in the model's output."""
    ts = [t for t in _mem.tensors_in(output) if t.is_floating_point()]
    if not ts:
        raise ValueError("memplan.torch: the model's output holds no floating-point tensor")
    loss = ts[0].sum()
    for t in ts[1:]:
        loss = loss + t.sum()
    return loss


def as_tuple(example_inputs):
    if isinstance(example_inputs, (tuple, list)):
        return tuple(example_inputs)
    return (example_inputs,)


@contextlib.contextmanager
def preserved(model, optimizer=None):
    """Restore parameters, buffers, parameter gradients, optimizer state and
    the CPU RNG state on exit: exporting and measuring run training steps
    but must not train the model."""
    params = {k: v.detach().clone() for k, v in model.state_dict(keep_vars=True).items()
              if isinstance(v, torch.Tensor)}
    grads = {p: (None if p.grad is None else p.grad.detach().clone()) for p in model.parameters()}
    opt = copy.deepcopy(optimizer.state_dict()) if optimizer is not None else None
    rng = torch.get_rng_state()
    try:
        yield
    finally:
        with torch.no_grad():
            sd = model.state_dict(keep_vars=True)
            for k, v in params.items():
                sd[k].copy_(v)
            for p, g in grads.items():
                if g is None:
                    p.grad = None
                elif p.grad is None:
                    p.grad = g
                else:
                    p.grad.copy_(g)
        if optimizer is not None:
            optimizer.load_state_dict(opt)
            if not opt["state"]:
                optimizer.state.clear()
        torch.set_rng_state(rng)


def zero_grads(model):
    """Zero parameter gradients in place (steady state: never set to None,
    or the next step allocates them again)."""
    for p in model.parameters():
        if p.grad is not None:
            p.grad.detach_()
            p.grad.zero_()


def warm_step(model, inputs, loss_fn, optimizer):
    """One training step that brings gradients and optimizer state to their
    steady-state allocation, then zeroes the gradients in place."""
    loss = loss_fn(model(*inputs))
    loss.backward()
    del loss
    if optimizer is not None:
        optimizer.step()
    zero_grads(model)


# ---- the recording run --------------------------------------------------


class _Rec:
    """What one fx node did in the recording run."""
    __slots__ = ("outs", "saved", "grad", "tensor")

    def __init__(self, outs, saved, grad, tensor):
        self.outs, self.saved, self.grad, self.tensor = outs, saved, grad, tensor


def _record_call(fn):
    """Run fn() under saved_tensors_hooks; (result, saved storage keys)."""
    saved = []

    def pack(t):
        k = _mem.storage_key(t)
        if k is not None:
            saved.append(k)
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = fn()
    return out, saved


def _rec_of(out, saved):
    ts = list(_mem.tensors_in(out))
    outs = []
    for t in ts:
        k = _mem.storage_key(t)
        if k is not None and k not in outs:
            outs.append(k)
    grad = any(t.requires_grad for t in ts)
    return _Rec(outs, saved, grad, bool(ts))


class _Recorder(fx.Interpreter):
    """Runs the traced model keeping every value alive (so storage addresses
    stay unique) and records each node's outputs and saved tensors, and
    which nodes draw random numbers (the CPU RNG state changes)."""

    def __init__(self, gm):
        super().__init__(gm, garbage_collect_values=False)
        self.recs = {}
        self.random = set()

    def run_node(self, n):
        if n.op in ("placeholder", "get_attr", "output"):
            return super().run_node(n)
        before = torch.get_rng_state()
        out, saved = _record_call(lambda: super(_Recorder, self).run_node(n))
        if not torch.equal(before, torch.get_rng_state()):
            self.random.add(n)
        self.recs[n] = _rec_of(out, saved)
        return out


def _op_name(gm, n):
    if n.op == "call_module":
        return type(gm.get_submodule(n.target)).__name__
    if n.op == "call_method":
        return str(n.target)
    return getattr(n.target, "__name__", str(n.target))


class _Group:
    """One node of the memplan graph: a storage and the fx nodes that make
    or alias it."""

    def __init__(self, gid, producer, nbytes):
        self.id = gid
        self.members = [producer]
        self.bytes = nbytes
        self.inputs = []        # ids, in first-seen order
        self.real = set()       # ids read as tensors
        self.order = set()      # ids reached through shapes or no-grad tensors
        self.act_inputs = set()
        self.reads_out = False
        self.reads_in = set()   # activation inputs whose storage is saved
        self.extra = {}         # saved storages made by the op: addr -> bytes
        self.time = 0.0
        self.bwd_time = 0.0
        self.ws_fwd = 0
        self.ws_bwd = 0


class Export:
    """The result of exporting: the graph dict plus what apply and the
    fidelity check need (the traced module, groups, measurements)."""

    def __init__(self):
        self.graph = None
        self.gm = None
        self.groups = []         # in topological order, loss last
        self.group_of = {}       # fx node name -> group id (members)
        self.state_bytes = 0
        self.input_bytes = 0
        self.optimizer_step_peak = 0  # bytes optimizer.step() allocates at its peak
        self.random = set()      # group ids with an fx node that draws random numbers
        self.random_fx = set()   # names of the fx nodes that draw random numbers
        self.aux_fx = set()      # fx nodes whose value is a tensor that needs no gradient
        self.aux_of = {}         # group id -> names of the no-grad fx nodes it recomputes with
        self.no_recompute = set()  # group ids that read a no-grad tensor they cannot remake
        self.rng_bytes = 0       # one RNG state the applier keeps (0 on CUDA: host memory)
        self.cached = False      # times and workspaces came from _cache
        self.held_bytes = 0      # the loss and its seed gradient, held through backward
        self.notes = []


def _input_edges(n, stand):
    """(real, order-only) ids an fx node's inputs stand for. Real: the
    groups and data inputs it reads. Order-only: activations reached
    through sizes, masks and other tensors without gradient, which the op
    reads only for their shape or was built from."""
    real, order = set(), set()
    for i in n.all_input_nodes:
        kind, v = stand.get(i, ("deps", frozenset()))
        if kind == "deps":
            order |= v
        else:
            real.add(v)
    return real, order


def _build_groups(gm, recs, owner, exp):
    """Turn recorded fx nodes into groups; returns (groups by id, order,
    stand-in of each fx node)."""
    groups = {}
    order = []
    # fx node -> ('group', gid) | ('input', name) | ('deps', frozenset of
    # group ids it was built from)
    stand = {}
    for n in gm.graph.nodes:
        if n.op == "placeholder":
            stand[n] = ("input", n.name)
            continue
        if n.op in ("get_attr", "output"):
            continue
        rec = recs[n]
        real, ordr = _input_edges(n, stand)
        built_from = frozenset(ordr | {v for v in real if v in groups})
        if not rec.tensor:
            stand[n] = ("deps", built_from)
            continue
        new = [k for k in rec.outs if k[0] not in owner]
        if not new:
            base = owner[rec.outs[0][0]]
            if base[0] == "act":
                g = groups[base[1]]
                g.members.append(n)
                stand[n] = ("group", g.id)
                exp.group_of[n.name] = g.id
                g.real |= real - {g.id}
                g.order |= ordr - {g.id}
            elif base[0] == "input":  # a view of a data input reads it
                stand[n] = ("input", base[1])
            else:  # a view or in-place change of a parameter or aux tensor
                stand[n] = ("deps", built_from)
                if base[0] == "aux":
                    exp.aux_fx.add(n)
            continue
        if not rec.grad:
            for k in new:
                owner[k[0]] = ("aux", n.name)
            stand[n] = ("deps", built_from)
            exp.aux_fx.add(n)
            continue
        g = _Group(n.name, n, sum(k[1] for k in new))
        for k in new:
            owner[k[0]] = ("act", g.id)
        g.real |= real
        g.order |= ordr
        groups[g.id] = g
        order.append(g.id)
        stand[n] = ("group", g.id)
        exp.group_of[n.name] = g.id
    return groups, order, stand


def _finish_edges(groups, order):
    """Inputs of each group: its real inputs, plus each order-only one that
    is not already an ancestor (an edge memplan needs to keep the order,
    which costs the planner a little liveness)."""
    anc = {}
    for gid in order:
        g = groups[gid]
        a = set()
        for r in g.real:
            a.add(r)
            a |= anc.get(r, set())
        extra = []
        for d in sorted(g.order):
            if d in groups and d != gid and d not in a:
                extra.append(d)
                a.add(d)
                a |= anc[d]
        anc[gid] = a
        _add_inputs(g, sorted(g.real) + extra, groups)


def _add_inputs(g, ids, groups):
    for i in ids:
        if i not in g.inputs:
            g.inputs.append(i)
        if i in groups:
            g.act_inputs.add(i)


def _aux_recompute(groups, order, exp):
    """What a recomputed node needs that is no node: tensors without
    gradient (a mask `g > 0` that `where` saves, an index built in the
    forward pass). The applier makes them again in the recomputation from
    the values the plan holds there (the node's inputs), so that they are
    not held from the forward pass. A node whose no-grad tensors come from
    values that are not its inputs cannot: it gets recompute false, since
    recomputing it would hold them from the forward pass, which the graph
    cannot say."""
    for gid in order:
        g = groups[gid]
        allowed = set(g.inputs) | {gid}
        mem = set(g.members)
        todo = [i for m in g.members for i in m.all_input_nodes if i in exp.aux_fx and i not in mem]
        need, bad = set(), []
        while todo:
            a = todo.pop()
            if a in need:
                continue
            need.add(a)
            for i in a.all_input_nodes:
                if i in exp.aux_fx:
                    todo.append(i)
                elif exp.group_of.get(i.name, gid) not in allowed:
                    bad.append(exp.group_of[i.name])  # a node's value the plan may not hold
        if bad:
            exp.no_recompute.add(gid)
            exp.notes.append("%s reads tensors without gradient made from %s, which are not its "
                             "inputs: recompute false" % (gid, sorted(set(bad))))
        elif need:
            exp.aux_of[gid] = [n.name for n in g.members[0].graph.nodes if n in need]


def _partial_reads(groups, order, exp):
    """memplan's bwd_reads "inputs" means every activation input. A node
    that saves only some of them (a matmul that saves one operand and a
    contiguous copy of the other) is written either as "inputs", which
    keeps the unsaved ones alive until its backward, or with the saved
    inputs' bytes moved into saved_bytes, which counts them twice when they
    stay alive for another reason. The cheaper error is chosen."""
    savers = {}
    for gid in order:
        for u in groups[gid].reads_in:
            savers.setdefault(u, set()).add(gid)
    for gid in order:
        g = groups[gid]
        if not g.reads_in or g.reads_in == g.act_inputs:
            continue
        unsaved = g.act_inputs - g.reads_in
        over_keep = sum(groups[u].bytes for u in unsaved)
        twice = sum(groups[u].bytes for u in g.reads_in
                    if groups[u].reads_out or savers[u] - {gid})
        if twice < over_keep:
            for u in sorted(g.reads_in):
                g.extra[("input", u)] = groups[u].bytes
            how = "its saved inputs count in saved_bytes"
            g.reads_in = set()
        else:
            how = "bwd_reads inputs keeps the others"
        exp.notes.append("%s saves %s of its activation inputs %s: %s"
                         % (gid, sorted(g.reads_in) or "some", sorted(g.act_inputs), how))


def _classify_saved(g, saved, owner):
    for addr, nb in saved:
        o = owner.get(addr)
        if o is None or o[0] == "aux":
            g.extra[addr] = nb
        elif o[0] == "act":
            if o[1] == g.id:
                g.reads_out = True
            elif o[1] in g.act_inputs:
                g.reads_in.add(o[1])
            else:
                g.extra[addr] = nb
        # resident (param, input): ignored


# ---- per-node measurement ------------------------------------------------


def _median_ms(samples):
    return statistics.median(samples) * 1000.0 if samples else 0.0


class _NodeRunner:
    """Runs one group alone on inputs taken from the recording run."""

    def __init__(self, gm, env, stand, loss_fn, out_node):
        self.interp = fx.Interpreter(gm, garbage_collect_values=False)
        self.env = env
        self.stand = stand
        self.loss_fn = loss_fn
        self.out_node = out_node

    def leaves(self, g, groups):
        """Fresh leaf inputs sharing storage with the recorded values:
        (fx node -> value, the leaves standing for activations). Other
        inputs that need a gradient (views of parameters) become leaves
        too, so that backward never walks into the recording run's graph;
        their gradients count as workspace, like a weight gradient."""
        ext, acts = {}, []
        if g.id == LOSS_ID:
            nodes = self.out_node.all_input_nodes
        else:
            nodes = []
            mem = set(g.members)
            for m in g.members:
                nodes.extend(i for i in m.all_input_nodes if i not in mem)
        for i in nodes:
            if i in ext:
                continue
            v = self.env[i]
            if isinstance(v, torch.Tensor) and v.requires_grad:
                v = v.detach().requires_grad_(True)
                if self.stand.get(i, ("",))[0] == "group":
                    acts.append(v)
            ext[i] = v
        return ext, acts

    def forward(self, g, ext):
        """Run the group; returns the tensors backward starts from: the
        outputs of members read outside the group (the loss for the loss)."""
        if g.id == LOSS_ID:
            out = fx.node.map_arg(self.out_node.args[0], lambda nd: ext[nd])
            return [self.loss_fn(out)]
        env = dict(self.env)
        env.update(ext)
        self.interp.env = env
        for m in g.members:
            env[m] = self.interp.run_node(m)
        # drop the interpreter's reference now: freeing this group's values
        # later would land inside the next group's allocator trace
        self.interp.env = {}
        mem = set(g.members)
        outs, seen = [], set()
        for m in g.members:
            if any(u not in mem for u in m.users):
                for t in _mem.tensors_in(env[m]):
                    if t.requires_grad and t.grad_fn is not None and id(t) not in seen:
                        seen.add(id(t))
                        outs.append(t)
        return outs


# Sentinel allocations of odd sizes mark, in one allocator trace, where a
# node's forward ends and where its backward begins (frees of blocks
# allocated before a trace started are not reported, so the parts share one
# trace).
_SENTINELS = (7 * 11 * 13 * 17 * 19 + 1, 7 * 11 * 13 * 17 * 23 + 1)


def _seed(outs, keep):
    """A scalar whose backward hands each output a fresh ones gradient that
    autograd frees once consumed, as a real step does (a seed tensor held by
    the caller would stay alive through the whole backward). The scalar
    tensors this needs (the factor 1 each multiplication saves, the seed of
    backward) are made here and held in `keep` until the measurement ends,
    so that their allocation and release do not count in the backward
    part."""
    s = None
    for t in outs:
        one = t.new_ones(())
        keep.append(one)
        x = (t * one).sum()
        s = x if s is None else s + x
    if s is not None:
        keep.append(torch.ones_like(s))
    return s


def _parts(ev):
    """Running-sum peak and end of each part of ev between the sentinels."""
    cuts = [ev.index(m) if m in ev else len(ev) for m in _SENTINELS]
    bounds = [(0, cuts[0]), (cuts[0] + 1, cuts[1]), (cuts[1] + 1, len(ev))]
    out = []
    for lo, hi in bounds:
        run = peak = 0
        for nb in ev[lo:hi]:
            run += nb
            peak = max(peak, run)
        out.append((peak, run))
    return out


def _measure_group(runner, g, groups):
    ext, leaves = runner.leaves(g, groups)
    gc.collect()
    with _mem.AllocTrace() as tr:
        outs = runner.forward(g, ext)
        m1 = torch.empty(_SENTINELS[0], dtype=torch.uint8)
        keep = []
        s = _seed(outs, keep)
        grad_out = sum(t.numel() * t.element_size() for t in outs)
        # only autograd holds the node's values now, as in a real step at
        # this node's backward: what one op of the node saved is freed when
        # that op's backward is done, before the node's next op runs
        del outs
        m2 = torch.empty(_SENTINELS[1], dtype=torch.uint8)
        if s is not None:
            s.backward(keep[-1])
        del s
    (fpeak, fnet), _, (bpeak, _) = _parts(tr.events)
    g.ws_fwd = max(0, fpeak - fnet)
    made = _mem.storage_bytes([lf.grad for lf in leaves if lf.grad is not None])
    # memplan's backward step holds the node's output gradient and the
    # gradients it makes for its activation inputs; the rest is workspace
    g.ws_bwd = max(0, bpeak - grad_out - made) if grad_out else 0
    del m1, m2, keep


# ---- times, from real steps ---------------------------------------------


class _Timer(fx.Interpreter):
    """Runs the traced model timing each fx node, and hooks the gradients
    of each group's outputs: a tensor hook fires when the gradient is
    complete, just before the group's backward starts."""

    def __init__(self, gm, group_of, exported, device):
        super().__init__(gm)
        self.device = device
        self.group_of = group_of
        self.exported = exported  # fx nodes whose outputs other groups read
        self.fwd = {}
        self.marks = []
        self.hooked = set()

    def run_node(self, n):
        gid = self.group_of.get(n.name)
        if gid is None:
            return super().run_node(n)
        t0 = _mem.clock(self.device)
        out = super().run_node(n)
        self.fwd[gid] = self.fwd.get(gid, 0.0) + _mem.clock(self.device) - t0
        if n in self.exported:
            for t in _mem.tensors_in(out):
                if t.requires_grad and id(t) not in self.hooked:
                    self.hooked.add(id(t))
                    t.register_hook(self._mark(gid))
        return out

    def _mark(self, gid):
        def hook(_grad):
            self.marks.append((_mem.clock(self.device), gid))
        return hook


def _step_times(gm, inputs, loss_fn, groups, group_of, reps):
    """Per group (forward ms, backward ms), medians over `reps` real steps.
    A group's backward lasts from its first gradient hook to the next
    group's (so engine overhead and the accumulation of its weight
    gradients count too); the loss's from backward() to the first hook."""
    exported = set()
    for g in groups:
        mem = set(g.members)
        exported |= {m for m in g.members if any(u not in mem for u in m.users)}
    fwd = {g.id: [] for g in groups}
    bwd = {g.id: [] for g in groups}
    dev = next((t.device for t in list(_mem.tensors_in(inputs)) + list(gm.parameters())), None)
    for _ in range(reps):
        tm = _Timer(gm, group_of, exported, dev)
        out = tm.run(*inputs)
        t0 = _mem.clock(dev)
        loss = loss_fn(out)
        tm.fwd[LOSS_ID] = _mem.clock(dev) - t0
        del out
        tb = _mem.clock(dev)
        loss.backward()
        te = _mem.clock(dev)
        del loss
        starts = {}
        for t, gid in tm.marks:
            starts.setdefault(gid, t)
        seq = sorted((t, gid) for gid, t in starts.items())
        seq = [(tb, LOSS_ID)] + seq + [(te, None)]
        took = {}
        for (t, gid), (t2, _) in zip(seq, seq[1:]):
            took[gid] = took.get(gid, 0.0) + t2 - t
        for g in groups:
            fwd[g.id].append(tm.fwd.get(g.id, 0.0))
            bwd[g.id].append(took.get(g.id, 0.0))
        zero_grads(gm)
    for g in groups:
        g.time = _median_ms(fwd[g.id])
        g.bwd_time = _median_ms(bwd[g.id])


# ---- export --------------------------------------------------------------


def export_full(model, example_inputs, loss_fn=None, optimizer=None, *, name=None, reps=3,
                measure=True, saved_field=True, dims=None, axes=None, make=None, cache=True):
    """Export and keep the details (an Export); export() returns .graph.
    With dims: a memplan.graph/2 from replays at several values (_dims.py).
    cache: reuse the times and workspaces of an earlier export of the same
    model on the same device (_cache.py); False measures again."""
    if dims is not None:
        from ._dims import export_full_dims
        return export_full_dims(model, example_inputs, loss_fn, optimizer, dims=dims, axes=axes,
                                make=make, name=name, reps=reps, measure=measure,
                                saved_field=saved_field)
    inputs = as_tuple(example_inputs)
    loss_fn = loss_fn or default_loss
    gm = trace(model)
    exp = Export()
    exp.gm = gm
    was_training = gm.training
    gm.train()
    dev = next((t.device for t in list(_mem.tensors_in(inputs)) + list(gm.parameters())),
               torch.device("cpu"))
    try:
        with preserved(gm, optimizer), _mem.traced_device(dev):
            warm_step(gm, inputs, loss_fn, optimizer)
            exp.state_bytes, exp.input_bytes = _mem.resident_bytes(gm, optimizer, inputs)
            if optimizer is not None:
                exp.optimizer_step_peak = _optimizer_peak(gm, inputs, loss_fn, optimizer)
            ckey = _cache.key(gm, inputs, loss_fn, reps, _device_of(gm, inputs)) \
                if measure and cache else None
            _record_and_measure(gm, inputs, loss_fn, exp, reps, measure, ckey)
            if _device_of(gm, inputs).type == "cpu":
                exp.rng_bytes = _mem.storage_bytes([torch.get_rng_state()])
    finally:
        gm.train(was_training)
    exp.graph = _graph_dict(exp, name or type(model).__name__, inputs, gm, saved_field)
    exp.graph.export = exp
    exp.model_ref = weakref.ref(model)
    _EXPORTS[id(model)] = exp  # apply() uses the storage groups
    return exp


def _device_of(gm, inputs):
    for t in list(_mem.tensors_in(inputs)) + list(gm.parameters()):
        return t.device
    return torch.device("cpu")


def step_peak(exp, planner_peak):
    """The predicted peak of a whole training step: memplan's peak for
    forward and backward, or the optimizer step's, which runs when only
    resident memory is left (Adam's temporaries on a large weight can top
    a small activation peak)."""
    const = exp.state_bytes + exp.input_bytes
    return max(int(planner_peak), const + exp.optimizer_step_peak)


def export(model, example_inputs, loss_fn=None, optimizer=None, **kw):
    """The training step of `model` on `example_inputs` as a native
    memplan.graph/1 dict (see the module comment for what it counts), an
    ExportedGraph: its .export holds what plan/predict/apply use.
    loss_fn(output) -> scalar; default: the sum of every output tensor.
    dims="batch" or {"batch": [2, 3, 4], "seq": [16, 32, 48, 64]}: a
    memplan.graph/2 whose sizes and times are laws in those dims, from
    replays at those values (_dims.py); axes={"seq": 1} names each dim's
    input axis (batch: 0), or make(binding) -> (model, inputs) builds
    each replay's model and inputs.
    The model's parameters, buffers, gradients, optimizer state and the RNG
    state are left as they were."""
    return export_full(model, example_inputs, loss_fn, optimizer, **kw).graph


def _optimizer_peak(gm, inputs, loss_fn, optimizer):
    loss = loss_fn(gm(*inputs))
    loss.backward()
    del loss
    with _mem.AllocTrace() as a:
        optimizer.step()
    zero_grads(gm)
    return a.peak


def _record_and_measure(gm, inputs, loss_fn, exp, reps, measure, ckey=None):
    rec = _Recorder(gm)
    out = rec.run(*inputs)
    out_node = next(n for n in gm.graph.nodes if n.op == "output")
    loss, lsaved = _record_call(lambda o=out: loss_fn(o))
    if not isinstance(loss, torch.Tensor) or loss.numel() != 1:
        raise ValueError("memplan.torch: loss_fn must return a scalar tensor")

    owner = {}
    for t in _mem.model_state_tensors(gm):
        k = _mem.storage_key(t)
        if k is not None:
            owner[k[0]] = ("param",)
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    for n in placeholders:
        for t in _mem.tensors_in(rec.env[n]):
            k = _mem.storage_key(t)
            if k is not None:
                owner.setdefault(k[0], ("input", n.name))

    groups, order, stand = _build_groups(gm, rec.recs, owner, exp)
    if LOSS_ID in groups:
        raise ValueError("memplan.torch: the model has an fx node named 'loss'")
    # the loss
    lrec = _rec_of(loss, lsaved)
    lk = lrec.outs[0]
    exp.held_bytes = 2 * lk[1]
    lg = _Group(LOSS_ID, None, lk[1] if lk[0] not in owner else 0)
    lg.members = []
    owner.setdefault(lk[0], ("act", LOSS_ID))
    lg.real, lg.order = _input_edges(out_node, stand)
    groups[LOSS_ID] = lg
    order.append(LOSS_ID)
    _finish_edges(groups, order)
    _aux_recompute(groups, order, exp)

    for gid in order:
        g = groups[gid]
        saved = lsaved if gid == LOSS_ID else [k for m in g.members for k in rec.recs[m].saved]
        _classify_saved(g, saved, owner)
    _partial_reads(groups, order, exp)
    exp.groups = [groups[gid] for gid in order]
    exp.random = {exp.group_of[n.name] for n in rec.random if n.name in exp.group_of}
    exp.random_fx = {n.name for n in rec.random}
    exp.placeholders = [(n.name, _mem.storage_bytes(_mem.tensors_in(rec.env[n])))
                        for n in placeholders]
    del loss, out
    known = _cache.get(ckey, [g.id for g in exp.groups]) if ckey else None
    if known is not None:
        for g in exp.groups:
            g.time, g.bwd_time, g.ws_fwd, g.ws_bwd = known[g.id]
        exp.cached = True
    elif measure:
        _step_times(gm, inputs, loss_fn, exp.groups, exp.group_of, max(1, reps))
        runner = _NodeRunner(gm, rec.env, stand, loss_fn, out_node)
        for g in exp.groups:
            _measure_group(runner, g, groups)
        if ckey:
            _cache.put(ckey, {g.id: [g.time, g.bwd_time, int(g.ws_fwd), int(g.ws_bwd)]
                              for g in exp.groups})
    rec.env.clear()


def _bwd_reads(g):
    if g.reads_out and g.reads_in:
        return "both"
    if g.reads_out:
        return "output"
    if g.reads_in:
        return "inputs"
    return "none"


def _graph_dict(exp, name, inputs, gm, saved_field):
    nodes = []
    for pid, nb in exp.placeholders:
        nodes.append({"id": pid, "kind": "input", "bytes": int(nb)})
    if exp.held_bytes:
        nodes.append({"id": HELD_ID, "kind": "input", "op": "LossAndSeed",
                      "bytes": int(exp.held_bytes)})
    rng_done = set()
    for g in exp.groups:
        ops = [_op_name(gm, m) for m in g.members] if g.members else ["Loss"]
        d = {"id": g.id, "op": "+".join(ops)[:200], "inputs": list(g.inputs),
             "bytes": int(g.bytes), "time": round(g.time, 6), "bwd_time": round(g.bwd_time, 6),
             "bwd_reads": _bwd_reads(g)}
        ws = max(g.ws_fwd, g.ws_bwd)
        draws = [m.name for m in g.members if m.name in exp.random_fx] + \
            [a for a in exp.aux_of.get(g.id, ()) if a in exp.random_fx]
        if exp.rng_bytes and draws:
            for r in draws:
                rid = r + RNG_SUFFIX
                if r not in rng_done:
                    rng_done.add(r)
                    nodes.append({"id": rid, "op": "RNGState", "inputs": [],
                                  "bytes": int(exp.rng_bytes), "time": 0, "bwd_time": 0,
                                  "bwd_reads": "none", "recompute": False})
                d["inputs"].append(rid)
            # the state in force before a recomputation, taken at its first
            # random node (see _recompute.py)
            ws += exp.rng_bytes
        if ws:
            d["workspace_bytes"] = int(ws)
        if g.id in exp.no_recompute:
            d["recompute"] = False
        extra = sum(g.extra.values())
        if saved_field and extra:
            d["saved_bytes"] = int(extra)
        nodes.append(d)
    return ExportedGraph({"format": GRAPH_FORMAT, "name": name, "time_unit": "ms",
                          "param_bytes": int(exp.state_bytes), "nodes": nodes})
