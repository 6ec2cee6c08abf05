"""+, -, * and / of two large NumPy arrays (4 MiB or more each) of one shape and dtype run
in blocks on the threads (`ops.elementwise._threaded`): the same values as NumPy's one
call, bit for bit, in every dtype they take, and the gradients unchanged; broadcasting,
strided views and smaller arrays take the one call (mixed dtypes are promoted to one
first, as in torch)."""

from __future__ import annotations

import threading

import dlfree as dl
from dlfree import threads
from dlfree.ops import elementwise

import numpy as np
import pytest

OPS = {"add": (lambda a, b: a + b, np.add), "sub": (lambda a, b: a - b, np.subtract),
       "mul": (lambda a, b: a * b, np.multiply), "div": (lambda a, b: a / b, np.true_divide)}


@pytest.fixture
def blocks(monkeypatch):
    """The threads that ran a block of `_threaded`'s ufunc calls, two threads on."""
    idents = set()
    for_elements = threads.for_elements

    def recording(xp, fn, out, *inputs, runs=False):
        def run(*parts):
            idents.add(threading.get_ident())
            fn(*parts)
        return for_elements(xp, run, out, *inputs, runs=runs)

    monkeypatch.setattr(elementwise, "for_elements", recording)
    before = dl.get_num_threads()
    dl.set_num_threads(2)
    yield idents
    dl.set_num_threads(before)


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.int64])
def test_large_operands_match_numpys_one_call(blocks, op, dtype):
    if op == "div" and dtype == np.int64:
        pytest.skip("integers divide to float: the operands are cast first")
    rng = np.random.default_rng(0)
    shape = (64, 16, 32, 33)  # 4.3 MiB of float32: past the threshold, a short last block
    a, b = ((rng.standard_normal(shape) * 10).astype(dtype) for _ in range(2))
    if dtype == np.complex64:
        a = a + 1j * rng.standard_normal(shape).astype(np.float32)
    b[b == 0] = 1
    fn, ufunc = OPS[op]
    out = fn(dl.tensor(a), dl.tensor(b))
    assert blocks  # it went through the blocks
    np.testing.assert_array_equal(out.numpy(), ufunc(a, b))
    assert out.dtype == dl.tensor(a).dtype


@pytest.mark.parametrize("op", OPS)
def test_the_gradients_are_those_of_the_one_call(blocks, op):
    rng = np.random.default_rng(1)
    a, b = (rng.standard_normal((128, 16, 32, 8)) + 3 for _ in range(2))  # 4 MiB each
    fn, _ = OPS[op]
    x, y = dl.tensor(a, requires_grad=True), dl.tensor(b, requires_grad=True)
    fn(x, y).sum().backward()
    expected = {"add": (1, 1), "sub": (1, -1), "mul": (b, a), "div": (1 / b, -a / b ** 2)}[op]
    for got, want in zip((x.grad, y.grad), expected, strict=True):
        np.testing.assert_allclose(got.numpy(), np.broadcast_to(want, a.shape), rtol=1e-12)
    assert blocks


@pytest.mark.parametrize("case", ["broadcast", "transposed", "small", "under 4 MiB"])
def test_what_cannot_be_cut_alike_takes_the_one_call(blocks, case):
    rng = np.random.default_rng(2)
    a = rng.standard_normal((1024, 1024)).astype(np.float32)  # 4 MiB: large enough
    b = {"broadcast": rng.standard_normal(1024).astype(np.float32),
         "transposed": rng.standard_normal((1024, 1024)).astype(np.float32).T,
         "small": a[:4, :4].copy(), "under 4 MiB": None}[case]
    if case == "small":
        a = a[:4, :4].copy()
    if case == "under 4 MiB":  # 2 MiB each: in cache, one call is faster than handing over
        a, b = a[:512].copy(), a[512:].copy()
    out = dl.tensor(a) + dl.tensor(b)
    np.testing.assert_array_equal(out.numpy(), a + b)
    assert not blocks
