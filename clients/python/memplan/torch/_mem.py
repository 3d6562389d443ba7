"""_mem.py - how memory is counted, shared by export (the prediction) and
measure_peak (the measurement), so that both count the same things.

Resident memory is what is allocated before a training step starts and is
still allocated after it: parameters, buffers, parameter gradients kept for
the optimizer, optimizer state and the example inputs. Each storage counts
once, at its full size (a view does not count twice).

The dynamic part of a step is measured on CPU from the profiler's allocator
events: each `[memory]` event is an allocation (positive bytes) or a free
(negative); their running sum in time order is the memory allocated since
the region began, and its maximum is the region's peak above what was
resident when it started. On CUDA the allocator's own peak counter is used.

Times (clock()) are CPU time of the calling thread when torch runs on one
thread, which keeps them steady on a machine shared with other work.
"""

import contextlib
import time

import torch
import torch.fx
from torch.autograd import (ProfilerActivity, ProfilerConfig, ProfilerState,
                            _disable_profiler, _enable_profiler,
                            _prepare_profiler)

from torch._C._autograd import DeviceType

try:
    from torch._C._profiler import _ExperimentalConfig
except ImportError:  # pragma: no cover - older torch
    from torch._C._autograd import _ExperimentalConfig


def clock(device=None):
    """The clock steps and nodes are timed with: on CUDA wall time after a
    synchronize; on CPU this thread's CPU time when torch computes on this
    thread alone (it does not count time the thread waits for a busy
    machine's cores), wall time otherwise."""
    if device is not None and torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)
        return time.perf_counter()
    if torch.get_num_threads() == 1:
        return time.thread_time()
    return time.perf_counter()


def storage_key(t):
    """(address, bytes) of the storage behind tensor t, or None."""
    if not isinstance(t, torch.Tensor) or t.layout != torch.strided:
        return None
    try:
        s = t.storage()
    except (RuntimeError, NotImplementedError):
        return None
    n = s.nbytes()
    if n == 0:
        return None
    return (s.data_ptr(), n)


def tensors_in(obj):
    """Every tensor inside nested tuples, lists and dicts, in order."""
    if isinstance(obj, torch.Tensor):
        yield obj
    elif isinstance(obj, (tuple, list)):
        for o in obj:
            yield from tensors_in(o)
    elif isinstance(obj, dict):
        for o in obj.values():
            yield from tensors_in(o)


def storage_bytes(tensors):
    """Bytes of the distinct storages behind `tensors`."""
    seen = {}
    for t in tensors:
        k = storage_key(t)
        if k is not None:
            seen[k[0]] = k[1]
    return sum(seen.values())


def model_state_tensors(model, optimizer=None):
    """Tensors that stay allocated across training steps: parameters, their
    gradients, buffers, tensor constants of traced modules, optimizer
    state."""
    out = []
    for p in model.parameters():
        out.append(p)
        if p.grad is not None:
            out.append(p.grad)
    out.extend(model.buffers())
    for mod in model.modules():
        if isinstance(mod, torch.fx.GraphModule):
            for n in mod.graph.nodes:
                if n.op == "get_attr":
                    v = _get_attr(mod, n.target)
                    if isinstance(v, torch.Tensor):
                        out.append(v)
    if optimizer is not None:
        for st in optimizer.state.values():
            out.extend(tensors_in(st))
    return out


def _get_attr(mod, target):
    for a in target.split("."):
        mod = getattr(mod, a)
    return mod


def resident_bytes(model, optimizer, inputs):
    """(state bytes, input bytes): the two parts of resident memory, each
    storage counted once (an input sharing a parameter's storage counts as
    state)."""
    state = model_state_tensors(model, optimizer)
    seen = set()
    sb = ib = 0
    for t in state:
        k = storage_key(t)
        if k is not None and k[0] not in seen:
            seen.add(k[0])
            sb += k[1]
    for t in tensors_in(inputs):
        k = storage_key(t)
        if k is not None and k[0] not in seen:
            seen.add(k[0])
            ib += k[1]
    return sb, ib


_TRACED = [DeviceType.CPU]  # the device whose allocations AllocTrace counts


@contextlib.contextmanager
def traced_device(device):
    """AllocTrace counts `device`'s allocations inside the block (export on
    a CUDA model: the node measurements are of GPU memory)."""
    kind = DeviceType.CUDA if torch.device(device).type == "cuda" else DeviceType.CPU
    _TRACED.append(kind)
    try:
        yield
    finally:
        _TRACED.pop()


class AllocTrace:
    """Allocator events of a region (CPU profiler; CUDA allocations inside
    traced_device("cuda")). After the `with` block: `peak` is the most
    bytes allocated at once above the start, `net` what is still allocated
    at the end, `trace` the running sums."""

    def __init__(self):
        self.peak = 0
        self.net = 0
        self.events = []
        self.kind = _TRACED[-1]

    def __enter__(self):
        # kind, record_shapes, profile_memory, with_stack, with_flops,
        # with_modules, experimental
        self._config = ProfilerConfig(ProfilerState.KINETO, False, True, False, False, False,
                                      _ExperimentalConfig())
        acts = {ProfilerActivity.CPU}
        if self.kind == DeviceType.CUDA:
            acts.add(ProfilerActivity.CUDA)
        _prepare_profiler(self._config, acts)
        _enable_profiler(self._config, acts)
        return self

    def __exit__(self, *exc):
        res = _disable_profiler()
        ev = [(e.start_us(), i, e.nbytes()) for i, e in enumerate(res.events())
              if e.name() == "[memory]" and e.device_type() == self.kind]
        ev.sort()
        run = peak = 0
        for _, _, nb in ev:
            run += nb
            if run > peak:
                peak = run
        self.peak, self.net = peak, run
        self.events = [nb for _, _, nb in ev]
        return False


@contextlib.contextmanager
def cuda_peak(device):
    """Peak allocated bytes above the start on a CUDA device: yields a dict
    filled with 'peak' and 'net' on exit."""
    torch.cuda.synchronize(device)
    start = torch.cuda.memory_allocated(device)
    torch.cuda.reset_peak_memory_stats(device)
    out = {}
    yield out
    torch.cuda.synchronize(device)
    out["peak"] = torch.cuda.max_memory_allocated(device) - start
    out["net"] = torch.cuda.memory_allocated(device) - start
    # what the caching allocator held from the device at its most, in all
    # (resident memory's blocks included): allocated plus rounding and cache
    out["reserved_peak"] = torch.cuda.max_memory_reserved(device)
