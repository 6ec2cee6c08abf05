"""Tensor basics: properties, conversions, repr, `.data`, Parameter, dtype conversion."""

from __future__ import annotations

import dlfree as dl

import numpy as np
import pytest


def test_properties():
    t = dl.zeros(2, 3, 4)
    assert t.shape == (2, 3, 4) and isinstance(t.shape, dl.Size)
    assert t.size() == (2, 3, 4) and t.size(1) == 3 and t.size(-1) == 4
    assert t.dim() == t.ndim == 3 and t.numel() == 24 and len(t) == 2
    assert t.dtype == dl.float32 and t.device == dl.Device("cpu") and t.device == "cpu"
    assert t.is_leaf and not t.requires_grad and t.is_contiguous()
    assert t.element_size() == 4 and t.stride() == (12, 4, 1)


def test_python_conversions():
    t = dl.tensor([[1.5, 2.0]])
    assert t.tolist() == [[1.5, 2.0]]
    assert dl.tensor([3]).item() == 3 and isinstance(dl.tensor([3]).item(), int)
    assert float(dl.tensor(2.5)) == 2.5 and int(dl.tensor(7)) == 7
    assert np.asarray(t).dtype == np.float32
    assert [1, 2, 3][dl.tensor(1)] == 2
    with pytest.raises(ValueError, match="ambiguous"):
        bool(dl.ones(2))
    with pytest.raises(ValueError, match="exactly one element"):
        dl.ones(2).item()
    with pytest.raises(dl.AutogradError, match="detach"):
        dl.ones(2, requires_grad=True).numpy()


def test_repr_shows_grad_state_and_non_default_dtype():
    assert repr(dl.tensor([1.0, 2.0])) == "tensor([1., 2.])"
    assert "requires_grad=True" in repr(dl.ones(1, requires_grad=True))
    assert "grad_fn=<MulBackward>" in repr(dl.ones(1, requires_grad=True) * 2)
    assert "dtype=dlfree.float64" in repr(dl.ones(1, dtype=dl.float64))
    assert repr(dl.float16) == "dlfree.float16"


def test_to_and_dtype_shortcuts():
    t = dl.tensor([1.7, -2.2])
    assert t.double().dtype == dl.float64
    assert t.long().tolist() == [1, -2]
    assert t.to(dl.float16).dtype == dl.float16
    assert t.to("float64").dtype == dl.float64
    assert t.to(dl.ones(1, dtype=dl.int32)).dtype == dl.int32
    assert t.to("cpu") is t and t.float() is t
    assert t.bool().tolist() == [True, True]
    assert t.to(dl.float32, copy=True) is not t


def test_data_is_a_detached_alias():
    w = dl.ones(3, requires_grad=True)
    d = w.data
    assert not d.requires_grad
    d.mul_(2)
    assert w.detach().tolist() == [2.0, 2.0, 2.0]
    w.data = dl.zeros(3)
    assert w.detach().tolist() == [0.0, 0.0, 0.0] and w.requires_grad


def test_parameter():
    p = dl.Parameter(dl.randn(2, 3))
    assert isinstance(p, dl.Tensor) and p.requires_grad and p.is_leaf
    assert repr(p).startswith("Parameter containing:")
    frozen = dl.Parameter(dl.zeros(2), requires_grad=False)
    assert not frozen.requires_grad


def test_a_parameter_of_a_tensor_shares_its_memory_but_not_its_history():
    y = dl.ones(3, requires_grad=True) * 2
    p = dl.Parameter(y)
    assert p.array is y.array and p.is_leaf and p.requires_grad and p.grad is None
    (p * p).sum().backward()
    assert p.grad is not None and p.grad.tolist() == [4.0, 4.0, 4.0]


def test_transposes():
    t = dl.arange(6).reshape(2, 3)
    assert t.T.shape == (3, 2) and t.t().tolist() == [[0, 3], [1, 4], [2, 5]]
    b = dl.zeros(4, 2, 3)
    assert b.mT.shape == (4, 3, 2)
    with pytest.raises(dl.ShapeError, match="t: expects a tensor with <= 2"):
        b.t()


def test_iteration_and_len():
    rows = list(dl.tensor([[1, 2], [3, 4]]))
    assert [r.tolist() for r in rows] == [[1, 2], [3, 4]]
    with pytest.raises(TypeError):
        len(dl.tensor(1.0))


def test_a_cpu_tensor_is_not_cuda_and_cuda_says_why_it_cannot_move():
    t = dl.ones(2)
    assert not t.is_cuda and t.device.type == "cpu"
    if dl.cuda.is_available():  # the cupy-device tests move tensors for real
        assert t.cuda().is_cuda and t.cuda().device.type == "cuda"
        return
    with pytest.raises(dl.DeviceError, match="device 'cuda' is not available: "):
        t.cuda()
