"""Parity cases for the normalisation ops (see parity.py), running statistics and the
fused backward of batch_norm and layer_norm."""

from __future__ import annotations

import dlfree as dl
from dlfree.autograd.function import Function
from dlfree.ops.norm import Normalize

import numpy as np
import pytest
import torch

from support.parity import Case, run_family
from support.specs import Float


def F(m):
    return torch.nn.functional if m is torch else dl.functional


def stats(c: int):
    """Fresh running statistics of the caller's dtype (updated in place by training calls)."""
    return lambda m, x: (m.zeros(c, dtype=x.dtype), m.ones(c, dtype=x.dtype))


def bn_train(m, x, *affine):
    return F(m).batch_norm(x, *stats(x.shape[1])(m, x), *affine, training=True)


RUN_MEAN = Float((3,), grad=False)
RUN_VAR = Float((3,), 0.5, 2.0, grad=False)

CASES = [
    Case("batch_norm_train_2d", bn_train, [(8, 3), (3,), (3,)], gradgrad=True),
    Case("batch_norm_train_3d", bn_train, [(4, 3, 5), (3,), (3,)], gradgrad=True),
    Case("batch_norm_train_4d", bn_train, [(2, 3, 4, 5), (3,), (3,)], gradgrad=True),
    Case("batch_norm_train_batch1", bn_train, [(1, 3, 2, 2), (3,), (3,)], gradgrad=True),
    Case("batch_norm_train_no_affine", bn_train, [(5, 3, 2)], gradgrad=True),
    Case("batch_norm_train_weight_only", bn_train, [(6, 3), (3,)]),
    Case("batch_norm_train_empty", bn_train, [(0, 3, 4), (3,), (3,)]),
    Case("batch_norm_eval_4d", lambda m, x, rm, rv, w, b: F(m).batch_norm(x, rm, rv, w, b),
         [(2, 3, 3, 4), RUN_MEAN, RUN_VAR, (3,), (3,)], gradgrad=True),
    Case("batch_norm_eval_2d_eps", lambda m, x, rm, rv: F(m).batch_norm(x, rm, rv, eps=0.1),
         [(4, 3), RUN_MEAN, RUN_VAR]),
    Case("layer_norm", lambda m, x, w, b: F(m).layer_norm(x, (5,), w, b), [(4, 5), (5,), (5,)],
         gradgrad=True),
    Case("layer_norm_2dims", lambda m, x, w, b: F(m).layer_norm(x, (3, 4), w, b),
         [(2, 3, 4), (3, 4), (3, 4)], gradgrad=True),
    Case("layer_norm_no_affine", lambda m, x: F(m).layer_norm(x, [6], eps=1e-3), [(2, 2, 6)],
         gradgrad=True),
    Case("layer_norm_bias_only", lambda m, x, b: F(m).layer_norm(x, (4,), None, b),
         [(3, 4), (4,)]),  # torch's double backward fails without a weight
    Case("layer_norm_1d", lambda m, x, w: F(m).layer_norm(x, (7,), w), [(7,), (7,)]),
    Case("layer_norm_batch1", lambda m, x, w, b: F(m).layer_norm(x, (5,), w, b),
         [(1, 5), (5,), (5,)]),
    Case("layer_norm_empty", lambda m, x, w, b: F(m).layer_norm(x, (5,), w, b),
         [(0, 5), (5,), (5,)]),
    Case("group_norm", lambda m, x, w, b: F(m).group_norm(x, 3, w, b), [(2, 6, 4), (6,), (6,)],
         gradgrad=True),
    Case("group_norm_4d_no_affine", lambda m, x: F(m).group_norm(x, 2), [(2, 4, 3, 3)],
         gradgrad=True),
    Case("group_norm_one_group", lambda m, x, w, b: F(m).group_norm(x, 1, w, b),
         [(1, 4, 5), (4,), (4,)]),
    Case("group_norm_empty", lambda m, x, w, b: F(m).group_norm(x, 2, w, b),
         [(0, 4, 3), (4,), (4,)]),
    Case("instance_norm", lambda m, x: F(m).instance_norm(x), [(2, 3, 5)], gradgrad=True),
    Case("instance_norm_affine_running",
         lambda m, x, w, b: F(m).instance_norm(x, *stats(3)(m, x), w, b),
         [(2, 3, 3, 3), (3,), (3,)], gradgrad=True),
    Case("instance_norm_running_stats",
         lambda m, x, rm, rv, w: F(m).instance_norm(x, rm, rv, w, use_input_stats=False),
         [(2, 3, 4), RUN_MEAN, RUN_VAR, (3,)], gradgrad=True),
    Case("rms_norm", lambda m, x, w: F(m).rms_norm(x, (5,), w), [(3, 5), (5,)], gradgrad=True),
    Case("rms_norm_2dims_eps", lambda m, x: F(m).rms_norm(x, (3, 4), eps=1e-3), [(2, 3, 4)],
         gradgrad=True),
    Case("local_response_norm", lambda m, x: F(m).local_response_norm(x, 3, 0.5, 0.75, 2.0),
         [(2, 5, 4)], gradgrad=True),
    Case("local_response_norm_4d_even",
         lambda m, x: F(m).local_response_norm(x, 4, alpha=0.3, beta=0.6), [(2, 6, 2, 3)],
         gradgrad=True),
    Case("normalize", lambda m, x: F(m).normalize(x), [(3, 4)], gradgrad=True),
    Case("normalize_p1_last", lambda m, x: F(m).normalize(x, p=1.0, dim=-1), [(2, 3, 4)]),
    Case("normalize_p3_1d", lambda m, x: F(m).normalize(x, p=3.0, dim=0), [(5,)],
         gradgrad=True),
]

test_forward, test_grad, test_gradcheck, test_gradgrad = run_family(CASES)


@pytest.mark.parametrize("shape", [(8, 3), (4, 3, 5), (2, 3, 4, 5)])
@pytest.mark.parametrize("momentum", [0.1, 0.3])
def test_batch_norm_updates_running_stats_like_torch(shape, momentum, rng):
    x = rng.standard_normal(shape).astype(np.float32) * 2 + 1
    start_mean = rng.standard_normal(3).astype(np.float32)
    start_var = rng.uniform(0.5, 2, 3).astype(np.float32)
    ours = [dl.tensor(start_mean), dl.tensor(start_var)]
    ref = [torch.tensor(start_mean), torch.tensor(start_var)]
    for _ in range(2):  # the second step starts from the first step's statistics
        dl.functional.batch_norm(dl.tensor(x), *ours, training=True, momentum=momentum)
        torch.nn.functional.batch_norm(torch.tensor(x), *ref, training=True, momentum=momentum)
    for a, b in zip(ours, ref, strict=True):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)
    assert ours[0]._vc[0] == 2  # updated in place, as a buffer


def test_instance_norm_updates_running_stats_like_torch(rng):
    x = rng.standard_normal((3, 2, 4, 4)).astype(np.float32)
    ours = [dl.zeros(2), dl.ones(2)]
    ref = [torch.zeros(2), torch.ones(2)]
    dl.functional.instance_norm(dl.tensor(x), *ours, momentum=0.2)
    torch.nn.functional.instance_norm(torch.tensor(x), *ref, momentum=0.2)
    for a, b in zip(ours, ref, strict=True):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)


def test_batch_norm_eval_leaves_running_stats_alone():
    mean, var = dl.zeros(3), dl.ones(3)
    dl.functional.batch_norm(dl.randn(4, 3), mean, var, training=False)
    assert mean._vc[0] == var._vc[0] == 0


@pytest.mark.parametrize("call, affine", [
    (lambda x, w, b: dl.functional.batch_norm(x, None, None, w, b, training=True), (3,)),
    (lambda x, w, b: dl.functional.layer_norm(x, (3, 4), w, b), (3, 4)),
])
def test_the_fused_backward_runs_in_a_plain_training_step(call, affine, monkeypatch):
    """Without create_graph, Normalize's backward is array code: it applies no Function."""
    applied = []
    real_apply = Function.apply.__func__
    real_backward = Normalize.backward

    def counting_apply(cls, *inputs, **params):
        applied.append(cls.__name__)
        return real_apply(cls, *inputs, **params)

    def watched_backward(self, g):
        with monkeypatch.context() as patch:
            patch.setattr(Function, "apply", classmethod(counting_apply))
            return real_backward(self, g)

    monkeypatch.setattr(Normalize, "backward", watched_backward)
    x = dl.randn(5, 3, 4, requires_grad=True)
    w, b = dl.randn(*affine, requires_grad=True), dl.randn(*affine, requires_grad=True)
    out = call(x, w, b)
    assert type(out.grad_fn) is Normalize
    out.backward(dl.randn(*out.shape))
    assert applied == []
    assert x.grad.shape == x.shape and w.grad.shape == w.shape and b.grad.shape == b.shape
    assert x.grad.grad_fn is None


@pytest.mark.parametrize("call, error, message", [
    (lambda: dl.functional.batch_norm(dl.randn(4, 3), dl.zeros(4), dl.ones(4)), dl.ShapeError,
     r"batch_norm: running_mean of shape \(4,\) does not fit; valid: shape \(3,\)"),
    (lambda: dl.functional.batch_norm(dl.randn(1, 3), None, None, training=True), ValueError,
     r"batch_norm: expected more than 1 value per channel when training.*\(1, 3\)"),
    (lambda: dl.functional.batch_norm(dl.randn(4, 3), None, None), ValueError,
     "batch_norm: running_mean and running_var are needed when training=False"),
    (lambda: dl.functional.layer_norm(dl.randn(2, 3), (4,)), dl.ShapeError,
     r"layer_norm: normalized_shape \(4,\) does not match the input of shape \(2, 3\)"),
    (lambda: dl.functional.layer_norm(dl.randn(2, 3), (3,), dl.ones(4)), dl.ShapeError,
     r"layer_norm: weight of shape \(4,\) does not fit; valid: shape \(3,\)"),
    (lambda: dl.functional.group_norm(dl.randn(2, 6, 3), 4), dl.ShapeError,
     "group_norm: the 6 channels .* num_groups=4; valid: a divisor of 6"),
    (lambda: dl.functional.local_response_norm(dl.randn(2, 3), 2), dl.ShapeError,
     "local_response_norm: expected an input of 3 or more dims"),
])
def test_errors_name_the_op_shapes_and_what_is_valid(call, error, message):
    with pytest.raises(error, match=message):
        call()
