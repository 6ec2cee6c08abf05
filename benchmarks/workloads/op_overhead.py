"""Per-op overhead: forward and backward of `(a * b).sum()` on 4-element float32 tensors.

The arithmetic is negligible, so this measures what a framework adds around each op:
dispatch, recording the graph and walking it backwards.
"""

import numpy as np

from .plan import Plan

NAME = "op_overhead"
DESCRIPTION = "forward+backward of (a*b).sum(), 4-element float32 tensors"
UNIT = "us"
TARGETS = {"torch": 2.0}
PLANS = {"full": Plan(rounds=21, iterations=3000, warmup=1000),
         "quick": Plan(rounds=3, iterations=300, warmup=100)}


def _inputs():
    """Two fixed random float32 vectors of 4 elements."""
    rng = np.random.default_rng(0)
    return rng.standard_normal(4, dtype=np.float32), rng.standard_normal(4, dtype=np.float32)


def build_dlfree():
    """Both inputs require grad; their gradients are cleared before every step."""
    import dlfree as dl

    a, b = (dl.tensor(v, requires_grad=True) for v in _inputs())

    def step():
        a.grad = b.grad = None
        (a * b).sum().backward()

    return step


def build_numpy():
    """The same loss and gradients written out: d(sum(a*b))/da = b."""
    a, b = _inputs()

    def step():
        loss = (a * b).sum()
        grad_a = b * 1.0
        grad_b = a * 1.0
        return loss, grad_a, grad_b

    return step


def build_torch():
    """As dl.free's: inputs that require grad, gradients cleared before every step."""
    import torch

    a, b = (torch.tensor(v, requires_grad=True) for v in _inputs())

    def step():
        a.grad = b.grad = None
        (a * b).sum().backward()

    return step


BUILDERS = {"dlfree": build_dlfree, "numpy": build_numpy, "torch": build_torch}
