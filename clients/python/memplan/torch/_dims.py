"""_dims.py - a training step as a memplan.graph/2 graph whose sizes and
times are laws in symbolic dimensions (batch, sequence length), from
replays at a few small values; and bind(), which turns such a graph back
into a concrete memplan.graph/1 at a binding.

Every replay is an ordinary export (_export.export_full) at one point. The
replays must describe the same graph: the same node ids, kinds, ops and
inputs (the trace is the same; what can differ is how storages alias,
which at batch 1 or for ops that copy only at some shapes changes which fx
nodes form a node). Where they differ the export stops and names the node
and the two points. A node's bwd_reads may differ between points (the
export chooses between two ways of counting a partly saved input by their
sizes): the graph then says what every point's reads cover, and the
graph's warnings say so.

Laws, their checks and bounds are _laws.py's. How inputs are made at
each point: inputs_at() takes the example inputs' slice or repetition
along each dimension's axis (axis 0 for batch unless the caller names
another); a caller whose model itself depends on a dimension (a buffer
sized by the sequence length) passes make(binding) -> (model, inputs).
"""

import torch

from . import _laws
from ._laws import DimsError

GRAPH_FORMAT = "memplan.graph/2"
WARNING_MAX = 2000  # bytes of one warning (the format's limit)
SIZE_FIELDS = ("bytes", "saved_bytes", "workspace_bytes")
TIME_FIELDS = ("time", "bwd_time")
_READS = {"none": (False, False), "output": (True, False), "inputs": (False, True),
          "both": (True, True)}


# ---- inputs at a point ---------------------------------------------------


def _resize(t, axis, n):
    """t with its `axis` cut or repeated (whole copies, then cut) to n."""
    have = t.shape[axis]
    if n <= have:
        return t.narrow(axis, 0, n).clone()
    reps = -(-n // have)
    return torch.cat([t] * reps, dim=axis).narrow(axis, 0, n).clone()


def example_value(example_inputs, axis):
    """The example inputs' size along `axis` (the first tensor's)."""
    for t in example_inputs:
        if isinstance(t, torch.Tensor) and t.dim() > axis:
            return int(t.shape[axis])
    return None


def inputs_at(example_inputs, axes, binding):
    """The example inputs resized to `binding` (name -> value) along each
    named dim's axis; tensors with too few axes are left as they are."""
    out = []
    for t in example_inputs:
        if isinstance(t, torch.Tensor):
            for name, n in binding.items():
                ax = axes[name]
                if t.dim() > ax:
                    t = _resize(t, ax, n)
        out.append(t)
    return tuple(out)


def axes_of(spec, axes):
    axes = dict(axes or {})
    out = {}
    for name in spec:
        if name in axes:
            out[name] = int(axes[name])
        elif name == "batch":
            out[name] = 0
        else:
            raise DimsError("memplan.torch: name the input axis of dim %r (axes={%r: AXIS}) or "
                            "pass make=" % (name, name))
    for name in axes:
        if name not in spec:
            raise DimsError("memplan.torch: axes names %r, which is not in dims" % name)
    return out


# ---- the symbolic export -------------------------------------------------


def _label(names, p):
    return ",".join("%s=%d" % (n, v) for n, v in zip(names, p))


def _structure(g):
    return [(n["id"], n.get("kind", "activation"), n.get("op"), tuple(n.get("inputs", ())))
            for n in g["nodes"]]


def _same_graph(names, ref_pt, ref, pt, g):
    a, b = _structure(ref), _structure(g)
    for x, y in zip(a, b):
        if x != y:
            raise DimsError("memplan.torch: the graph at %s differs from the graph at %s at "
                            "node %r (%s there, %s here): export at other values (batch 1 and "
                            "ops that copy only at some shapes change how storages alias)"
                            % (_label(names, pt), _label(names, ref_pt), x[0], x[1:], y[1:]))
    if len(a) != len(b):
        raise DimsError("memplan.torch: the graph at %s has %d nodes, at %s %d: export at other "
                        "values" % (_label(names, pt), len(b), _label(names, ref_pt), len(a)))


def symbolic_graph(spec, replays, default=None, name=None, parts=None):
    """memplan.graph/2 from replays: a dict point (value tuple) -> graph/1
    at that point, covering _laws.points(spec). default: name -> value
    (the largest exported value where not given). parts: point -> {node
    id: (forward workspace, backward workspace)}, whose larger is the
    node's workspace_bytes."""
    names = list(spec)
    fit_pts, check_pts = _laws.points(spec)
    pts = fit_pts + check_pts
    missing = [p for p in pts if p not in replays]
    if missing:
        raise DimsError("memplan.torch: no replay at %s" % _label(names, missing[0]))
    ref_pt = fit_pts[-1]
    ref = replays[ref_pt]
    for p in pts:
        _same_graph(names, ref_pt, ref, p, replays[p])
    warnings = []

    def size_law(what, ys, keep=None):
        law, broken = _laws.fit_size(spec, fit_pts, check_pts, ys)
        if broken:
            warnings.append(_broken_msg(names, what, broken))
        if keep is not None:
            keep.extend(law)
        return _laws.to_json(law, names, bound=broken is not None, integer=True)

    def workspace_law(what, split):
        """The larger of the forward's and the backward's workspace, each
        with its own law: the one that is larger at every binding, or the
        termwise larger of the two (above both) where they cross."""
        laws = []
        for k in (0, 1):
            law, broken = _laws.fit_size(spec, fit_pts, check_pts, [s[k] for s in split])
            if broken:
                return size_law(what, [max(s) for s in split])
            laws.append(law)
        law, crossed = _laws.larger(laws[0], laws[1])
        if crossed:
            warnings.append("%s: the forward's (%s) and the backward's (%s) cross; the termwise "
                            "larger law is a bound" % (what, _laws.text(laws[0], names),
                                                       _laws.text(laws[1], names)))
        return _laws.to_json(law, names, bound=crossed, integer=True)

    slow = []

    def time_law(what, ys, proxy):
        law, broken = _laws.fit_time(spec, pts, ys, proxy)
        if broken:
            slow.append((what, broken))
        return _laws.to_json(law, names, bound=broken is not None, integer=False)

    out_nodes, byte_laws = [], {}
    for i, n in enumerate(ref["nodes"]):
        at = [replays[p]["nodes"][i] for p in pts]
        d = {k: v for k, v in n.items() if k not in SIZE_FIELDS + TIME_FIELDS}
        byte_laws[n["id"]] = []
        for f in SIZE_FIELDS:
            ys = [int(m.get(f, 0)) for m in at]
            if not any(ys):
                continue
            what = "node '%s': %s" % (n["id"], f)
            split = [parts[p].get(n["id"]) for p in pts] if parts and f == "workspace_bytes" \
                else None
            if split and all(split):
                d[f] = workspace_law(what, split)
            else:
                d[f] = size_law(what, ys, byte_laws[n["id"]] if f == "bytes" else None)
        # what the node reads and writes, the measure of its work
        proxy = list(byte_laws[n["id"]])
        for u in n.get("inputs", ()):
            proxy += byte_laws.get(u, [])
        for f in TIME_FIELDS:
            if any(f in m for m in at):
                d[f] = time_law("node '%s' %s" % (n["id"], f), [float(m.get(f, 0.0)) for m in at],
                                proxy)
        reads = {m.get("bwd_reads") for m in at if "bwd_reads" in m}
        if len(reads) > 1:
            o = any(_READS[r][0] for r in reads)
            ins = any(_READS[r][1] for r in reads)
            d["bwd_reads"] = {v: k for k, v in _READS.items()}[(o, ins)]
            warnings.append("node '%s': bwd_reads differs between the replays (%s); %s used"
                            % (n["id"], ", ".join(sorted(reads)), d["bwd_reads"]))
        out_nodes.append(d)
    g = {"format": GRAPH_FORMAT, "name": name or ref.get("name", "model")}
    if "time_unit" in ref:
        g["time_unit"] = ref["time_unit"]
    pb = [int(replays[p].get("param_bytes", 0)) for p in pts]
    if any(pb):
        g["param_bytes"] = size_law("param_bytes", pb)
    default = default or {}
    g["dims"] = {nm: {"exported_at": list(spec[nm]), "default": int(default.get(nm) or spec[nm][-1]),
                      "min": 1} for nm in names}
    g["nodes"] = out_nodes
    if slow:
        items = ["%s %.4g ms at %s, law %.4g" % (w, b[1], _label(names, b[0]), b[2])
                 for w, b in slow]
        shown = []
        while items and sum(len(x) + 2 for x in shown) + len(items[0]) < WARNING_MAX - 200:
            shown.append(items.pop(0))
        warnings.append("times of %d nodes took longer at some point than their laws (%s%s); "
                        "bounds used" % (len(slow), "; ".join(shown),
                                         "; and %d more" % len(items) if items else ""))
    if warnings:
        g["warnings"] = [w if len(w.encode()) <= WARNING_MAX else
                         w.encode()[:WARNING_MAX - 3].decode(errors="ignore") + "..."
                         for w in warnings]
    return g


def _broken_msg(names, what, broken, unit="B"):
    p, meas, law = broken
    if p is None:
        return ("%s: the law %s would go negative at some binding; bound used" % (what, law))
    if law is None:
        return ("%s: no law with integer coefficients fits the replays; bound used" % what)
    if unit == "ms":
        return ("%s broke its law at %s (measured %.4g ms, law %.4g ms); bound used"
                % (what, _label(names, p), meas, law))
    return ("%s broke its law at %s (measured %d, law %d); bound used"
            % (what, _label(names, p), meas, law))


def export_symbolic(export_one, spec, default=None, name=None):
    """Run export_one(binding dict) -> Export at every point of spec (the
    default point's, or the largest, last) and return (graph/2, the last
    Export, replays by point)."""
    names = list(spec)
    fit_pts, check_pts = _laws.points(spec)
    pts = list(dict.fromkeys(fit_pts + check_pts))
    last = tuple((default or {}).get(n, spec[n][-1]) for n in names)
    order = sorted(pts, key=lambda p: (p == last, p))
    replays, parts, exp = {}, {}, None
    for p in order:
        exp = export_one(dict(zip(names, p)))
        replays[p] = exp.graph
        parts[p] = {g.id: (g.ws_fwd, g.ws_bwd) for g in exp.groups}
    return symbolic_graph(spec, replays, default, name, parts), exp, replays


# ---- binding -------------------------------------------------------------


def dims_of(graph):
    """The graph's dims (name -> {exported_at, default, min}); {} for a
    graph/1."""
    return dict(graph.get("dims") or {})


def binding_of(graph, values=None):
    """A full binding (name -> int) of the graph's dims: values where
    given, each dim's default elsewhere."""
    dims = dims_of(graph)
    values = dict(values or {})
    for k in values:
        if k not in dims:
            raise DimsError("$.dims.%s: the graph has no dim %r (it has %s)"
                            % (k, k, sorted(dims) or "none"))
    out = {}
    for k, d in dims.items():
        v = int(values.get(k, d.get("default", 1)))
        if v < int(d.get("min", 1)) or v > _laws.MAX_VALUE:
            raise DimsError("$.dims.%s: %d is outside %d..2^31" % (k, v, int(d.get("min", 1))))
        out[k] = v
    return out


def bind(graph, values=None):
    """The concrete memplan.graph/1 of a memplan.graph/2 at a binding
    (name -> value; unbound dims take their default). A graph/1 is
    returned as it is."""
    if graph.get("format") != GRAPH_FORMAT:
        if values:
            raise DimsError("$.dims: the graph has no dims")
        return graph
    b = binding_of(graph, values)
    names = list(b)
    x = [b[n] for n in names]

    def ev(v, where, integer):
        r = _laws.evaluate(v, x, names, where)
        if r < 0:
            raise DimsError("%s: law gives %s at %s" % (where, r, _label(names, x)))
        return int(r) if integer else float(r)

    g = {k: v for k, v in graph.items() if k not in ("dims", "warnings")}
    g["format"] = "memplan.graph/1"
    if "param_bytes" in g:
        g["param_bytes"] = ev(g["param_bytes"], "$.param_bytes", True)
    nodes = []
    for i, n in enumerate(graph["nodes"]):
        d = dict(n)
        for f in SIZE_FIELDS + TIME_FIELDS:
            if f in d:
                d[f] = ev(d[f], "$.nodes[%d].%s" % (i, f), f in SIZE_FIELDS)
        nodes.append(d)
    g["nodes"] = nodes
    return g


def forecast_info(graph, values=None):
    """{"dims": binding, "forecast": {"bounded_nodes", "extrapolated"}} as
    the planner reports it for a symbolic graph."""
    b = binding_of(graph, values)
    dims = dims_of(graph)
    bounded = sum(1 for n in graph["nodes"]
                  if any(isinstance(n.get(f), dict) and n[f].get("bound")
                         for f in SIZE_FIELDS + TIME_FIELDS))
    extra = any(not (min(dims[k]["exported_at"]) <= v <= max(dims[k]["exported_at"]))
                for k, v in b.items())
    return {"dims": b, "forecast": {"bounded_nodes": bounded, "extrapolated": extra}}


# On the CPU, torch 1.13 runs a convolution with 1x1 filters, stride 1 and
# no dilation with its own kernel when it computes on one thread and the
# batch is below this, and with MKLDNN (more workspace) from it on.
CPU_CONV1X1_SWITCH = 16


def _warn_conv_switch(g, exp, batches):
    gm = exp.gm
    dev = next((p.device for p in gm.parameters()), torch.device("cpu"))
    if dev.type != "cpu" or torch.get_num_threads() > 1 or max(batches) >= CPU_CONV1X1_SWITCH:
        return
    names = []
    for n in gm.graph.nodes:
        if n.op != "call_module":
            continue
        m = gm.get_submodule(n.target)
        if isinstance(m, torch.nn.Conv2d) and tuple(m.kernel_size) == (1, 1) and \
                tuple(m.stride) == (1, 1) and tuple(m.dilation) == (1, 1):
            names.append(exp.group_of.get(n.name, n.name))
    if names:
        g.setdefault("warnings", []).append(
            "batch: on one CPU thread torch runs the 1x1 convolutions (%s) with another kernel "
            "from batch %d on, which needs more workspace than these laws from batches %s "
            "say: export at batches from %d or with more threads (torch.set_num_threads)"
            % (", ".join(sorted(set(names))[:20]) + (", ..." if len(set(names)) > 20 else ""),
               CPU_CONV1X1_SWITCH, batches, CPU_CONV1X1_SWITCH))


def export_full_dims(model, example_inputs, loss_fn=None, optimizer=None, *, dims, axes=None,
                     make=None, name=None, **kw):
    """export_full with dims: the Export of the last replay (the default
    point) whose .graph is the memplan.graph/2; .replays holds each
    point's graph/1 and .binding the default binding."""
    from ._export import as_tuple, export_full
    spec = _laws.normalize(dims)
    if make is None:
        inputs = as_tuple(example_inputs)
        ax = axes_of(spec, axes)
        default = {n: example_value(inputs, ax[n]) for n in spec}

        def make(binding):
            return model, inputs_at(inputs, ax, binding)
    else:
        default = {}
    default = {n: v for n, v in default.items() if v}

    def one(binding):
        m, ins = make(binding)
        return export_full(m, ins, loss_fn, optimizer, name=name, **kw)

    g, exp, replays = export_symbolic(one, spec, default, name)
    if "batch" in spec:
        _warn_conv_switch(g, exp, spec["batch"])
    exp.graph = g
    exp.replays = replays
    exp.binding = binding_of(g)
    return exp
