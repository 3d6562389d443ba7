"""_measure.py - the real peak memory and time of one training step.

A step is: forward, loss, backward, and optimizer.step() when an optimizer
is given. One warm-up step runs first and the gradients are zeroed in
place, so that parameter gradients and optimizer state are allocated before
the measured step, as in steady-state training. The measured peak is the
resident memory (parameters, buffers, gradients, optimizer state, inputs:
see _mem.py, the same count export puts in param_bytes and the input
nodes) plus the peak the allocator reaches above it during the step. The
model and optimizer are left as they were.
"""

import gc
import statistics

import torch

from . import _mem
from ._export import as_tuple, default_loss, preserved, warm_step, zero_grads


def _step(model, inputs, loss_fn, optimizer):
    # No reference to the output outlives the loss: a caller holding it
    # would keep it alive through backward, which the graph does not model.
    loss = loss_fn(model(*inputs))
    loss.backward()
    del loss
    if optimizer is not None:
        optimizer.step()


def _device_of(model, inputs):
    for t in list(_mem.tensors_in(inputs)) + list(model.parameters()):
        return t.device
    return torch.device("cpu")


def measure(model, example_inputs, loss_fn=None, optimizer=None, device=None, time_reps=3):
    """Peak and time of one training step, as a dict:
    peak_bytes (resident + dynamic), resident_bytes, state_bytes,
    input_bytes, dynamic_peak_bytes (above resident), time_ms (median of
    time_reps timed steps; 0 steps: not timed); on CUDA also
    reserved_peak_bytes (torch.cuda.max_memory_reserved during the step)."""
    inputs = as_tuple(example_inputs)
    loss_fn = loss_fn or default_loss
    dev = torch.device(device) if device is not None else _device_of(model, inputs)
    was_training = model.training
    model.train()
    try:
        with preserved(model, optimizer):
            warm_step(model, inputs, loss_fn, optimizer)
            state, inp = _mem.resident_bytes(model, optimizer, inputs)
            gc.collect()
            reserved = None
            if dev.type == "cuda":
                with _mem.cuda_peak(dev) as r:
                    _step(model, inputs, loss_fn, optimizer)
                dyn, reserved = r["peak"], r["reserved_peak"]
            else:
                with _mem.AllocTrace() as tr:
                    _step(model, inputs, loss_fn, optimizer)
                dyn = tr.peak
            zero_grads(model)
            times = []
            for _ in range(time_reps):
                t0 = _mem.clock(dev)
                _step(model, inputs, loss_fn, optimizer)
                times.append(_mem.clock(dev) - t0)
                zero_grads(model)
    finally:
        model.train(was_training)
    out = {"peak_bytes": state + inp + dyn, "resident_bytes": state + inp, "state_bytes": state,
           "input_bytes": inp, "dynamic_peak_bytes": dyn,
           "time_ms": statistics.median(times) * 1000.0 if times else 0.0}
    if reserved is not None:  # CUDA: the caching allocator's reserved peak
        out["reserved_peak_bytes"] = reserved
    return out


def measure_peak(model, example_inputs, loss_fn=None, optimizer=None, device=None):
    """The real peak memory of one training step in bytes, resident memory
    included (see measure())."""
    return measure(model, example_inputs, loss_fn, optimizer, device, time_reps=0)["peak_bytes"]
