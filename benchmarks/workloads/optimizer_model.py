"""The model the optimizer-step workloads share: 10M float32 parameters in 100 tensors with
fixed gradients, its set-up in each framework (imported inside the builders), and the
timing plans of those workloads."""

import numpy as np

from .plan import Plan

# Shapes of 100,000 elements each, repeated 25 times: vectors, matrices and a 3-d tensor,
# so that no implementation can count on one layout.
SHAPES = [(100_000,), (1000, 100), (250, 400), (20, 50, 100)] * 25
INIT_STD = 0.02
# torch's first two steps take up to 10x longer while fresh pages are faulted in for its
# temporaries; the warm-up gets past them.
PLANS = {"full": Plan(rounds=15, iterations=5, warmup=5),
         "quick": Plan(rounds=3, iterations=2, warmup=3)}


def model():
    """([parameter], [gradient]): the float32 arrays of the 100 tensors, seed 0."""
    rng = np.random.default_rng(0)
    params = [rng.standard_normal(shape, dtype=np.float32) * np.float32(INIT_STD)
              for shape in SHAPES]
    grads = [rng.standard_normal(shape, dtype=np.float32) for shape in SHAPES]
    return params, grads


def dlfree_parameters():
    """The model as `dl.Parameter`s whose gradients are set once."""
    import dlfree as dl

    params_np, grads_np = model()
    params = [dl.Parameter(p) for p in params_np]
    for p, g in zip(params, grads_np, strict=True):
        p.grad = dl.tensor(g)
    return params


def torch_parameters():
    """The model as torch Parameters (sharing the arrays) whose gradients are set once."""
    import torch

    params_np, grads_np = model()
    params = [torch.nn.Parameter(torch.from_numpy(p)) for p in params_np]
    for p, g in zip(params, grads_np, strict=True):
        p.grad = torch.from_numpy(g)
    return params


def numpy_moments(params):
    """Zeroed first and second moments per parameter, and one scratch view per parameter
    into a single buffer (reused tensor after tensor, so it stays in cache)."""
    buffer = np.empty(max(p.size for p in params), dtype=np.float32)
    return ([np.zeros_like(p) for p in params], [np.zeros_like(p) for p in params],
            [buffer[:p.size].reshape(p.shape) for p in params])


def stepping(optimizer, params):
    """A workload step: one `optimizer.step()`, returning the first and last parameter."""

    def step():
        optimizer.step()
        return [params[0], params[-1]]

    return step
