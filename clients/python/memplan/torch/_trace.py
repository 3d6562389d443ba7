"""_trace.py - torch.fx tracing with an error that names where it failed.

symbolic_trace's own errors (control flow on a traced value, an
untraceable builtin, ...) say what went wrong but not where. The tracer
here remembers the module it was inside and the last graph node it made,
and TraceError names both.
"""

import torch
import torch.fx as fx


class TraceError(RuntimeError):
    """The model cannot be traced by torch.fx; the message names the
    module and the last node traced before the failure."""


class _Tracer(fx.Tracer):
    def __init__(self):
        super().__init__()
        self.module_stack = []
        self.fail_stack = None
        self.last_node = None

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
