"""One AdamW step over a 10M-parameter model split into 100 float32 tensors.

Each tensor has 100,000 elements, in a few shapes; the weights start as N(0, 0.02²), as
a transformer's do, and the gradients are fixed random numbers set once, the same for
every framework. lr 1e-3 and weight decay 0.01, defaults otherwise. A step is
`optimizer.step()` alone. Every `step()` returns [first parameter, last parameter], the
live tensors, which the smoke test compares across frameworks after one step and after
a second.
"""

import numpy as np

from .optimizer_model import (
    PLANS,  # noqa: F401  (the workload's plans, shared by the optimizer workloads)
    dlfree_parameters,
    model,
    numpy_moments,
    stepping,
    torch_parameters,
)

NAME = "adamw_step"
DESCRIPTION = "AdamW step, 100 float32 tensors of 100,000 elements (10M parameters)"
UNIT = "ms"
TARGETS = {"torch": 1.5}

LR, WEIGHT_DECAY = 1e-3, 0.01
BETAS, EPS = (0.9, 0.999), 1e-8


def build_dlfree():
    """`dlfree.optim.AdamW` on `dl.Parameter`s whose gradients are set once."""
    from dlfree.optim import AdamW

    params = dlfree_parameters()
    return stepping(AdamW(params, lr=LR, weight_decay=WEIGHT_DECAY), params)


def build_numpy():
    """By hand, as fast as NumPy allows: per tensor, in-place ufuncs with `out=` into one
    scratch buffer that stays in cache, torch's update rule and order of operations."""
    params, grads = model()
    exp_avgs, exp_avg_sqs, scratch = numpy_moments(params)
    beta1, beta2 = BETAS
    steps = 0

    def step():
        nonlocal steps
        steps += 1
        bias_correction1 = 1 - beta1 ** steps
        bias_correction2_sqrt = (1 - beta2 ** steps) ** 0.5
        # m / (sqrt(v) / c + eps) == c * m / (sqrt(v) + c * eps): one pass fewer
        step_size = LR / bias_correction1 * bias_correction2_sqrt
        for p, g, m, v, tmp in zip(params, grads, exp_avgs, exp_avg_sqs, scratch, strict=True):
            np.multiply(p, 1 - LR * WEIGHT_DECAY, out=p)
            np.subtract(g, m, out=tmp)
            np.multiply(tmp, 1 - beta1, out=tmp)
            np.add(m, tmp, out=m)
            np.multiply(v, beta2, out=v)
            np.multiply(g, g, out=tmp)
            np.multiply(tmp, 1 - beta2, out=tmp)
            np.add(v, tmp, out=v)
            np.sqrt(v, out=tmp)
            np.add(tmp, EPS * bias_correction2_sqrt, out=tmp)
            np.divide(m, tmp, out=tmp)
            np.multiply(tmp, step_size, out=tmp)
            np.subtract(p, tmp, out=p)
        return [params[0], params[-1]]

    return step


def build_torch():
    """`torch.optim.AdamW(foreach=True)`: torch's multi-tensor implementation."""
    import torch

    params = torch_parameters()
    return stepping(torch.optim.AdamW(params, lr=LR, weight_decay=WEIGHT_DECAY, foreach=True),
                    params)


BUILDERS = {"dlfree": build_dlfree, "numpy": build_numpy, "torch": build_torch}
