"""_trace.py - torch.fx tracing with an error that names where it failed.

symbolic_trace's own errors (control flow on a traced value, an
untraceable builtin, ...) say what went wrong but not where. The tracer
here remembers the module it was inside and the last graph node it made,
and TraceError names both.

Tuple unpacking of a traced value (`n, c, h, w = x.shape`,
`x1, x2 = x.chunk(2)`, `out, _ = lstm(x)`). torch.fx's Proxy.__iter__
reads the caller's bytecode to see how many values an UNPACK_SEQUENCE
wants, indexing the instruction list by f_lasti // 2. From Python 3.11 on,
that list leaves out the inline CACHE entries, so the index lands on
another instruction and tracing fails with "Proxy object cannot be
iterated" (torch 1.13 on Debian's Python 3.11: torchvision's ShuffleNet-V2
and VisionTransformer). The proxies made here find the instruction by its
offset instead, which is right on every version.
"""

import dis
import inspect

import torch
import torch.fx as fx


class _Proxy(fx.Proxy):
    def __iter__(self):
        frame = inspect.currentframe()
        caller = frame.f_back if frame is not None else None
        del frame
        if caller is not None:
            at = caller.f_lasti
            for inst in dis.get_instructions(caller.f_code):
                if inst.offset == at:
                    if inst.opname == "UNPACK_SEQUENCE":
                        return (self[i] for i in range(inst.argval))
                    break
        return self.tracer.iter(self)

    def __getattr__(self, k):
        return _Attribute(self, k)


class _Attribute(fx.proxy.Attribute):
    """x.shape and other attributes of a traced value, unpackable too."""
    __iter__ = _Proxy.__iter__


class TraceError(RuntimeError):
    """The model cannot be traced by torch.fx; the message names the
    module and the last node traced before the failure."""


class _Tracer(fx.Tracer):
    def __init__(self):
        super().__init__()
        self.module_stack = []
        self.fail_stack = None
        self.last_node = None

    def proxy(self, node):
        return _Proxy(node, self)

    def create_node(self, kind, target, args, kwargs, name=None, type_expr=None):
        node = super().create_node(kind, target, args, kwargs, name, type_expr)
        self.last_node = node
        return node

    def call_module(self, m, forward, args, kwargs):
        self.module_stack.append((self.path_of_module(m), type(m).__name__))
        try:
            return super().call_module(m, forward, args, kwargs)
        except Exception:
            if self.fail_stack is None:
                self.fail_stack = list(self.module_stack)
            raise
        finally:
            self.module_stack.pop()


def _describe(node):
    if node is None:
        return "before any operation"
    tgt = node.target
    if callable(tgt):
        tgt = getattr(tgt, "__name__", repr(tgt))
    return "after node '%s' (%s %s)" % (node.name, node.op, tgt)


def trace(model):
    """A torch.fx GraphModule for model (returned as is when it already is
    one). Raises TraceError naming the module and node where tracing
    stopped."""
    if isinstance(model, fx.GraphModule):
        return model
    if not isinstance(model, torch.nn.Module):
        raise TypeError("memplan.torch: expected an nn.Module, got %s" % type(model).__name__)
    tracer = _Tracer()
    try:
        graph = tracer.trace(model)
    except Exception as e:  # noqa: BLE001 - re-raised with a location
        stack = tracer.fail_stack or []
        where = stack[-1] if stack else ("", type(model).__name__)
        mod = "module '%s' (%s)" % where if where[0] else "the model's own forward (%s)" % where[1]
        raise TraceError("memplan.torch: torch.fx cannot trace %s, %s: %s: %s"
                         % (mod, _describe(tracer.last_node), type(e).__name__, e)) from e
    name = model.__class__.__name__
    return fx.GraphModule(tracer.root, graph, name)
