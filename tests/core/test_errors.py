"""The error hierarchy, and the messages users see for common mistakes."""

from __future__ import annotations

import dlfree as dl

import pytest


def test_hierarchy_refines_builtins():
    assert issubclass(dl.ShapeError, dl.DLFreeError) and issubclass(dl.ShapeError, ValueError)
    assert issubclass(dl.DTypeError, TypeError)
    assert issubclass(dl.DeviceError, dl.DLFreeError)
    assert issubclass(dl.AutogradError, RuntimeError)
    assert issubclass(dl.CheckpointError, dl.DLFreeError)
    assert issubclass(dl.PluginError, dl.DLFreeError)


def test_wrong_shape_matmul_names_shapes_and_rule():
    with pytest.raises(dl.ShapeError, match=r"matmul: shapes \(2, 3\) and \(4, 5\) cannot be "
                                            r"multiplied \(3 columns vs 4 rows\)"):
        dl.ones(2, 3) @ dl.ones(4, 5)


def test_broadcast_failure_is_a_shape_error():
    with pytest.raises(dl.ShapeError, match=r"expand.*\(3,\).*\(2,\)"):
        dl.ones(3).expand(2)
    with pytest.raises(dl.ShapeError, match="reshape: shape \\(4,\\) is invalid"):
        dl.ones(2, 3).reshape(4)


def test_backward_on_non_scalar_needs_a_gradient():
    x = dl.ones(3, requires_grad=True)
    with pytest.raises(dl.AutogradError, match=r"only for scalar outputs.*shape \(3,\)"):
        (x * 2).backward()


def test_gradient_of_wrong_shape():
    x = dl.ones(3, requires_grad=True)
    with pytest.raises(dl.ShapeError, match=r"gradient of shape \(2,\) does not match"):
        (x * 2).backward(dl.ones(2))


def test_backward_without_grad_requirement():
    with pytest.raises(dl.AutogradError, match="does not require grad"):
        dl.ones(2).sum().backward()


def test_dtype_misuse():
    with pytest.raises(dl.DTypeError, match="mean: .*int64.*dtype="):
        dl.arange(4).mean()
    with pytest.raises(dl.DTypeError, match="unsupported dtype 'uint16'"):
        dl.zeros(2, dtype="uint16")
    with pytest.raises(dl.DTypeError, match="float"):
        dl.set_default_dtype(dl.int32)
    with pytest.raises(dl.DTypeError, match="unsupported operand of type str"):
        dl.ones(2) + "a"


@pytest.mark.parametrize("call, op, dtype", [
    (lambda F: -dl.tensor([True]), "neg", "bool"),
    (lambda F: dl.tensor([1]).var(), "var", "int64"),
    (lambda F: dl.linalg.vector_norm(dl.tensor([1, 2])), "linalg.vector_norm", "int64"),
    (lambda F: F.avg_pool1d(dl.ones(1, 1, 4, dtype=dl.int32), 2), "avg_pool1d", "int32"),
    (lambda F: F.interpolate(dl.ones(1, 1, 4, dtype=dl.int64), size=8), "interpolate", "int64"),
    (lambda F: F.conv1d(dl.ones(1, 1, 4, dtype=dl.int64), dl.ones(1, 1, 2, dtype=dl.int64)),
     "conv1d", "int64"),
    (lambda F: F.mse_loss(dl.tensor([1, 2]), dl.tensor([1, 2])), "mse_loss", "int64"),
    (lambda F: F.ctc_loss(dl.ones(3, 1, 2, dtype=dl.int64), dl.tensor([[1]]), [3], [1]),
     "ctc_loss", "int64"),
    (lambda F: dl.tensor([1.0]) & dl.tensor([1.0]), "bitwise_and", "float32"),
])
def test_every_dtype_check_words_its_error_alike(call, op, dtype):
    """One vocabulary (ops/_util.py's check_kind and check_float) for every op family: the
    op, the dtype it got and what is valid."""
    with pytest.raises(dl.DTypeError) as error:
        call(dl.functional)
    assert str(error.value).startswith(f"{op}: not supported for {dtype} tensors; valid: ")


def test_a_floating_only_op_refuses_a_non_tensor():
    with pytest.raises(dl.DTypeError, match="mse_loss: expected a Tensor, got list"):
        dl.functional.mse_loss([1.0], dl.tensor([1.0]))


def test_unknown_and_unavailable_devices():
    with pytest.raises(dl.DeviceError, match="unknown device type 'tpu'.*known device types"):
        dl.zeros(2, device="tpu")
    with pytest.raises(dl.DeviceError, match="bad device string"):
        dl.Device("cpu:x")


def test_mixing_devices_names_both(fake_device):
    a = dl.ones(2)
    b = dl.ones(2, device=fake_device)
    assert b.device == fake_device and b.to("cpu").device == dl.Device("cpu")
    with pytest.raises(dl.DeviceError, match=r"expected all tensors on one device, got cpu and "
                                             r"datatest:0"):
        a + b
    with pytest.raises(dl.DeviceError, match="cpu and datatest:0"):
        a.add_(b)


def test_gradient_flows_across_a_device_transfer(fake_device):
    x = dl.tensor([1.0, 2.0], requires_grad=True)
    y = x.to(fake_device) * 3
    y.to("cpu").sum().backward()
    assert x.grad.device == dl.Device("cpu")
    assert x.grad.tolist() == [3.0, 3.0]
