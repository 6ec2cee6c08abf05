"""detect_anomaly: the element, shape and call site of the first NaN/inf, in backward and
(check_forward=True) in forward."""

from __future__ import annotations

import dlfree as dl
import dlfree.autograd.function as function_module

import numpy as np
import pytest


def test_backward_message_names_the_op_element_shape_and_input():
    x = dl.tensor([0.0], requires_grad=True)
    with dl.autograd.detect_anomaly():
        y = x.log().sum()  # log'(0) = 1/0 = inf
        with pytest.raises(dl.AutogradError) as info:
            y.backward()
    first = str(info.value).splitlines()[0]
    assert first == ("LogBackward produced inf at element 0 of shape (1,) in the gradient for "
                     "input 0; the forward call that created it:")
    assert "test_anomaly.py" in str(info.value)


def test_backward_element_is_the_flat_index_of_the_first_bad_value_and_nan_is_named():
    x = dl.tensor(np.array([[1.0, 4.0], [0.0, 0.0]]), requires_grad=True)
    with dl.autograd.detect_anomaly():
        y = (x.sqrt() * 0).sum()  # sqrt's backward: 0 / (2 sqrt(0)) = nan at elements 2, 3
        with pytest.raises(dl.AutogradError,
                           match=r"^SqrtBackward produced nan at element 2 of shape \(2, 2\) "
                                 r"in the gradient for input 0"):
            y.backward()


def test_backward_names_which_input_got_the_bad_gradient():
    a = dl.tensor([1.0, 2.0], requires_grad=True)
    b = dl.tensor([3.0, 0.0], requires_grad=True)
    with dl.autograd.detect_anomaly():
        y = (a / b).sum()  # d/db = -a / b^2: inf at element 1; d/da = 1 / b: inf too
        with pytest.raises(dl.AutogradError,
                           match=r"^DivBackward produced inf at element 1 of shape \(2,\) in the "
                                 r"gradient for input 0"):
            y.backward()


def test_check_forward_names_the_first_op_whose_output_is_not_finite():
    x = dl.tensor([[2.0, 1.0, 0.0]])
    with dl.autograd.detect_anomaly(check_forward=True):
        scaled = x * 3
        with pytest.raises(dl.AutogradError) as info:
            scaled.log()  # log(0) = -inf at element 2
    message = str(info.value)
    assert message.splitlines()[0] == ("Log produced inf at element 2 of shape (1, 3) in its "
                                       "forward output, from finite inputs; the call:")
    assert "test_anomaly.py" in message and "scaled.log()" in message
    assert "elementwise.py" not in message  # the call site, not the library's frames


def test_check_forward_names_nan_and_works_without_grad():
    x = dl.tensor([1.0, -1.0])
    with dl.no_grad(), dl.autograd.detect_anomaly(check_forward=True), \
            pytest.raises(dl.AutogradError, match=r"^Sqrt produced nan at element 1 of shape"):
        x.sqrt()


def test_check_forward_passes_non_finite_inputs_through_without_blaming_the_op():
    data = dl.tensor([float("inf"), 1.0])  # the data brings the inf, no op produced it
    with dl.autograd.detect_anomaly(check_forward=True):
        assert (data + 1).tolist() == [float("inf"), 2.0]


def test_check_forward_leaves_the_backward_check_to_name_the_node():
    x = dl.tensor([0.0, 1.0], requires_grad=True)
    with dl.autograd.detect_anomaly(check_forward=True):
        y = x.sqrt().sum()
        with pytest.raises(dl.AutogradError, match=r"^SqrtBackward produced inf at element 0"):
            y.backward()


def test_set_detect_anomaly_switches_the_forward_check_and_restores_it():
    x = dl.tensor([0.0])
    with dl.autograd.set_detect_anomaly(True, check_forward=True):
        with pytest.raises(dl.AutogradError, match=r"^Log produced inf"):
            x.log()
        with dl.autograd.set_detect_anomaly(False, check_forward=True):
            assert x.log().tolist() == [float("-inf")]
        with pytest.raises(dl.AutogradError, match=r"^Log produced inf"):
            x.log()
    assert x.log().tolist() == [float("-inf")]


def test_no_forward_check_runs_when_it_is_off(monkeypatch):
    def fail(*args):
        raise AssertionError("check_forward called with anomaly detection off")

    monkeypatch.setattr(function_module, "check_forward", fail)
    x = dl.tensor([0.0], requires_grad=True)
    x.log().sum().backward()
    with dl.autograd.detect_anomaly():  # backward checks only
        x.exp().sum().backward()
    with dl.autograd.detect_anomaly(check_forward=True), pytest.raises(AssertionError):
        x.exp()
