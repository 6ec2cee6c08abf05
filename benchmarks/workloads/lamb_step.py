"""One LAMB step over adamw_step's model: 10M parameters split into 100 float32 tensors.

The same weights and fixed gradients as adamw_step; LAMB with torch_optimizer 0.3.0's
defaults (lr 1e-3, betas (0.9, 0.999), eps 1e-6, no weight decay, trust ratio clamped at
10, no bias correction). A step is `optimizer.step()` alone. Every `step()` returns
[first parameter, last parameter], the live tensors, which the smoke test compares across
frameworks after one step and after a second.
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

NAME = "lamb_step"
DESCRIPTION = "LAMB step, 100 float32 tensors of 100,000 elements (10M parameters)"
UNIT = "ms"
TARGETS = {"torch_optimizer": 1.5}

LR, BETAS, EPS, CLAMP_VALUE = 1e-3, (0.9, 0.999), 1e-6, 10.0


def build_dlfree():
    """`dlfree.optim.LAMB` with its defaults on `dl.Parameter`s whose gradients are set once."""
    from dlfree.optim import LAMB

    params = dlfree_parameters()
    return stepping(LAMB(params), params)


def build_numpy():
    """By hand, as fast as NumPy allows, with torch_optimizer's rule: per tensor, in-place
    ufuncs with `out=` into one scratch buffer that stays in cache, then

        r = m / (sqrt(v) + eps);   trust = min(||p||, 10) / ||r||  (1 if either norm is 0)
        p -= lr * trust * r
    """
    params, grads = model()
    exp_avgs, exp_avg_sqs, scratch = numpy_moments(params)
    beta1, beta2 = BETAS

    def step():
        for p, g, m, v, tmp in zip(params, grads, exp_avgs, exp_avg_sqs, scratch, strict=True):
            np.multiply(m, beta1, out=m)
            np.multiply(g, 1 - beta1, out=tmp)
            np.add(m, tmp, out=m)
            np.multiply(v, beta2, out=v)
            np.multiply(g, g, out=tmp)
            np.multiply(tmp, 1 - beta2, out=tmp)
            np.add(v, tmp, out=v)
            np.sqrt(v, out=tmp)
            np.add(tmp, EPS, out=tmp)
            np.divide(m, tmp, out=tmp)
            weight_norm = min(np.linalg.norm(p), CLAMP_VALUE)
            step_norm = np.linalg.norm(tmp)
            trust = weight_norm / step_norm if weight_norm > 0 and step_norm > 0 else 1.0
            np.multiply(tmp, LR * trust, out=tmp)
            np.subtract(p, tmp, out=p)
        return [params[0], params[-1]]

    return step


def build_torch_optimizer():
    """`torch_optimizer.Lamb` with its defaults (it updates one tensor at a time)."""
    import torch_optimizer

    params = torch_parameters()
    return stepping(torch_optimizer.Lamb(params), params)


BUILDERS = {"dlfree": build_dlfree, "numpy": build_numpy,
            "torch_optimizer": build_torch_optimizer}
