"""One AdamW step over a 10M-parameter model split into 100 float32 tensors.

Each tensor has 100,000 elements, in a few shapes; the weights start as N(0, 0.02²), as
a transformer's do, and the gradients are fixed random numbers set once, the same for
every framework. lr 1e-3 and weight decay 0.01, defaults otherwise. A step is
`optimizer.step()` alone. Every `step()` returns [first parameter, last parameter], the
live tensors, which the smoke test compares across frameworks after one step and after
a second.
"""

import numpy as np

from .plan import Plan

NAME = "adamw_step"
DESCRIPTION = "AdamW step, 100 float32 tensors of 100,000 elements (10M parameters)"
UNIT = "ms"
TARGETS = {"torch": 1.5}
# torch's first two steps take up to 10x longer while fresh pages are faulted in for its
# temporaries; the warm-up gets past them.
PLANS = {"full": Plan(rounds=15, iterations=5, warmup=5),
         "quick": Plan(rounds=3, iterations=2, warmup=3)}

# Shapes of 100,000 elements each, repeated 25 times: vectors, matrices and a 3-d tensor,
# so that no implementation can count on one layout.
SHAPES = [(100_000,), (1000, 100), (250, 400), (20, 50, 100)] * 25
INIT_STD = 0.02
LR, WEIGHT_DECAY = 1e-3, 0.01
BETAS, EPS = (0.9, 0.999), 1e-8


def model():
    """([parameter], [gradient]): the float32 arrays of the 100 tensors, seed 0."""
    rng = np.random.default_rng(0)
    params = [rng.standard_normal(shape, dtype=np.float32) * np.float32(INIT_STD)
              for shape in SHAPES]
    grads = [rng.standard_normal(shape, dtype=np.float32) for shape in SHAPES]
    return params, grads


def build_dlfree():
    """`dlfree.optim.AdamW` on `dl.Parameter`s whose gradients are set once."""
    import dlfree as dl
    from dlfree.optim import AdamW

    params_np, grads_np = model()
    params = [dl.Parameter(p) for p in params_np]
    for p, g in zip(params, grads_np, strict=True):
        p.grad = dl.tensor(g)
    optimizer = AdamW(params, lr=LR, weight_decay=WEIGHT_DECAY)

    def step():
        optimizer.step()
        return [params[0], params[-1]]

    return step


def build_numpy():
    """By hand, as fast as NumPy allows: per tensor, in-place ufuncs with `out=` into one
    scratch buffer that stays in cache, torch's update rule and order of operations."""
    params, grads = model()
    exp_avgs = [np.zeros_like(p) for p in params]
    exp_avg_sqs = [np.zeros_like(p) for p in params]
    buffer = np.empty(max(p.size for p in params), dtype=np.float32)
    scratch = [buffer[:p.size].reshape(p.shape) for p in params]
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

    params_np, grads_np = model()
    params = [torch.nn.Parameter(torch.from_numpy(p)) for p in params_np]
    for p, g in zip(params, grads_np, strict=True):
        p.grad = torch.from_numpy(g)
    optimizer = torch.optim.AdamW(params, lr=LR, weight_decay=WEIGHT_DECAY, foreach=True)

    def step():
        optimizer.step()
        return [params[0], params[-1]]

    return step


BUILDERS = {"dlfree": build_dlfree, "numpy": build_numpy, "torch": build_torch}
