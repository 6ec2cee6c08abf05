"""Forward and backward of LayerNorm(768) -> exact GELU -> LayerNorm(768) on (4096, 768).

float32; x requires grad, both layer norms have an affine weight and bias (eps 1e-5).
The backward pass starts from a fixed random output gradient. Inputs, weights and the
output gradient are fixed random numbers, the same for every framework. Every `step()`
returns (out, grad x, grad w1, grad b1, grad w2, grad b2).
"""

import numpy as np

from .plan import Plan

NAME = "norm_gelu"
DESCRIPTION = "LayerNorm(768) -> GELU (exact) -> LayerNorm(768), (4096, 768), fwd+bwd, float32"
UNIT = "ms"
REFERENCE = "torch"
TARGETS = {"torch": 1.3}
PLANS = {"full": Plan(rounds=21, iterations=10, warmup=5),
         "quick": Plan(rounds=3, iterations=3, warmup=2)}

ROWS, DIM = 4096, 768
EPS = 1e-5
# No matrix products: a nominal count per element of the textbook kernels (a layer norm
# 8 forward and 12 backward, exact GELU 10 forward and 12 backward), see __init__.py.
FLOPS = ROWS * DIM * (2 * (8 + 12) + 10 + 12)


def _problem():
    """x (ROWS, DIM), [w1, b1, w2, b2] (DIM,) each, the output gradient (ROWS, DIM)."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((ROWS, DIM), dtype=np.float32)
    params = [np.float32(1) + rng.standard_normal(DIM, dtype=np.float32) * np.float32(0.1),
              rng.standard_normal(DIM, dtype=np.float32) * np.float32(0.1),
              np.float32(1) + rng.standard_normal(DIM, dtype=np.float32) * np.float32(0.1),
              rng.standard_normal(DIM, dtype=np.float32) * np.float32(0.1)]
    grad_out = rng.standard_normal((ROWS, DIM), dtype=np.float32)
    return x, params, grad_out


def _autograd_step(F, x, params, grad_out):
    """The chain in a framework with torch's API (`F` its functional module); dl.free
    and torch run this same code."""
    w1, b1, w2, b2 = params

    def step():
        x.grad = None
        for p in params:
            p.grad = None
        h = F.gelu(F.layer_norm(x, (DIM,), w1, b1, EPS))
        out = F.layer_norm(h, (DIM,), w2, b2, EPS)
        out.backward(grad_out)
        return (out, x.grad, *(p.grad for p in params))

    return step


def build_dlfree():
    """Public API only (`dlfree.functional`), gradients cleared every step."""
    import dlfree as dl
    import dlfree.functional as F

    x_np, params_np, g_np = _problem()
    return _autograd_step(F, dl.tensor(x_np, requires_grad=True),
                          [dl.Parameter(p) for p in params_np], dl.tensor(g_np))


def build_torch():
    """`torch.nn.functional` (`layer_norm`, `gelu`) and autograd."""
    import torch
    import torch.nn.functional as F

    x_np, params_np, g_np = _problem()
    return _autograd_step(F, torch.tensor(x_np, requires_grad=True),
                          [torch.tensor(p, requires_grad=True) for p in params_np],
                          torch.from_numpy(g_np))


BUILDERS = {"dlfree": build_dlfree, "torch": build_torch}
