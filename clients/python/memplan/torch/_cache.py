"""_cache.py - measurements export reuses: each node's forward and backward
times and workspaces, from an earlier export of the same model on the same
device.

Measuring is most of an export's time (every node run alone, and `reps`
timed training steps), and times measured again differ in their last
digits, so the graph and its hash would change on every run and the
daemon's cache would never hit. An export whose key matches an earlier
one takes that one's measurements instead; everything else (sizes, what
ops save, edges) comes from its own recording run as always.

The key is a SHA-256 over what the measurements depend on: the traced
code, every submodule's repr (kernel sizes, strides, ...), the name, shape,
dtype and requires_grad of each parameter and buffer, the shape, dtype and
device of each input, the loss function's code, the device (its name on
CUDA), torch's version and thread count, and `reps`. Values of weights and
inputs are not in it: they do not change what a node costs.

Entries live in this process and, unless $MEMPLAN_TORCH_CACHE is "off", as
one JSON file per key in that directory (default:
$XDG_CACHE_HOME/memplan-torch, else ~/.cache/memplan-torch), so that a job
started again reuses them. A file that cannot be read or written is
ignored: the export then measures.
"""

import hashlib
import json
import os

import torch

from . import _mem

_MEMORY = {}
VERSION = 1


def _dir():
    d = os.environ.get("MEMPLAN_TORCH_CACHE")
    if d == "off":
        return None
    if d:
        return d
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "memplan-torch")


def _code_text(code):
    """A code object's bytecode and constants, nested code objects
    included, without anything that differs between processes (a code
    object's repr holds its address)."""
    consts = [_code_text(c) if hasattr(c, "co_code") else repr(c) for c in code.co_consts]
    return "%s(%s)" % (code.co_code.hex(), ",".join(consts))


def _code_of(fn):
    code = getattr(fn, "__code__", None)
    if code is None:
        call = getattr(type(fn), "__call__", None)
        code = getattr(call, "__code__", None)
    if code is None:
        return type(fn).__qualname__
    return "%s:%s" % (getattr(fn, "__qualname__", ""), _code_text(code))


def key(gm, inputs, loss_fn, reps, device):
    h = hashlib.sha256()

    def put(*parts):
        for p in parts:
            h.update(str(p).encode())
            h.update(b"\0")

    put("memplan.torch.cache", VERSION, torch.__version__, torch.get_num_threads(), reps)
    dev = torch.device(device)
    put(dev.type, torch.cuda.get_device_name(dev) if dev.type == "cuda" else "")
    put(gm.code)
    for name, mod in gm.named_modules():
        put(name, type(mod).__name__, repr(mod) if not list(mod.children()) else "")
    for name, t in list(gm.named_parameters()) + list(gm.named_buffers()):
        put(name, tuple(t.shape), t.dtype, t.requires_grad)
    for t in _mem.tensors_in(inputs):
        put(tuple(t.shape), t.dtype, t.device.type)
    put(_code_of(loss_fn))
    return h.hexdigest()


def get(k, ids):
    """The entry for key k, if it has every group id in ids."""
    e = _MEMORY.get(k)
    if e is None:
        d = _dir()
        if d:
            try:
                with open(os.path.join(d, k + ".json")) as f:
                    e = json.load(f)
            except (OSError, ValueError):
                e = None
    if not isinstance(e, dict) or e.get("version") != VERSION:
        return None
    nodes = e.get("nodes")
    if not isinstance(nodes, dict) or set(nodes) != set(ids):
        return None
    _MEMORY[k] = e
    return nodes


def put(k, nodes):
    e = {"version": VERSION, "nodes": nodes}
    _MEMORY[k] = e
    d = _dir()
    if not d:
        return
    try:
        os.makedirs(d, exist_ok=True)
        tmp = os.path.join(d, "%s.%d.tmp" % (k, os.getpid()))
        with open(tmp, "w") as f:
            json.dump(e, f)
        os.replace(tmp, os.path.join(d, k + ".json"))
    except OSError:
        pass


def clear():
    """Forget this process's entries (the files stay)."""
    _MEMORY.clear()
