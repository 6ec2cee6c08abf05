"""Parity cases for linalg.eig and eigvals (see parity.py), on the CPU only: CuPy has no
general (non-symmetric) eigensolver, and dl.free says so (the last test). Eigenvectors
enter through their absolute values, which do not depend on each vector's arbitrary phase.
"""

from __future__ import annotations

import dlfree as dl

import pytest

from support.devices import cuda_answers
from support.parity import Case, run_family


@pytest.fixture
def device() -> str:
    return "cpu"


CASES = [
    Case("eigvals", lambda m, a: m.view_as_real(m.linalg.eigvals(a)), [(2, 4, 4)],
         gradgrad=True),
    Case("eig", lambda m, a: (lambda w, v: (m.view_as_real(w), v.abs()))(*m.linalg.eig(a)),
         [(3, 3)], gradgrad=True),
    Case("eig_products", lambda m, a, b: m.view_as_real(
        (lambda w, v: (v.abs() ** 2 * w.unsqueeze(-2)).sum(-1) @ m.complex(b, b))(
            *m.linalg.eig(a))), [(3, 3), (3, 2)]),
]

test_forward, test_grad, test_gradcheck, test_gradgrad = run_family(CASES)


def test_eig_results_are_complex_even_for_real_eigenvalues():
    w, v = dl.linalg.eig(dl.eye(2, dtype=dl.float64) * 2)
    assert w.dtype == v.dtype == dl.complex128
    assert w.tolist() == [2, 2]


@pytest.mark.gpu
@pytest.mark.skipif(not cuda_answers(), reason="CuPy or an NVIDIA GPU is not available")
def test_eig_on_cupy_says_it_has_no_general_eigensolver():
    with pytest.raises(dl.DeviceError, match="linalg.eig: CuPy has no general eigensolver"):
        dl.linalg.eig(dl.eye(2, device="cuda"))
