"""Parity cases for dl.fft and the complex ops (see parity.py). Complex results are
compared through view_as_real (the harness checks real tensors' gradients), complex inputs
are built inside the call from real ones (complex(a, b), polar), so that every gradient,
torch's convention for complex ones included, is checked against torch and against finite
differences in float64."""

from __future__ import annotations

import dlfree as dl

import numpy as np
import pytest
import torch

from support.parity import Case, run_family
from support.specs import Float

FFT_TOL = (1e-5, 1e-5)  # float32 sums over the signal; values near 0 need an absolute bound


def pairs(m, z):
    return m.view_as_real(z.resolve_conj()) if z.is_complex() else z


def cplx(m, a, b):
    return m.complex(a, b)


def fft_case(name, call, inputs, **kwargs):
    return Case(name, lambda m, *xs: pairs(m, call(m, *xs)), inputs, fwd_tol=FFT_TOL,
                **kwargs)


CASES = [
    # complex numbers
    Case("complex_parts", lambda m, a, b: (cplx(m, a, b).real * 1, cplx(m, a, b).imag * 1),
         [(3,), (3,)], gradgrad=True),
    Case("complex_broadcast", lambda m, a, b: m.view_as_real(cplx(m, a, b)), [(2, 3), (3,)]),
    Case("view_as_complex", lambda m, a: m.view_as_real(m.view_as_complex(a) * 2), [(3, 2)]),
    Case("complex_abs", lambda m, a, b: cplx(m, a, b).abs(), [(4,), (4,)], gradgrad=True),
    Case("complex_angle", lambda m, a, b: cplx(m, a, b).angle(), [(4,), (4,)], gradgrad=True),
    Case("real_angle", lambda m, a: m.angle(a), [Float((4,), distinct=True)]),
    Case("polar", lambda m, r, t: m.view_as_real(m.polar(r, t)), [Float((3,), 0.5, 2.0), (3,)],
         gradgrad=True),
    Case("complex_arithmetic", lambda m, a, b, c, d: m.view_as_real(
        cplx(m, a, b) * cplx(m, c, d) / (cplx(m, d, a) + 3) - cplx(m, c, b).conj()),
         [(3,), (3,), (3,), (3,)], gradgrad=True),
    Case("complex_times_real", lambda m, a, b, c: m.view_as_real(cplx(m, a, b) * c - 1j * c),
         [(3,), (3,), (3,)], gradgrad=True),
    Case("complex_matmul", lambda m, a, b, c, d: m.view_as_real(cplx(m, a, b) @ cplx(m, c, d)),
         [(2, 3), (2, 3), (3, 2), (3, 2)], gradgrad=True),
    Case("complex_sum_views", lambda m, a, b: m.view_as_real(
        cplx(m, a, b).reshape(2, 3).mT[1:].sum(0)), [(6,), (6,)]),
    Case("complex_to_real_cast", lambda m, a, b: cplx(m, a, b).to(a.dtype) * 2, [(3,), (3,)],
         marks=(pytest.mark.filterwarnings("ignore:Casting complex values to real"),)),
    # one-dimensional transforms
    fft_case("fft_real", lambda m, a: m.fft.fft(a), [(2, 8)], gradgrad=True),
    fft_case("fft_complex_ortho", lambda m, a, b: m.fft.fft(cplx(m, a, b), norm="ortho"),
             [(5,), (5,)], gradgrad=True),
    fft_case("fft_pad_dim0", lambda m, a: m.fft.fft(a, n=6, dim=0), [(4, 3)]),
    fft_case("fft_crop_forward", lambda m, a: m.fft.fft(a, n=3, norm="forward"), [(2, 5)]),
    fft_case("ifft", lambda m, a, b: m.fft.ifft(cplx(m, a, b)), [(2, 6), (2, 6)],
             gradgrad=True),
    fft_case("rfft_even", lambda m, a: m.fft.rfft(a), [(3, 8)], gradgrad=True),
    fft_case("rfft_odd_ortho", lambda m, a: m.fft.rfft(a, norm="ortho"), [(7,)]),
    fft_case("rfft_n", lambda m, a: m.fft.rfft(a, n=10, dim=0), [(6, 2)]),
    fft_case("irfft_even", lambda m, a, b: m.fft.irfft(cplx(m, a, b)), [(2, 5), (2, 5)],
             gradgrad=True),
    fft_case("irfft_odd_n", lambda m, a, b: m.fft.irfft(cplx(m, a, b), n=7, norm="forward"),
             [(4,), (4,)]),
    fft_case("irfft_real_input", lambda m, a: m.fft.irfft(a, n=6), [(4,)]),
    fft_case("hfft", lambda m, a, b: m.fft.hfft(cplx(m, a, b)), [(4,), (4,)]),
    fft_case("ihfft", lambda m, a: m.fft.ihfft(a), [(6,)]),
    fft_case("rfft_irfft_roundtrip", lambda m, a: m.fft.irfft(m.fft.rfft(a) * 2, n=9),
             [(2, 9)], gradgrad=True),
    # several dims
    fft_case("fft2", lambda m, a: m.fft.fft2(a), [(2, 3, 4)], gradgrad=True),
    fft_case("ifft2_s", lambda m, a, b: m.fft.ifft2(cplx(m, a, b), s=(4, 2)),
             [(3, 3), (3, 3)]),
    fft_case("fftn_all", lambda m, a: m.fft.fftn(a, norm="ortho"), [(2, 3, 4)]),
    fft_case("ifftn_dims", lambda m, a: m.fft.ifftn(a, dim=(0, 2)), [(2, 3, 4)]),
    fft_case("rfft2", lambda m, a: m.fft.rfft2(a), [(3, 4, 6)], gradgrad=True),
    fft_case("rfftn_s", lambda m, a: m.fft.rfftn(a, s=(4, 5)), [(3, 4)]),
    fft_case("irfft2", lambda m, a, b: m.fft.irfft2(cplx(m, a, b)), [(4, 3), (4, 3)],
             gradgrad=True),
    fft_case("irfftn_s", lambda m, a, b: m.fft.irfftn(cplx(m, a, b), s=(3, 5), dim=(0, 1)),
             [(3, 3, 2), (3, 3, 2)]),
    fft_case("hfft2", lambda m, a, b: m.fft.hfft2(cplx(m, a, b)), [(3, 3), (3, 3)]),
    fft_case("ihfftn", lambda m, a: m.fft.ihfftn(a), [(4, 5)]),
    fft_case("ihfft2", lambda m, a: m.fft.ihfft2(a), [(3, 4)]),
    fft_case("hfftn", lambda m, a, b: m.fft.hfftn(cplx(m, a, b), s=(2, 4)), [(2, 3), (2, 3)]),
    # helpers
    Case("fftshift", lambda m, a: m.fft.fftshift(a), [(3, 4)]),
    Case("ifftshift_dim", lambda m, a: m.fft.ifftshift(a, dim=1), [(3, 5)]),
    Case("fftshift_complex", lambda m, a, b: m.view_as_real(m.fft.fftshift(cplx(m, a, b),
                                                                           dim=(0,))),
         [(5,), (5,)]),
]

test_forward, test_grad, test_gradcheck, test_gradgrad = run_family(CASES)


@pytest.mark.parametrize("n, d", [(5, 1.0), (8, 0.1), (1, 2.0)])
def test_sample_frequencies_match_torch(n, d):
    np.testing.assert_allclose(dl.fft.fftfreq(n, d).numpy(), torch.fft.fftfreq(n, d).numpy(),
                               rtol=1e-7)
    np.testing.assert_allclose(dl.fft.rfftfreq(n, d).numpy(),
                               torch.fft.rfftfreq(n, d).numpy(), rtol=1e-7)
    assert dl.fft.fftfreq(n, dtype=dl.float64).dtype == dl.float64


@pytest.mark.parametrize("call, error, message", [
    (lambda: dl.fft.rfft(dl.complex(dl.zeros(3), dl.zeros(3))), dl.DTypeError,
     "fft.rfft: expects a real input tensor, got complex64"),
    (lambda: dl.fft.fft(dl.zeros(3), norm="unitary"), ValueError,
     "valid: 'backward', 'ortho', 'forward'"),
    (lambda: dl.fft.fftn(dl.zeros(3, 4), s=(2, 2), dim=(0,)), dl.ShapeError,
     r"s=\(2, 2\) gives 2 size\(s\) for 1 dim\(s\)"),
    (lambda: dl.fft.fft(dl.zeros(3), dim=1), dl.ShapeError, "dim 1 is out of range"),
    (lambda: dl.fft.irfft(dl.zeros(1)), dl.ShapeError, "invalid output size 0"),
])
def test_bad_arguments_say_what_is_valid(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_integer_signals_transform_in_the_default_float_dtype():
    out = dl.fft.fft(dl.arange(4))
    assert out.dtype == dl.complex64
    np.testing.assert_allclose(out.numpy(), np.fft.fft(np.arange(4)), rtol=1e-6)
    assert dl.fft.rfft(dl.arange(4, dtype=dl.float64)).dtype == dl.complex128
