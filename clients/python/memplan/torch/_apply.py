"""_apply.py - runs a memplan plan on a PyTorch model: reads the plan's
segments back from its schedule, and builds the module that runs it, in
one of two modes.

mode "recompute" (the default, _recompute.py): saved_tensors_hooks make
autograd drop exactly the values the plan recomputes and recompute exactly
the plan's recompute steps at the start of each segment's backward, so the
step torch runs is the plan's own schedule and the planner's figure is the
prediction (plus the RNG states kept for recomputed random ops).

mode "checkpoint" (the older one): each segment that recomputes runs under
torch.utils.checkpoint, non-reentrant, which does more than the plan says
(below); honest_schedule() writes what it really runs.

Reading the plan. memplan's recomputation plans are lower-set strategies:
segments V_1..V_k; the forward pass computes them in order and keeps only
the checkpoints (values read by a later segment); the backward pass, from
the last segment to the first, recomputes what the segment's backward
needs and backpropagates through it. The answer lists the checkpoints and
the schedule, not the segments, so they are read back from the schedule:
in the backward phase each segment is a run of recompute steps followed by
its backward steps in reverse graph order, so a new segment starts at a
recompute after a backward, or at a backward of a node later in graph order
than the one before. (Two segments without recomputation in a row may read
as one; that changes nothing, since neither is checkpointed.)

The checkpoint mapping. torch.utils.checkpoint re-runs a whole function,
kept outputs included, drops everything the function's ops save in the
forward pass, and keeps the function's inputs until its backward is done.
So for a segment that recomputes something, the checkpointed region is the
smallest one that does what the plan says: the nodes the plan recomputes,
the nodes whose backward reads a recomputed value (they must not save it in
the forward pass), and the nodes on paths between those. The segment's
other nodes run as usual, before or after the region: they are kept or not
needed, and what they save is what the plan holds for them. Segments with
nothing to recompute (the last one always) run as usual. fx nodes that are
not memplan nodes (views, in-place ops, sizes) go with the node whose
storage they alias, or after their latest input. Without the exported graph
(a plan applied to a model exported in another process) the region is the
segment's nodes from its first recomputed one on in graph order.

What torch really does then still differs from memplan's schedule: every
region node is recomputed, also those the plan would not recompute (kept
values, readers of recomputed values), and the region's inputs stay alive
until its backward. honest_schedule() writes the schedule torch really
follows in either mode (in mode "recompute" the plan's own) so that
memplan's simulator can predict the applied step exactly.
"""

import operator

import torch
import torch.fx as fx
from torch.utils.checkpoint import checkpoint

from ._trace import trace

_EXPORTS = {}  # id(model) -> Export, filled by memplan.torch.export

# Export's node for the RNG state the applier keeps to replay fx node N's
# random draws when N is recomputed is N + RNG_SUFFIX: it is no fx node, so
# reading a plan skips it.
RNG_SUFFIX = ".rng"


class PlanError(ValueError):
    pass


class Mapping:
    """How a plan maps onto the traced model."""

    def __init__(self):
        self.mode = "checkpoint"
        self.schedule = None  # the plan's schedule (mode "recompute")
        self.random = set()   # memplan nodes whose RNG state mode "recompute" holds
        self.blocks = []      # backward-phase blocks: dicts rec, bwd (ids), region (set)
        self.seg = {}         # memplan id -> segment index (0 = first)
        self.pos = {}         # memplan id -> graph order position
        self.unit = {}        # fx node -> (segment, 0 before / 1 in / 2 after the region)
        self.id_of = {}       # fx node name -> memplan id, for nodes that are or alias one
        self.unit_of_id = {}  # memplan id -> unit
        self.units = []       # ordered (segment, in_region)


def _blocks(schedule, pos):
    steps = [s for s in schedule if s["op"] != "free"]
    for s in steps:
        if s["op"] not in ("compute", "recompute", "backward"):
            raise PlanError("memplan.torch.apply: the plan moves data (%s steps); only "
                            "recomputation plans can be applied" % s["op"])
    i = 0
    while i < len(steps) and steps[i]["op"] == "compute":
        i += 1
    blocks = []
    cur = None
    last = None
    for s in steps[i:]:
        node = s["node"]
        if s["op"] == "compute":
            raise PlanError("memplan.torch.apply: compute step of '%s' after backward began" % node)
        if s["op"] == "recompute":
            if cur is None or cur["bwd"]:
                cur = {"rec": [], "bwd": []}
                blocks.append(cur)
            cur["rec"].append(node)
        else:
            p = pos.get(node, len(pos))
            if cur is None or (cur["bwd"] and p > last):
                cur = {"rec": [], "bwd": []}
                blocks.append(cur)
            cur["bwd"].append(node)
            last = p
    return blocks


def _region_by_reads(block, graph_nodes):
    """The nodes of a segment that must run under checkpoint: those the plan
    recomputes, those whose backward reads a recomputed value (they must
    not save it in the forward pass), and every node on a path between two
    of them (a region is one function call). The segment's other nodes run
    as usual, before the region or after it."""
    rec = set(block["rec"])
    inside = set(block["bwd"])
    acts = {v: [u for u in graph_nodes[v].get("inputs", ()) if u in inside] for v in inside}
    core = set(rec)
    for w in inside:
        if graph_nodes[w].get("bwd_reads", "inputs") in ("inputs", "both") and \
                any(u in rec for u in acts[w]):
            core.add(w)
    below = _reach(core, acts)  # core and everything it is computed from
    succ = {v: [] for v in inside}
    for v in inside:
        for u in acts[v]:
            succ[u].append(v)
    above = _reach(core, succ)  # core and everything computed from it
    return below & above, above


def _reach(start, edges):
    seen, todo = set(start), list(start)
    while todo:
        for u in edges[todo.pop()]:
            if u not in seen:
                seen.add(u)
                todo.append(u)
    return seen


def _read_plan(gm, plan):
    """A Mapping with the plan's blocks, segments and graph positions."""
    if not plan.get("feasible", True) and "schedule" not in plan:
        raise PlanError("memplan.torch.apply: the plan is infeasible and has no schedule")
    if "schedule" not in plan:
        raise PlanError("memplan.torch.apply: the plan answer has no schedule")
    m = Mapping()
    nodes = [n for n in gm.graph.nodes if n.op not in ("placeholder", "get_attr", "output")]
    names = {n.name for n in nodes}
    steps = [s for s in plan["schedule"]
             if not (s["node"].endswith(RNG_SUFFIX) and s["node"][:-len(RNG_SUFFIX)] in names)]
    ids = {s["node"] for s in steps}
    for n in nodes:
        if n.name in ids:
            m.pos[n.name] = len(m.pos)
    for i in sorted(ids - set(m.pos)):  # the loss and other nodes outside the model
        m.pos[i] = len(m.pos)
    m.blocks = _blocks(steps, m.pos)
    k = len(m.blocks)
    for bi, b in enumerate(m.blocks):
        b["seg"] = k - 1 - bi
        for v in b["bwd"]:
            m.seg[v] = b["seg"]
    return m


def recompute_mapping(gm, plan, group_of, random_fx=(), aux_of=None):
    """Mapping of `plan` for mode "recompute": the plan's blocks, its
    schedule (which is what runs) and the program that runs it
    (_recompute._Program: the fx nodes in the plan's forward order, each
    segment's recomputation). group_of: fx node name -> memplan id, from
    export; random_fx: names of the fx nodes that draw random numbers;
    aux_of: memplan id -> the no-grad fx nodes remade with it (export's).
    random: the memplan nodes whose RNG state the applier holds."""
    from ._recompute import _Program
    m = _read_plan(gm, plan)
    m.mode = "recompute"
    m.schedule = plan["schedule"]
    for b in m.blocks:
        b["region"] = set(b["rec"])
    order_key = {}
    for st in m.schedule:
        if st["op"] == "compute" and st["node"] not in order_key:
            order_key[st["node"]] = len(order_key)
    rec = {b["seg"]: set(b["rec"]) for b in m.blocks if b["rec"]}
    m.program = _Program(gm, group_of, m.seg, rec, order_key, set(random_fx), aux_of)
    m.random = {m.program.group[n] or m.program.aux_owner[n] for n in m.program.rng_heads}
    return m


def plan_mapping(gm, plan, group_of=None, graph=None):
    """Mapping of `plan` (a memplan plan answer with a schedule) onto the
    traced module gm for mode "checkpoint". group_of: fx node name ->
    memplan id, from export (views and in-place ops then follow their
    storage exactly). graph: the exported graph; with it a region holds only
    what must be recomputed (see _region_by_reads), without it a segment's
    nodes from its first recomputed one on in graph order."""
    m = _read_plan(gm, plan)
    nodes = [n for n in gm.graph.nodes if n.op not in ("placeholder", "get_attr", "output")]
    gnodes = {n["id"]: n for n in graph["nodes"]} if graph is not None else None
    unit_of = {}
    for b in m.blocks:
        sg = b["seg"]
        for v in b["bwd"]:
            unit_of[v] = (sg, 0)
        region = set()
        if b["rec"] and gnodes is not None:
            region, after = _region_by_reads(b, gnodes)
            for v in after - region:
                unit_of[v] = (sg, 2)
        elif b["rec"]:
            lo = min(m.pos[v] for v in b["rec"])
            region = {v for v in b["bwd"] if m.pos[v] >= lo}
        missing = set(b["rec"]) - region
        if missing:
            raise PlanError("memplan.torch.apply: recomputed %s outside its segment"
                            % sorted(missing))
        for v in region:
            unit_of[v] = (sg, 1)
        b["region"] = region
    m.unit_of_id = unit_of
    # every fx node gets a unit: memplan nodes their own, the others their
    # storage's (group_of) or their latest input's
    group_of = group_of or {}
    for n in nodes:
        gid = n.name if n.name in m.seg else group_of.get(n.name)
        if gid is not None and gid in m.seg:
            m.unit[n] = unit_of[gid]
            m.id_of[n.name] = gid
            continue
        ins = [m.unit[i] for i in n.all_input_nodes if i in m.unit]
        m.unit[n] = max(ins) if ins else None
    for n in reversed(nodes):  # nodes without inputs: with their first reader
        if m.unit[n] is None:
            users = [m.unit[u] for u in n.users if m.unit.get(u) is not None]
            m.unit[n] = min(users) if users else (0, 0)
    for n in nodes:
        for i in n.all_input_nodes:
            if i in m.unit and m.unit[i] > m.unit[n]:
                raise PlanError("memplan.torch.apply: fx node '%s' would run before its input "
                                "'%s' (the plan's segments do not fit the traced model)"
                                % (n.name, i.name))
    m.units = sorted(set(m.unit.values()))
    return m


class _Checkpointed(torch.nn.Module):
    """Runs a region under non-reentrant checkpointing with the RNG state
    preserved, so recomputed dropout draws the same masks."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return checkpoint(self.fn, *args, use_reentrant=False, preserve_rng_state=True)


def _submodule(gm, members, used_outside):
    """A GraphModule running `members` (fx nodes, in order): inputs are the
    values they read from outside, outputs (a tuple) those read outside."""
    g = fx.Graph()
    env = {}
    inputs = []
    mset = set(members)
    for n in members:
        for i in n.all_input_nodes:
            if i in env or i in mset:
                continue
            if i.op == "get_attr":
                env[i] = g.get_attr(i.target)
            else:
                env[i] = g.placeholder(i.name)
                inputs.append(i)
        env[n] = g.node_copy(n, lambda x: env[x])
    outs = [n for n in members if used_outside(n)]
    g.output(tuple(env[n] for n in outs))
    return fx.GraphModule(gm, g), inputs, outs


class Applied(torch.nn.Module):
    """The model running a memplan plan (see the module comment). It shares
    the original model's parameters and buffers."""

    def __init__(self, gm, mapping, plan):
        super().__init__()
        self.mapping = mapping
        self.plan = plan
        nodes = [n for n in gm.graph.nodes if n.op not in ("placeholder", "get_attr", "output")]
        out_node = next(n for n in gm.graph.nodes if n.op == "output")
        by_unit = {u: [] for u in mapping.units}
        for n in nodes:
            by_unit[mapping.unit[n]].append(n)
        top = fx.Graph()
        env = {}
        for n in gm.graph.nodes:
            if n.op == "placeholder":
                env[n] = top.node_copy(n, lambda x: env[x])
        self.regions = []
        # memplan ids a checkpointed region hands on to later segments: what
        # the forward pass keeps of it
        self.kept = set()
        for ui, u in enumerate(mapping.units):
            members = by_unit[u]
            mset = set(members)
            sub, inputs, outs = _submodule(
                gm, members, lambda n: any(x not in mset for x in n.users))
            name = "seg%d_%s" % (u[0], ("plain", "ckpt", "after")[u[1]])
            if u[1] == 1:
                sub = _Checkpointed(sub)
                self.regions.append([n.name for n in members])
                self.kept |= {mapping.id_of[o.name] for o in outs if o.name in mapping.id_of and
                              any(mapping.unit.get(x, (None,))[0] != u[0] for x in o.users)}
            self.add_module(name, sub)
            res = top.call_module(name, tuple(env[i] for i in inputs))
            for j, o in enumerate(outs):
                env[o] = top.call_function(operator.getitem, (res, j))
        top.output(fx.node.map_arg(out_node.args[0], lambda x: env[x]))
        self.top = fx.GraphModule(self, top)

    def forward(self, *args):
        return self.top(*args)


class AppliedRecompute(torch.nn.Module):
    """The model running a memplan plan in mode "recompute" (see
    _recompute.py). It shares the original model's parameters and
    buffers. regions: per segment that recomputes, the memplan nodes it
    recomputes. grads_exact: whether its gradients equal the model's bit
    for bit (_recompute.same_grads); when False they may differ at
    rounding level."""

    def __init__(self, gm, mapping):
        super().__init__()
        self.mapping = mapping
        self.gm = gm
        self.program = mapping.program
        self.regions = [sorted(b["rec"], key=lambda v: mapping.pos[v])
                        for b in mapping.blocks if b["rec"]]
        # what the forward pass keeps for later segments: every plan node
        # not recomputed in its own segment
        redone = {v for b in mapping.blocks for v in b["rec"]}
        self.kept = {v for v in mapping.seg if v not in redone} & set(
            s["node"] for s in mapping.schedule if s["op"] == "compute")
        from ._recompute import same_grads
        self.grads_exact = same_grads(self.program)

    def forward(self, *args):
        from ._recompute import run
        return run(self.program, args)


MODES = ("recompute", "checkpoint")


def apply(model, plan, graph=None, *, mode="recompute", example_inputs=None):
    """An nn.Module that runs `plan` (memplan's plan answer, with its
    schedule) on `model`, sharing the model's parameters; outputs and
    gradients are the original model's.

    mode "recompute" (default): autograd drops exactly what the plan
    recomputes and the plan's recompute steps run at the start of each
    segment's backward (_recompute.py): the step follows the plan's
    schedule. It needs the model's storage groups: from memplan.torch.export
    of this model in this process, or from a recording run on
    `example_inputs`.

    mode "checkpoint": torch.fx splits the traced model at the plan's
    segments and every segment that recomputes runs under
    torch.utils.checkpoint (use_reentrant=False, preserve_rng_state=True);
    honest_schedule() says what that runs."""
    if mode not in MODES:
        raise ValueError("memplan.torch.apply: mode must be one of %s" % (MODES,))
    gm = trace(model)
    exp = _EXPORTS.get(id(model))
    if exp is None or exp.model_ref() is not model:
        exp = None
    if mode == "recompute":
        if exp is None:
            if example_inputs is None:
                raise PlanError("memplan.torch.apply: mode 'recompute' needs the model's storage "
                                "groups: export this model first (memplan.torch.export) or pass "
                                "example_inputs")
            from ._export import export_full
            exp = export_full(model, example_inputs, measure=False)
        mapping = recompute_mapping(exp.gm, plan, exp.group_of, exp.random_fx, exp.aux_of)
        return AppliedRecompute(exp.gm, mapping)
    if exp is not None:
        group_of, graph = exp.group_of, graph or exp.graph
    else:
        group_of = None
    mapping = plan_mapping(gm, plan, group_of, graph)
    return Applied(gm, mapping, plan)


def honest_schedule(mapping, graph):
    """The schedule the applied module really runs, in memplan's schedule
    format. Mode "recompute": the plan's own schedule. Mode "checkpoint"
    (auto_free): the forward pass in the module's order, and in each
    checkpointed region's segment every region node recomputed (as
    torch.utils.checkpoint does) except those whose forward value is still
    alive because their own backward reads it. Mode "checkpoint" takes a
    graph without export's RNGState nodes (_predict._without_rng_nodes:
    torch.utils.checkpoint keeps one RNG state per region instead)."""
    if mapping.mode == "recompute":
        return {"format": "memplan.schedule/1", "steps": list(mapping.schedule)}
    nodes = {n["id"]: n for n in graph["nodes"]}
    acts = [n["id"] for n in graph["nodes"] if n.get("kind", "activation") == "activation"]
    fwd = sorted(acts, key=lambda v: (mapping.unit_of_id.get(v, (0, 0)), mapping.pos.get(v, 0)))
    steps = [{"op": "compute", "node": v} for v in fwd]
    for b in mapping.blocks:
        region = b["region"]
        if region:
            for v in sorted(region, key=lambda x: mapping.pos[x]):
                reads = nodes[v].get("bwd_reads", "inputs")
                kept = any(mapping.seg.get(w, -1) > b["seg"] for w in _succ(graph, v))
                if kept and reads in ("output", "both"):
                    continue
                steps.append({"op": "recompute", "node": v})
        steps += [{"op": "backward", "node": v} for v in b["bwd"]]
    return {"format": "memplan.schedule/1", "auto_free": True, "steps": steps}


def _succ(graph, v):
    return [n["id"] for n in graph["nodes"] if v in n.get("inputs", ())]
