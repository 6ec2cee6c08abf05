"""`backends.openblas.gemm`: out = a @ b (or out += a @ b) on views as they lie, against
NumPy's matmul in float64.

Each case is checked where NumPy's OpenBLAS is reachable (BLAS reads the views in place)
and with that lookup turned off (the matmul fallback), so both paths give the same results.
"""

from __future__ import annotations

from dlfree.backends import openblas

import numpy as np
import pytest

RNG = np.random.default_rng(0)
BIG = RNG.standard_normal((40, 50))

# (a, b) as views of one larger array: row strides wider than the rows, transposed views
# (unit steps down the columns), single rows and columns, strides BLAS cannot take
# (every other element), and empty dimensions
VIEWS = {
    "row-strided": (lambda m: m[:5, :7], lambda m: m[10:17, 3:9]),
    "transposed": (lambda m: m[:7, :5].T, lambda m: m[2:8, 1:8].T),
    "one-row": (lambda m: m[:1, :9], lambda m: m[20:29, :3]),
    "one-column times one-row": (lambda m: m[:6, 4:5], lambda m: m[30:31, :8]),
    "every-other": (lambda m: m[::2, :3], lambda m: m[:3, ::2]),
    "no-rows": (lambda m: m[:0, :3], lambda m: m[:3, :4]),
    "no-inner": (lambda m: m[:2, :0], lambda m: m[:0, :4]),
}
# float32 products of up to 9 terms of standard normals, against float64
TOLERANCE = {np.float32: 1e-5, np.float64: 1e-12, np.float16: 1e-2}


@pytest.fixture(params=["openblas", "matmul"])
def path(request, monkeypatch):
    """Each test runs through NumPy's OpenBLAS (skipped where it is not found) and through
    the matmul fallback."""
    if request.param == "openblas":
        if not openblas.api() or not openblas._found().gemm:
            pytest.skip("NumPy's OpenBLAS cannot be reached here (not Linux, or another BLAS)")
    else:
        monkeypatch.setattr(openblas, "_api", ())
    return request.param


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
@pytest.mark.parametrize("case", list(VIEWS))
def test_gemm_equals_matmul_and_accumulates(path, case, dtype):
    take_a, take_b = VIEWS[case]
    matrix = BIG.astype(dtype)
    a, b = take_a(matrix), take_b(matrix)
    expected = a.astype(np.float64) @ b.astype(np.float64)
    out = np.full((a.shape[0], b.shape[1]), 7, dtype)
    tol = TOLERANCE[dtype]
    openblas.gemm(a, b, out)
    np.testing.assert_allclose(out, expected, rtol=tol, atol=tol)
    openblas.gemm(a, b, out, accumulate=True)  # adds to what is there
    np.testing.assert_allclose(out, 2 * expected, rtol=tol, atol=2 * tol)


def test_gemm_writes_into_a_row_strided_output_and_nothing_beside_it(path):
    a, b = BIG[:4, :6].astype(np.float32), BIG[6:12, :5].astype(np.float32)
    frame = np.zeros((4, 9), np.float32)
    openblas.gemm(a, b, frame[:, 2:7])
    np.testing.assert_allclose(frame[:, 2:7], a.astype(np.float64) @ b, rtol=1e-5, atol=1e-5)
    assert not frame[:, :2].any() and not frame[:, 7:].any()


def test_gemm_takes_the_sum_of_shifted_views_of_one_buffer(path):
    """The convolution's use: one output plus the products of shifted column windows."""
    weights = RNG.standard_normal((3, 4, 6)).astype(np.float32)
    columns = RNG.standard_normal((6, 40)).astype(np.float32)
    out = np.empty((4, 30), np.float32)
    for i, shift in enumerate((0, 3, 10)):
        openblas.gemm(weights[i], columns[:, shift:shift + 30], out, accumulate=i > 0)
    expected = sum(weights[i].astype(np.float64) @ columns[:, s:s + 30]
                   for i, s in enumerate((0, 3, 10)))
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)
