"""Property tests: reductions agree with torch, forward and gradient, over random shapes,
dim subsets (negative dims included) and keepdim."""

from __future__ import annotations

import dlfree as dl

import hypothesis.extra.numpy as hnp
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

OPS = {
    "sum": lambda m, x, dims, keepdim: x.sum(dims, keepdim=keepdim),
    "mean": lambda m, x, dims, keepdim: m.mean(x, dims, keepdim=keepdim),
    "var": lambda m, x, dims, keepdim: x.var(dims, keepdim=keepdim, correction=0),
    "var_unbiased": lambda m, x, dims, keepdim: m.var(x, dims, keepdim=keepdim),
    "amax": lambda m, x, dims, keepdim: m.amax(x, dims, keepdim),
    "logsumexp": lambda m, x, dims, keepdim: x.logsumexp(dims, keepdim),
}


@st.composite
def reductions(draw, need_dims: bool):
    """A shape, values, a subset of its dims (None for all) and keepdim."""
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=4, min_side=1, max_side=5))
    n = len(shape)
    dims = draw(st.lists(st.integers(-max(n, 1), max(n, 1) - 1), min_size=int(need_dims),
                         max_size=max(n, 1), unique_by=lambda d: d % max(n, 1)))
    values = draw(hnp.arrays(np.float32, shape, elements=st.floats(-3, 3, width=32)))
    return values, (tuple(dims) if dims or need_dims else None), draw(st.booleans())


def _reduced_count(shape, dims) -> int:
    if dims is None or not shape:
        return int(np.prod(shape))
    return int(np.prod([shape[d] for d in dims]))


@pytest.mark.parametrize("op", sorted(OPS))
def test_reduction_matches_torch(op):
    fn = OPS[op]

    @settings(max_examples=150, deadline=None)
    @given(reductions(need_dims=op == "logsumexp"), st.integers(0, 2**16))
    def check(case, seed):
        values, dims, keepdim = case
        if op == "var_unbiased" and _reduced_count(values.shape, dims) < 2:
            return  # torch warns that there are no degrees of freedom
        x = dl.tensor(values, requires_grad=True)
        t = torch.tensor(values, requires_grad=True)
        ours, ref = fn(dl, x, dims, keepdim), fn(torch, t, dims, keepdim)
        assert tuple(ours.shape) == tuple(ref.shape)
        np.testing.assert_allclose(ours.detach().numpy(), ref.detach().numpy(), 1e-5, 1e-5)
        g = np.random.default_rng(seed).standard_normal(tuple(ref.shape)).astype(np.float32)
        ours.backward(dl.tensor(g))
        ref.backward(torch.tensor(g))
        np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), 1e-4, 1e-4)

    check()
