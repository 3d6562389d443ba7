"""_recompute.py - runs a memplan plan on a PyTorch model by recomputing
exactly the plan's nodes, when the plan's schedule says, with
torch.autograd.graph.saved_tensors_hooks. This is the default applier
(memplan.torch.apply, mode "recompute"); _apply.py keeps the older one
built on torch.utils.checkpoint.

What runs. The traced model's fx nodes run one by one, in the plan's
forward order (its compute steps: segment by segment), so that autograd,
which backpropagates in reverse creation order, runs the backward in the
plan's order too. Each fx node belongs to a memplan node (its storage group
from export) or to none (sizes, tensors without gradient, placeholders).
For a segment s, R_s is the set of memplan nodes the plan recomputes in
s's backward (its recompute steps).

What autograd keeps. Every tensor an op saves for backward goes through
the pack hook; once the op has returned, the saved tensor is classified by
its storage against the op's inputs and outputs (all alive then, so storage
addresses are unambiguous):
  - the storage of a node u in R_s (s the segment of the op's node g): a
    value the plan drops after the forward pass and recomputes; the saved
    slot becomes a recipe and the tensor is let go;
  - a storage the op made itself (a dropout mask, max-pool indices, a
    contiguous copy) while g is in R_s: the plan holds it only from g's
    recomputation on; a recipe too;
  - anything else (a kept value, parameters, inputs, what a node that is
    not recomputed saves for itself): held as autograd would hold it.
A recipe for a saved tensor of an op of a recomputed node is "pack number i
of fx node n": the recomputation runs n again and catches its i-th saved
tensor. A recipe for a node that is not recomputed but saved a recomputed
value (a kept node whose backward reads a recomputed input) is "that
storage, as this view": the recomputed storage of the fx input it came
from, with the saved tensor's size, stride and offset.

When it recomputes. The first unpack of a recipe of segment s (the first
backward of s that needs one) recomputes R_s: the fx nodes of R_s's
nodes, in forward order, with grad enabled and an inner pack hook that
catches the saved tensors recipes ask for, from the values the forward pass
handed over (the segment's boundary: kept values, inputs, sizes, held
from the forward pass until this recomputation, as the plan holds kept
values until their last reader) and from each other. Values are dropped
after their last reader inside the recomputation; what a recipe asks for is
held until that recipe is unpacked, so a recomputed value lives until the
last backward that reads it, as in the plan's schedule. The recomputation's
own autograd graph is discarded.

Randomness. Export's recording run notes which fx nodes draw random
numbers (the CPU RNG state changes). Before the forward of a recomputed fx
node that draws, the CPU RNG state (and the CUDA one when the step runs on
CUDA) is saved, and restored before that node's recomputation, so a
recomputed dropout draws the same mask; the state in force when the
recomputation reaches its first random node is kept and restored after its
last one. Each state held is a few kilobytes (the CPU one 5056 bytes) from
the node's forward to its recomputation. On CPU, export counts them in the
graph: a node `N.rng` (op RNGState, never recomputed) that random node N
reads, so the planner holds it exactly while the applier does, and one
state more in N's workspace for the one kept across the recomputation. On
CUDA they are host memory and not counted.

Tensors without gradient that a recomputed node reads (a mask `g > 0`
that `where` saves) are made again in the recomputation (export's aux_of)
and, in the forward pass too, just before their first reader, as memplan
counts them.

Concatenations run as cat_own_grads: torch.cat whose backward gives each
input a gradient of its own storage, as memplan counts gradients (see
there).

Limits: each saved tensor is unpacked once (no retain_graph, no double
backward through recomputed values); a boundary value modified in place
after the forward read it raises an error at the recomputation.
"""

import torch
import torch.fx as fx

from ._mem import storage_key, tensors_in


class RecomputeError(RuntimeError):
    pass


def _data_ptr(t):
    k = storage_key(t)
    return None if k is None else k[0]


def _detach_tree(v, leaves):
    """v with every tensor detached; those that need a gradient become
    leaves that do (so the recomputed ops save what they save), appended
    to `leaves`."""
    if isinstance(v, torch.Tensor):
        d = v.detach()
        if v.requires_grad:
            d.requires_grad_(True)
            leaves.append(d)
        return d
    if isinstance(v, tuple):
        return tuple(_detach_tree(x, leaves) for x in v)
    if isinstance(v, list):
        return [_detach_tree(x, leaves) for x in v]
    if isinstance(v, dict):
        return {k: _detach_tree(x, leaves) for k, x in v.items()}
    return v


def _let_go(leaves):
    """Release the storage of leaves made by _detach_tree. The
    recomputation's autograd graph holds its leaves (AccumulateGrad keeps
    the tensor) for as long as a value computed from them lives, which
    would keep a boundary value alive past its last reader; that graph is
    never used, so the leaves' data can go."""
    for t in leaves:
        t.data = torch.empty(0, dtype=t.dtype, device=t.device)


def _versions(v):
    return tuple(t._version for t in tensors_in(v))


class _Rng:
    """The RNG state of the CPU generator and, when cuda is given, of that
    CUDA device."""

    def __init__(self, cuda):
        self.cuda = cuda

    def get(self):
        st = [torch.get_rng_state()]
        if self.cuda is not None:
            st.append(torch.cuda.get_rng_state(self.cuda))
        return st

    def set(self, st):
        torch.set_rng_state(st[0])
        if self.cuda is not None:
            torch.cuda.set_rng_state(st[1], self.cuda)


class _Saved:
    """What autograd stores for one saved tensor: the tensor itself (held)
    or a recipe to get it back from its segment's recomputation."""
    __slots__ = ("t", "ctx", "key", "view")

    def __init__(self, t):
        self.t, self.ctx, self.key, self.view = t, None, None, None

    def get(self):
        if self.ctx is None:
            if self.t is None:
                raise RecomputeError("memplan.torch: a recomputed saved tensor was unpacked twice "
                                     "(retain_graph and double backward are not supported by "
                                     "mode 'recompute'; use mode 'checkpoint')")
            return self.t
        ctx, self.ctx = self.ctx, None
        return ctx.take(self)


class _Segment:
    """One segment's recomputation, for one forward call: its boundary
    values, the RNG states of its random nodes, the recipes asked for, and
    after the recomputation what they get."""

    def __init__(self, plan, s, rng):
        self.plan = plan          # the _Program
        self.s = s
        self.rng = rng
        self.boundary = {}        # fx node -> (value, versions)
        self.states = {}          # fx node -> RNG state before its forward
        self.want_caps = set()    # (fx node name, pack index)
        self.want_vals = {}       # (fx node name, tensor index) -> recipes left
        self.caps = {}
        self.vals = {}
        self.done = False

    def take(self, h):
        if not self.done:
            self.recompute()
        if h.view is None:
            t = self.caps.pop(h.key, None)
            if t is None:
                raise RecomputeError("memplan.torch: the recomputation of segment %d did not "
                                     "save tensor %s again" % (self.s, h.key))
            return t
        base = self.vals[h.key]
        left = self.want_vals[h.key] - 1
        self.want_vals[h.key] = left
        if left == 0:
            del self.vals[h.key]
        size, stride, offset = h.view
        return base.as_strided(size, stride, offset)

    def recompute(self):
        prog = self.plan
        nodes = prog.rec_nodes[self.s]
        env = {}
        # the boundary is handed over and let go: no reference to one of its
        # values may outlive its last reader in the recomputation
        boundary, self.boundary = self.boundary, {}
        leaves = {}
        while boundary:
            i, (v, ver) = boundary.popitem()
            if _versions(v) != ver:
                raise RecomputeError("memplan.torch: '%s' was modified in place after segment "
                                     "%d read it; the segment cannot be recomputed" % (i.name,
                                                                                       self.s))
            leaves[i] = []
            env[i] = _detach_tree(v, leaves[i])
            v = None
        cur = [None, 0]
        caps, want = self.caps, self.want_caps

        def pack(t):
            key = (cur[0], cur[1])
            cur[1] += 1
            if key in want:
                caps[key] = t.detach()
            return None

        def unpack(_x):
            raise RecomputeError("memplan.torch: the recomputation's own graph was used")

        last = prog.rec_last[self.s]
        keep = {k[0] for k in self.want_vals}
        # the state in force now is taken at the first random node and put
        # back after the last one (later nodes draw nothing); each node's own
        # state is let go before it runs: what export's RNGState nodes and
        # workspace count
        before = None
        try:
            with torch.enable_grad(), torch.autograd.graph.saved_tensors_hooks(pack, unpack):
                for n in nodes:
                    cur[0], cur[1] = n.name, 0
                    st = self.states.pop(n, None)
                    if st is not None:
                        if before is None:
                            before = self.rng.get()
                        self.rng.set(st)
                        st = None
                    env[n] = prog.call(n, env)
                    if before is not None and not self.states:
                        self.rng.set(before)
                        before = None
                    for d in last.get(n, ()):
                        if d.name not in keep:
                            env.pop(d, None)
                            _let_go(leaves.pop(d, ()))
        finally:
            if before is not None:
                self.rng.set(before)
        for key in self.want_vals:
            ts = list(tensors_in(env[prog.by_name[key[0]]]))
            self.vals[key] = ts[key[1]].detach()
        self.want_caps = set()
        self.states = {}
        self.done = True


class _Program:
    """The fixed part of an applied plan: the order fx nodes run in, their
    memplan nodes and segments, each segment's recomputation (its fx nodes
    and boundary), and when each value's last reader runs."""

    def __init__(self, gm, group_of, seg, rec_sets, order_key, random_fx=frozenset(),
                 aux_of=None):
        self.gm = gm
        graph_nodes = list(gm.graph.nodes)
        self.placeholders = [n for n in graph_nodes if n.op == "placeholder"]
        self.out_node = next(n for n in graph_nodes if n.op == "output")
        body = [n for n in graph_nodes if n.op not in ("placeholder", "output")]
        self.by_name = {n.name: n for n in graph_nodes}
        self.group = {n: group_of.get(n.name) for n in body}
        late = {self.by_name[a] for names in (aux_of or {}).values() for a in names}
        self.order = _run_order(body, self.group, order_key, late)
        self.seg = {n: seg.get(self.group[n]) for n in body}
        # segment -> fx nodes it recomputes, in run order
        self.rec_nodes = {}
        self.in_rec = {}          # fx node -> segment recomputing it
        for n in self.order:
            g = self.group[n]
            s = self.seg[n]
            if g is not None and s is not None and g in rec_sets.get(s, ()):
                self.rec_nodes.setdefault(s, []).append(n)
                self.in_rec[n] = s
        # tensors without gradient that recomputed nodes read (a mask that
        # `where` saves) are made again from the values the plan holds, not
        # held from the forward pass (export's aux_of)
        self.aux_owner = {}       # such an fx node -> the memplan node it is remade for
        pos = {n: i for i, n in enumerate(self.order)}
        for s, ns in self.rec_nodes.items():
            extra = []
            for gid in dict.fromkeys(self.group[n] for n in ns):
                for name in (aux_of or {}).get(gid, ()):
                    a = self.by_name[name]
                    if a not in extra:
                        extra.append(a)
                        self.aux_owner.setdefault(a, gid)
            for a in extra:  # one remade in several segments: its first's RNG
                self.in_rec.setdefault(a, s)
            if extra:
                ns.extend(extra)
                ns.sort(key=lambda n: pos[n])
        self.rec_groups = rec_sets
        # each segment's boundary: fx values its recomputation reads from
        # outside; boundary_of[i] = segments that take i
        self.boundary_of = {}
        self.rec_last = {}
        for s, ns in self.rec_nodes.items():
            inside = set(ns)
            for n in ns:
                for i in n.all_input_nodes:
                    if i not in inside:
                        self.boundary_of.setdefault(i, []).append(s)
            self.rec_last[s] = _last_uses(ns, set())
        self.fwd_last = _last_uses(self.order, set(), self.out_node)
        self.modules = {n: gm.get_submodule(n.target) for n in body if n.op == "call_module"}
        self.rng_heads = _rng_heads(self.order, self.in_rec, random_fx)

    def call(self, n, env):
        args = fx.node.map_arg(n.args, lambda x: env[x])
        kwargs = fx.node.map_arg(n.kwargs, lambda x: env[x])
        if n.op == "call_module":
            return self.modules[n](*args, **kwargs)
        if n.op == "call_function":
            if n.target in _CATS:
                return cat_own_grads(*args, **kwargs)
            return n.target(*args, **kwargs)
        if n.op == "call_method":
            return getattr(args[0], n.target)(*args[1:], **kwargs)
        if n.op == "get_attr":
            v = self.gm
            for a in n.target.split("."):
                v = getattr(v, a)
            return v
        raise RecomputeError("memplan.torch: unexpected fx node %s (%s)" % (n.name, n.op))


class _CatOwnGrads(torch.autograd.Function):
    """torch.cat whose backward gives each input a gradient in a storage of
    its own (see cat_own_grads)."""

    @staticmethod
    def forward(ctx, dim, *ts):
        ctx.dim = dim
        ctx.sizes = [t.shape[dim] for t in ts]
        return torch.cat(ts, dim)

    @staticmethod
    def backward(ctx, grad):
        pieces = grad.split(ctx.sizes, ctx.dim)
        return (None,) + tuple(p.clone() if need else None
                               for p, need in zip(pieces, ctx.needs_input_grad[1:]))


_CATS = (torch.cat, torch.concat)


def cat_own_grads(tensors, dim=0):
    """torch.cat(tensors, dim), except that its backward copies each
    input's slice of the output's gradient. torch.cat's own backward hands
    its inputs views of that gradient, which then stays allocated whole
    until the last input has used its slice; memplan counts each input's
    gradient apart, freed after that input's backward (a concatenation
    read by six dense layers kept a used slice alive under the plan's
    peak). With the copies the step holds what memplan counts: during the
    cat's backward its output's gradient and its inputs', then only the
    inputs' not yet used. The values are the same."""
    ts = list(tensors)
    if not ts or any(not isinstance(t, torch.Tensor) or t.dim() != ts[0].dim() or
                     t.dtype != ts[0].dtype for t in ts) or ts[0].dim() == 0:
        return torch.cat(ts, dim)
    d = dim if dim >= 0 else dim + ts[0].dim()
    return _CatOwnGrads.apply(d, *ts)


def _rng_heads(order, in_rec, random_fx):
    """The recomputed fx nodes whose RNG state is saved: every random one.
    (One per run of random nodes recomputed together would do, but export
    counts one state per recomputed random node, the RNGState node it
    reads, so that the planner's figure is what the applied step holds.)"""
    return [n for n in order if n.name in random_fx and n in in_rec]


def same_grads(prog):
    """Whether the applied step's gradients are the model's bit for bit.

    Outputs always are, and each op's backward computes the same values.
    What can change is the order in which autograd sums the gradient
    contributions of a value read by several ops: the engine runs ready
    backward nodes newest first, so it follows the order the forward pass
    created them in, and the applier runs the forward in the plan's order,
    which may put independent branches in another order than the model's
    (an inception block's four branches). Two contributions sum to the same
    bits in either order (a + b == b + a); three or more need not
    ((a + b) + c != (a + c) + b in floating point). So the gradients are
    exact when the plan runs the forward in the model's own order, or when
    no value (activation, input or parameter) is read by more than two ops
    that record a backward; otherwise they may differ at rounding level
    (GoogLeNet: at most a few 1e-6 relative)."""
    body = [n for n in prog.gm.graph.nodes if n in prog.group]
    if prog.order == body:
        return True
    readers = {}
    for n in body:
        if prog.group[n] is None:
            continue
        for i in dict.fromkeys(n.all_input_nodes):
            readers[i] = readers.get(i, 0) + 1
    return all(k <= 2 for k in readers.values())


def _run_order(body, group, order_key, late=frozenset()):
    """fx nodes in the plan's forward order: a memplan node's fx nodes at
    its compute step's place, others right after their latest input (or,
    without inputs, just before their first reader), fx order breaking
    ties. Those in `late` (tensors without gradient) run just before their
    first reader, where memplan counts them (in the saved_bytes of the op
    that saves them), not while other nodes run. Raises PlanError when an
    input would run after its reader."""
    from ._apply import PlanError
    pos = {n: i for i, n in enumerate(body)}
    key = {}
    for n in body:
        g = group[n]
        if g is not None and g in order_key:
            key[n] = (order_key[g], pos[n])
            continue
        ins = [key[i] for i in n.all_input_nodes if key.get(i) is not None]
        key[n] = (max(ins)[0], pos[n]) if ins else None
    for n in reversed(body):
        if key[n] is None:
            users = [key[u][0] for u in n.users if key.get(u) is not None]
            key[n] = (min(users) if users else 0, -len(body) + pos[n])
    for n in reversed(body):
        if n in late:
            users = [key[u][0] for u in n.users if u in key]
            if users:
                key[n] = (min(users), pos[n])
    for n in body:
        for i in n.all_input_nodes:
            if i in key and key[i] > key[n]:
                raise PlanError("memplan.torch.apply: fx node '%s' would run before its input "
                                "'%s' (the plan's order does not fit the traced model)"
                                % (n.name, i.name))
    return sorted(body, key=lambda n: key[n])


def _last_uses(order, keep, out_node=None):
    """fx node -> the values (fx nodes) whose last reader in `order` it is.
    Values read by out_node are never dropped."""
    last = {}
    for n in order:
        for i in n.all_input_nodes:
            last[i] = n
    if out_node is not None:
        for i in out_node.all_input_nodes:
            last.pop(i, None)
    by = {}
    for v, n in last.items():
        if v not in keep:
            by.setdefault(n, []).append(v)
    return by


class _Run:
    """One forward call: the segments' recomputations and the pack hook."""

    def __init__(self, prog, cuda):
        self.prog = prog
        self.rng = _Rng(cuda)
        self.segs = {s: _Segment(prog, s, self.rng) for s in prog.rec_nodes}
        self.pending = []

    def pack(self, t):
        h = _Saved(t)
        self.pending.append(h)
        return h

    def resolve(self, n, env, out):
        """Decide, now that n has returned, what its saved tensors become."""
        prog = self.prog
        g = prog.group[n]
        s = prog.seg.get(n)
        seg = self.segs.get(s)
        if seg is None or g is None:
            self.pending = []
            return
        rec = prog.rec_groups.get(s, ())
        owner = {}
        for i in n.all_input_nodes:
            u = prog.group.get(i)
            if u is None or i not in env:
                continue
            for j, t in enumerate(tensors_in(env[i])):
                p = _data_ptr(t)
                if p is not None:
                    owner.setdefault(p, (i, j, u))
        for j, t in enumerate(tensors_in(out)):
            p = _data_ptr(t)
            if p is not None:
                owner.setdefault(p, (n, j, g))
        g_rec = g in rec
        for idx, h in enumerate(self.pending):
            t = h.t
            p = _data_ptr(t)
            o = owner.get(p) if p is not None else None
            if o is not None and o[2] in rec:
                if g_rec:
                    self._cap(seg, h, n, idx)
                elif o[0] in prog.in_rec and t.dtype == _ref_dtype(env, o):
                    key = (o[0].name, o[1])
                    seg.want_vals[key] = seg.want_vals.get(key, 0) + 1
                    h.key, h.view = key, (tuple(t.size()), tuple(t.stride()),
                                          t.storage_offset())
                    h.ctx, h.t = seg, None
            elif o is None and g_rec and p is not None:
                self._cap(seg, h, n, idx)
        self.pending = []

    @staticmethod
    def _cap(seg, h, n, idx):
        h.key = (n.name, idx)
        seg.want_caps.add(h.key)
        h.ctx, h.t = seg, None


def _ref_dtype(env, o):
    i, j, _ = o
    for k, t in enumerate(tensors_in(env[i])):
        if k == j:
            return t.dtype
    return None


def _device_cuda(args, gm):
    for t in list(tensors_in(args)) + list(gm.parameters()):
        return t.device if t.is_cuda else None
    return None


def run(prog, args):
    """The forward pass of the applied plan on `args` (see the module
    comment); returns the model's output."""
    env = {}
    for p, a in zip(prog.placeholders, args):
        env[p] = a
    if len(args) != len(prog.placeholders):
        raise TypeError("memplan.torch: the applied model takes %d inputs, got %d"
                        % (len(prog.placeholders), len(args)))
    grad = torch.is_grad_enabled()
    r = _Run(prog, _device_cuda(args, prog.gm)) if grad else None
    heads = set(prog.rng_heads)
    if r is not None:
        for p in prog.placeholders:
            _hand_over(prog, r, p, env)

    def body():
        for n in prog.order:
            if r is not None and n in heads:
                r.segs[prog.in_rec[n]].states[n] = r.rng.get()
            out = prog.call(n, env)
            env[n] = out
            if r is not None:
                if r.pending:
                    r.resolve(n, env, out)
                _hand_over(prog, r, n, env)
            for d in prog.fwd_last.get(n, ()):
                if d.op != "placeholder":
                    env.pop(d, None)

    if r is not None:
        with torch.autograd.graph.saved_tensors_hooks(r.pack, lambda h: h.get()):
            body()
    else:
        body()
    return fx.node.map_arg(prog.out_node.args[0], lambda x: env[x])


def _hand_over(prog, r, n, env):
    for s in prog.boundary_of.get(n, ()):
        v = env[n]
        r.segs[s].boundary[n] = (v, _versions(v))
