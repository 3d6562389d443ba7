"""models.py - models for tests and the fidelity benchmark, and the loader
for the command line's model specs.

transformer(): a small GPT-like decoder with dropout after the attention
weights, the attention projection and the MLP, written out op by op (no
nn.MultiheadAttention) so torch.fx sees every tensor. Dropout makes it the
case where what autograd keeps differs most from a shapes-only graph: each
dropout saves a mask of its input's size.

load(spec, batch): `torchvision:NAME` (input batch x 3 x 64 x 64 unless
image_size says otherwise) or `FILE.py:FUNC`, where FUNC(batch) or FUNC()
returns (model, example_inputs).
"""

import importlib.util
import inspect
import math
import os

import torch
import torch.nn as nn
import torch.nn.functional as F


class _Block(nn.Module):
    def __init__(self, dim, heads, seq, p):
        super().__init__()
        self.heads = heads
        self.dim = dim
        self.ln1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.ln2 = nn.LayerNorm(dim)
        self.fc = nn.Linear(dim, 4 * dim)
        self.out = nn.Linear(4 * dim, dim)
        self.attn_drop = nn.Dropout(p)
        self.resid_drop = nn.Dropout(p)
        self.mlp_drop = nn.Dropout(p)
        # future positions, for sequences of exactly `seq` tokens
        self.register_buffer("future", ~torch.tril(torch.ones(seq, seq, dtype=torch.bool))
                             .view(1, 1, seq, seq), persistent=False)

    def forward(self, x):
        b, t = x.size(0), x.size(1)
        c, h = self.dim, self.heads
        qkv = self.qkv(self.ln1(x)).split(c, dim=2)
        q, k, v = qkv[0], qkv[1], qkv[2]
        q = q.reshape(b, t, h, c // h).transpose(1, 2)
        k = k.reshape(b, t, h, c // h).transpose(1, 2)
        v = v.reshape(b, t, h, c // h).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(c // h))
        att = att.masked_fill(self.future, float("-inf"))
        att = self.attn_drop(F.softmax(att, dim=-1))
        y = (att @ v).transpose(1, 2).reshape(b, t, c)
        x = x + self.resid_drop(self.proj(y))
        x = x + self.mlp_drop(self.out(F.gelu(self.fc(self.ln2(x)))))
        return x


class TinyGPT(nn.Module):
    def __init__(self, vocab=256, seq=32, dim=64, heads=4, layers=2, p=0.1):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Parameter(torch.zeros(1, seq, dim))
        self.drop = nn.Dropout(p)
        self.blocks = nn.Sequential(*[_Block(dim, heads, seq, p) for _ in range(layers)])
        self.ln = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=False)

    def forward(self, idx):
        t = idx.size(1)
        x = self.drop(self.tok(idx) + self.pos[:, :t, :])
        x = self.blocks(x)
        return self.head(self.ln(x))


def transformer(batch=4, seq=32, dim=64, heads=4, layers=2, vocab=256, p=0.1):
    """(TinyGPT, (token ids,)) with a fixed seed."""
    g = torch.Generator().manual_seed(0)
    with torch.random.fork_rng():
        torch.manual_seed(0)
        model = TinyGPT(vocab, seq, dim, heads, layers, p)
    idx = torch.randint(0, vocab, (batch, seq), generator=g)
    return model, (idx,)


def torchvision_model(name, batch, image_size=64):
    import torchvision
    ctor = getattr(torchvision.models, name, None)
    if ctor is None:
        raise ValueError("memplan.torch: torchvision has no model %r" % name)
    with torch.random.fork_rng():
        torch.manual_seed(0)
        model = ctor()
        x = torch.randn(batch, 3, image_size, image_size)
    return model, (x,)


def load(spec, batch, image_size=64):
    """(model, example_inputs) for a command-line model spec."""
    kind, sep, rest = spec.partition(":")
    if not sep:
        raise ValueError("memplan.torch: model spec %r is neither torchvision:NAME nor FILE.py:FUNC"
                         % spec)
    if kind == "torchvision":
        return torchvision_model(rest, batch, image_size)
    path, func = spec.rsplit(":", 1)
    if not path.endswith(".py") or not os.path.exists(path):
        raise ValueError("memplan.torch: no Python file %r for model spec %r" % (path, spec))
    mspec = importlib.util.spec_from_file_location("memplan_user_model", path)
    mod = importlib.util.module_from_spec(mspec)
    mspec.loader.exec_module(mod)
    fn = getattr(mod, func, None)
    if fn is None:
        raise ValueError("memplan.torch: %s defines no %s" % (path, func))
    params = inspect.signature(fn).parameters
    out = fn(batch) if params else fn()
    model, inputs = out
    return model, inputs
