"""Complex dtypes: torch's promotion, printing, safetensors, and the rule that an op
whose backward is not written for complex tensors refuses to record one."""

from __future__ import annotations

import dlfree as dl

import numpy as np
import pytest
import torch


@pytest.mark.parametrize("make", [
    lambda m: m.ones(2, dtype=m.complex64) + m.ones(2, dtype=m.float64),
    lambda m: m.ones(2, dtype=m.complex64) * m.ones(2, dtype=m.int64),
    lambda m: m.ones(2, dtype=m.float64) + 1j,
    lambda m: m.ones(2) + 1j,
    lambda m: m.ones(2, dtype=m.int32) * 2j,
    lambda m: m.ones(2, dtype=m.complex64) + m.tensor(1.0, dtype=m.float64),
    lambda m: m.ones(2, dtype=m.float64) * m.tensor(1j),
    lambda m: m.ones(2, dtype=m.complex128) - m.ones(2, dtype=m.complex64),
    lambda m: m.ones(2, dtype=m.cfloat) / 2,
    lambda m: m.ones(2, dtype=m.cdouble).sum(),
])
def test_promotion_matches_torch(make):
    assert make(dl).dtype.name == str(make(torch).dtype).split(".")[-1]


def test_default_complex_follows_the_default_float():
    assert dl.tensor([1j]).dtype == dl.complex64
    dl.set_default_dtype(dl.float64)
    try:
        assert dl.tensor([1j]).dtype == dl.complex128 and (dl.ones(1) * 1j).dtype == dl.complex128
    finally:
        dl.set_default_dtype(dl.float32)


def test_dtype_properties_and_printing():
    assert dl.complex64.is_complex and not dl.complex64.is_floating_point
    z = dl.complex(dl.tensor([1.0, -0.5]), dl.tensor([2.0, 0.0]))
    assert repr(z) == "tensor([ 1. +2.j, -0.5+0.j], dtype=dlfree.complex64)"
    assert z.is_complex() and not z.real.is_complex() and dl.is_complex(z)


def test_complex64_round_trips_through_safetensors_and_complex128_is_refused(tmp_path):
    z = dl.complex(dl.tensor([1.0, -0.5]), dl.tensor([2.0, 0.25]))
    dl.io.save_tensors({"z": z}, tmp_path / "z.safetensors")
    back = dl.io.load_tensors(tmp_path / "z.safetensors")[0]["z"]
    assert back.dtype == dl.complex64 and np.array_equal(back.numpy(), z.numpy())
    with pytest.raises(dl.DTypeError, match="complex128, which safetensors cannot store; "
                                            "valid: complex64, or save dl.view_as_real"):
        dl.io.save_tensors({"z": z.to(dl.complex128)}, tmp_path / "w.safetensors")


def test_an_op_without_a_complex_backward_refuses_to_record_a_complex_result():
    a = dl.tensor([1.0, 2.0], requires_grad=True)
    z = dl.complex(a, a)
    with pytest.raises(dl.DTypeError, match="exp: gradients through this op are defined for "
                                            "real tensors only"):
        z.exp()
    with dl.no_grad():  # without a graph the forward is NumPy's
        np.testing.assert_allclose(z.exp().numpy(), np.exp(z.detach().numpy()), rtol=1e-6)
    assert not z.detach().exp().requires_grad


def test_a_real_to_complex_cast_gives_a_real_gradient():
    a = dl.tensor([1.0, 2.0], dtype=dl.float64, requires_grad=True)
    (a.to(dl.complex128) * (1 - 2j)).imag.sum().backward()
    assert a.grad.dtype == dl.float64 and a.grad.tolist() == [-2.0, -2.0]


@pytest.mark.parametrize("call, message", [
    (lambda: dl.complex(dl.zeros(2), dl.zeros(2, dtype=dl.float64)),
     "complex: real and imag must have one dtype"),
    (lambda: dl.complex(dl.zeros(2, dtype=dl.int64), dl.zeros(2)),
     "complex: real must be a float32 or float64 tensor"),
    (lambda: dl.zeros(2).imag, "imag: not supported for float32 tensors; valid: complex"),
    (lambda: dl.view_as_real(dl.zeros(2)), "view_as_real: not supported for float32"),
])
def test_bad_complex_calls_say_what_is_valid(call, message):
    with pytest.raises(dl.DTypeError, match=message):
        call()


def test_view_as_complex_needs_pairs():
    with pytest.raises(dl.ShapeError, match=r"last dim has size 2, got shape \(2, 3\)"):
        dl.view_as_complex(dl.zeros(2, 3))
