"""Parity cases for the loss functions (see parity.py), and their error messages."""

from __future__ import annotations

import dlfree as dl
from dlfree import DTypeError, ShapeError

import numpy as np
import pytest
import torch

from support.parity import Case, run_family
from support.specs import Fixed, Float, Int


def F(m):
    """The functional namespace of either library."""
    return dl.functional if m is dl else torch.nn.functional


S = (4, 5)
PROB = Float(S, 0.05, 0.95)  # probabilities away from 0 and 1
UNIT = Float(S, 0.0, 1.0)
POS = Float(S, 0.5, 3.0)
CLASS_W = Float((5,), 0.2, 1.0, grad=False)
N, C = 6, 5
LOGITS = (N, C)
LABELS = Int((N,), 0, C)
SIGNS = Fixed([1.0, -1.0, 1.0, -1.0])
MEAN_WARNING = pytest.mark.filterwarnings("ignore:.*'mean' divides the total loss")

CASES = [
    # regression
    Case("mse", lambda m, a, b: F(m).mse_loss(a, b), [S, S], gradgrad=True),
    Case("mse_sum", lambda m, a, b: F(m).mse_loss(a, b, reduction="sum"), [(2, 3, 4), (2, 3, 4)]),
    Case("mse_weight", lambda m, a, b, w: F(m).mse_loss(a, b, weight=w), [S, S, UNIT],
         gradgrad=True),
    Case("l1", lambda m, a, b: F(m).l1_loss(a, b), [S, S]),
    Case("l1_weight_none", lambda m, a, b, w: F(m).l1_loss(a, b, reduction="none", weight=w),
         [S, S, Float(S, 0.0, 1.0, grad=False)]),
    Case("smooth_l1_beta", lambda m, a, b: F(m).smooth_l1_loss(a, b, reduction="none",
                                                             beta=0.5), [S, S], gradgrad=True),
    Case("smooth_l1_beta0", lambda m, a, b: F(m).smooth_l1_loss(a, b, beta=0.0), [S, S]),
    Case("huber", lambda m, a, b: F(m).huber_loss(a, b, delta=0.7), [S, S], gradgrad=True),
    Case("huber_weight_sum", lambda m, a, b, w: F(m).huber_loss(a, b, "sum", 0.5, w),
         [S, S, UNIT]),
    Case("poisson_log", lambda m, a, b: F(m).poisson_nll_loss(a, b), [S, POS], gradgrad=True),
    Case("poisson_full", lambda m, a, b: F(m).poisson_nll_loss(
        a, b, log_input=False, full=True, reduction="sum"), [POS, Float(S, 0.2, 4.0)],
        gradgrad=True),
    Case("gaussian_full", lambda m, a, b, v: F(m).gaussian_nll_loss(a, b, v, full=True),
         [S, S, POS], gradgrad=True),
    Case("gaussian_shared_var", lambda m, a, b, v: F(m).gaussian_nll_loss(
        a, b, v, reduction="none"), [S, S, Float((4,), 0.5, 2.0)]),
    Case("gaussian_var_dim1", lambda m, a, b, v: F(m).gaussian_nll_loss(a, b, v, reduction="sum"),
         [S, S, Float((4, 1), 0.5, 2.0)]),
    Case("gaussian_float_var", lambda m, a, b: F(m).gaussian_nll_loss(a, b, 0.7), [S, S]),
    # torch passes var's gradient through the clamp unchanged: not a finite-difference match
    Case("gaussian_eps_clamp", lambda m, a, b, v: F(m).gaussian_nll_loss(a, b, v, eps=0.5),
         [S, S, Float(S, 0.1, 1.0)], gradcheck=False),
    Case("kl_batchmean", lambda m, a, b: F(m).kl_div(a, b, reduction="batchmean"),
         [S, UNIT], gradgrad=True),
    Case("kl_log_target", lambda m, a, b: F(m).kl_div(a, b, reduction="none", log_target=True),
         [S, S], gradgrad=True),
    Case("kl_mean", lambda m, a, b: F(m).kl_div(a, b), [S, UNIT], marks=(MEAN_WARNING,)),
    # binary classification
    Case("bce", lambda m, a, b: F(m).binary_cross_entropy(a, b), [PROB, UNIT], gradgrad=True),
    Case("bce_weight_sum", lambda m, a, b, w: F(m).binary_cross_entropy(a, b, w, reduction="sum"),
         [PROB, UNIT, Float((5,), 0.2, 1.0, grad=False)]),
    Case("bce_extra_dims_none", lambda m, a, b: F(m).binary_cross_entropy(a, b, reduction="none"),
         [Float((2, 3, 4), 0.05, 0.95), Float((2, 3, 4), 0.0, 1.0)]),
    Case("bce_saturated", lambda m, a, b: F(m).binary_cross_entropy(a, b, reduction="none"),
         [Fixed([0.0, 1.0, 1e-30, 0.5]), Fixed([0.0, 1.0, 0.0, 1.0])], grad=False),
    Case("bce_logits", lambda m, a, b: F(m).binary_cross_entropy_with_logits(a, b),
         [S, UNIT], gradgrad=True),
    Case("bce_logits_pos_weight", lambda m, a, b, w, p: F(m).binary_cross_entropy_with_logits(
        a, b, w, reduction="none", pos_weight=p),
        [Float(S, -30.0, 30.0), UNIT, Float(S, 0.0, 1.0, grad=False),
         Float((5,), 0.5, 3.0, grad=False)], gradgrad=True),
    # cross-entropy with class indices
    Case("ce", lambda m, x, t: F(m).cross_entropy(x, t), [LOGITS, LABELS], gradgrad=True),
    Case("ce_sum", lambda m, x, t: F(m).cross_entropy(x, t, reduction="sum"), [LOGITS, LABELS]),
    Case("ce_none", lambda m, x, t: F(m).cross_entropy(x, t, reduction="none"), [LOGITS, LABELS],
         gradgrad=True),
    Case("ce_weight", lambda m, x, t, w: F(m).cross_entropy(x, t, w), [LOGITS, LABELS, CLASS_W],
         gradgrad=True),
    Case("ce_ignore_index", lambda m, x, t: F(m).cross_entropy(x, t, ignore_index=2),
         [LOGITS, LABELS], gradgrad=True),
    Case("ce_smoothing", lambda m, x, t: F(m).cross_entropy(x, t, label_smoothing=0.2),
         [LOGITS, LABELS], gradgrad=True),
    Case("ce_all_options", lambda m, x, t, w: F(m).cross_entropy(
        x, t, w, ignore_index=1, label_smoothing=0.3), [LOGITS, LABELS, CLASS_W], gradgrad=True),
    Case("ce_all_options_none", lambda m, x, t, w: F(m).cross_entropy(
        x, t, w, ignore_index=1, reduction="none", label_smoothing=0.3),
        [LOGITS, LABELS, CLASS_W], gradgrad=True),
    Case("ce_extra_dims", lambda m, x, t, w: F(m).cross_entropy(x, t, w, label_smoothing=0.1),
         [(2, 5, 3, 2), Int((2, 3, 2), 0, 5), CLASS_W], gradgrad=True),
    Case("ce_extra_dims_none", lambda m, x, t: F(m).cross_entropy(x, t, reduction="none"),
         [(2, 5, 3), Int((2, 3), 0, 5)]),
    Case("ce_unbatched", lambda m, x, t: F(m).cross_entropy(x, t, reduction="none"),
         [(5,), Fixed(3)]),
    Case("ce_batch1", lambda m, x, t: F(m).cross_entropy(x, t), [(1, 5), Int((1,), 0, 5)]),
    Case("ce_empty", lambda m, x, t: F(m).cross_entropy(x, t, reduction="sum"),
         [(0, 5), Fixed(np.zeros(0, dtype=np.int64))]),
    Case("ce_empty_mean", lambda m, x, t: F(m).cross_entropy(x, t),
         [(0, 5), Fixed(np.zeros(0, dtype=np.int64))], grad=False),
    Case("ce_large_logits", lambda m, x, t: F(m).cross_entropy(x, t),
         [Float(LOGITS, -500.0, 500.0), LABELS]),
    # cross-entropy with class probabilities
    Case("ce_probs", lambda m, x, q: F(m).cross_entropy(x, q), [LOGITS, Float(LOGITS, 0.0, 1.0)],
         gradgrad=True),
    Case("ce_probs_all_options", lambda m, x, q, w: F(m).cross_entropy(
        x, q, w, reduction="none", label_smoothing=0.2), [LOGITS, Float(LOGITS, 0.0, 1.0),
                                                          CLASS_W], gradgrad=True),
    Case("ce_probs_extra_dims", lambda m, x, q: F(m).cross_entropy(x, q, reduction="sum"),
         [(2, 5, 3), Float((2, 5, 3), 0.0, 1.0)]),
    Case("ce_probs_unbatched", lambda m, x, q: F(m).cross_entropy(x, q), [(5,), Float((5,), 0, 1)]),
    # nll
    # nll is linear in its input: torch's second derivative is zeros, ours is absent
    Case("nll", lambda m, x, t: F(m).nll_loss(x, t), [LOGITS, LABELS]),
    Case("nll_weight_ignore_sum", lambda m, x, t, w: F(m).nll_loss(
        x, t, w, ignore_index=0, reduction="sum"), [LOGITS, LABELS, CLASS_W]),
    Case("nll_weight_ignore_mean", lambda m, x, t, w: F(m).nll_loss(x, t, w, ignore_index=3),
         [LOGITS, LABELS, CLASS_W]),
    Case("nll_extra_dims_none", lambda m, x, t: F(m).nll_loss(x, t, reduction="none"),
         [(2, 5, 3), Int((2, 3), 0, 5)]),
    Case("nll_unbatched", lambda m, x, t: F(m).nll_loss(x, t), [(5,), Fixed(4)]),
    # every target ignored: the mean is nan, the gradient zero (as torch)
    Case("nll_all_ignored", lambda m, x, t: F(m).nll_loss(x, t),
         [(2, 5), Fixed([-100, -100])], gradcheck=False),
    Case("ce_all_ignored", lambda m, x, t: F(m).cross_entropy(x, t, ignore_index=3),
         [(2, 5), Fixed([3, 3])], gradcheck=False),
    Case("multi_margin", lambda m, x, t: F(m).multi_margin_loss(x, t, margin=1.5),
         [LOGITS, LABELS]),
    Case("multi_margin_p2_weight", lambda m, x, t, w: F(m).multi_margin_loss(
        x, t, p=2, weight=w, reduction="none"), [LOGITS, LABELS, CLASS_W]),
    Case("multilabel_soft_margin", lambda m, x, y, w: F(m).multilabel_soft_margin_loss(x, y, w),
         [S, Fixed((np.arange(20).reshape(S) % 3 == 0).astype(np.float32)),
          Float((5,), 0.2, 1.0, grad=False)], gradgrad=True),
    # embeddings and ranking
    Case("cosine_embedding", lambda m, a, b, y: F(m).cosine_embedding_loss(a, b, y, margin=-0.2),
         [S, S, SIGNS], gradgrad=True),
    Case("cosine_embedding_1d", lambda m, a, b: F(m).cosine_embedding_loss(
        a, b, m.tensor(-1.0), reduction="none"), [(5,), (5,)]),
    Case("margin_ranking", lambda m, a, b, y: F(m).margin_ranking_loss(a, b, y, margin=0.3),
         [(4,), (4,), SIGNS], gradgrad=True),
    Case("hinge_embedding", lambda m, a, y: F(m).hinge_embedding_loss(a, y, margin=0.5,
                                                                     reduction="sum"),
         [(2, 4), Fixed([[1.0, -1.0, -1.0, 1.0]] * 2)], gradgrad=True),
    Case("triplet", lambda m, a, p, n: F(m).triplet_margin_loss(a, p, n, margin=2.0),
         [S, S, S], gradgrad=True),
    Case("triplet_p1_swap", lambda m, a, p, n: F(m).triplet_margin_loss(
        a, p, n, margin=4.0, p=1, swap=True, reduction="none"), [S, S, S]),
]


def _ctc(reduction="mean", zero_infinity=False, lengths=(7, 5, 6), targets=(3, 0, 2)):
    def call(m, x, t):
        return F(m).ctc_loss(x.log_softmax(2), t, list(lengths), list(targets),
                             reduction=reduction, zero_infinity=zero_infinity)
    return call


CTC_TARGETS = Int((3, 4), 1, 5)
CASES += [
    Case("ctc_mean", _ctc(), [(7, 3, 5), CTC_TARGETS]),
    Case("ctc_sum_blank", lambda m, x, t: F(m).ctc_loss(x.log_softmax(2), t, [7, 7, 4], [3, 1, 2],
                                                         blank=4, reduction="sum"),
         [(7, 3, 5), Int((3, 3), 0, 4)]),
    Case("ctc_concatenated", lambda m, x, t: F(m).ctc_loss(x.log_softmax(2), t, [6, 6], [2, 3],
                                                            reduction="none"),
         [(6, 2, 4), Fixed([1, 1, 2, 3, 3])]),
    # sample 0 needs 5 frames for [1, 1] with its blank but has 2: an infinite loss
    Case("ctc_zero_infinity", lambda m, x, t: F(m).ctc_loss(x.log_softmax(2), t, [2, 6], [2, 2],
                                                             reduction="none", zero_infinity=True),
         [(6, 2, 4), Fixed([[1, 1], [2, 3]])]),
    Case("ctc_unbatched", lambda m, x, t: F(m).ctc_loss(x.log_softmax(1), t, m.tensor(5),
                                                         m.tensor(2)), [(5, 4), Fixed([1, 2])]),
    # torch's gradient with respect to raw log-probabilities is exp(lp) - posterior; match it
    Case("ctc_raw_log_probs", lambda m, x, t: F(m).ctc_loss(x, t, [5, 4], [2, 1]),
         [(5, 2, 3), Int((2, 2), 1, 3)], gradcheck=False),
]

test_forward, test_grad, test_gradcheck, test_gradgrad = run_family(CASES)


# ------------------------------------------------------------------------- errors
def _logits(*shape):
    return dl.randn(*shape)


@pytest.mark.parametrize("call, error, message", [
    (lambda: dl.functional.cross_entropy(_logits(3, 4), dl.tensor([0, 4, 1])), IndexError,
     r"cross_entropy: target 4 is out of bounds for 4 classes .*valid: \[0, 3\]"),
    (lambda: dl.functional.nll_loss(_logits(3, 4), dl.tensor([0, -1, 1])), IndexError,
     r"nll_loss: target -1 is out of bounds"),
    (lambda: dl.functional.cross_entropy(_logits(3, 4), dl.tensor([0, 1])), ShapeError,
     r"cross_entropy: target of shape \(2,\) does not fit input of shape \(3, 4\); valid: \(3,\)"),
    (lambda: dl.functional.cross_entropy(_logits(3, 4), dl.ones(3, 5)), ShapeError,
     r"cross_entropy: target of shape \(3, 5\) must have the same shape as the input \(3, 4\)"),
    (lambda: dl.functional.nll_loss(_logits(3, 4), dl.tensor([True, False, True])), DTypeError,
     r"nll_loss: target must hold class indices .*bool"),
    (lambda: dl.functional.cross_entropy(_logits(3, 4), dl.tensor([0, 1, 2]), weight=dl.ones(3)),
     ShapeError, r"cross_entropy: weight of shape \(3,\) must have one entry per class, shape "
     r"\(4,\)"),
    (lambda: dl.functional.mse_loss(_logits(3), _logits(3), reduction="avg"), ValueError,
     r"mse_loss: reduction must be one of 'none', 'mean', 'sum', got 'avg'"),
    (lambda: dl.functional.kl_div(_logits(3), _logits(3), reduction="max"), ValueError,
     r"kl_div: reduction must be one of .*'batchmean', got 'max'"),
    (lambda: dl.functional.mse_loss(_logits(3, 2), _logits(4)), ShapeError,
     r"mse_loss: input of shape \(3, 2\) and target of shape \(4,\) do not broadcast"),
    (lambda: dl.functional.binary_cross_entropy(dl.tensor([0.5, 1.5]), dl.tensor([0.0, 1.0])),
     ValueError, r"binary_cross_entropy: all elements of input should be between 0 and 1"),
    (lambda: dl.functional.binary_cross_entropy_with_logits(_logits(3), _logits(3, 1)),
     ShapeError, r"binary_cross_entropy_with_logits: target of shape \(3, 1\) must have the "
     r"same shape as the input \(3,\)"),
    (lambda: dl.functional.cross_entropy(dl.tensor([[1, 2]]), dl.tensor([0])), DTypeError,
     r"cross_entropy: not supported for int64 tensors; valid: floating-point tensors .*x.float"),
    (lambda: dl.functional.triplet_margin_loss(_logits(2, 3), _logits(2, 3), _logits(3)),
     ShapeError, r"triplet_margin_loss: all inputs must have the same number of dimensions"),
    (lambda: dl.functional.gaussian_nll_loss(_logits(2, 3), _logits(2, 3), dl.ones(3, 2)),
     ShapeError, r"gaussian_nll_loss: var of shape \(3, 2\) does not fit input of shape \(2, 3\)"),
    (lambda: dl.functional.ctc_loss(_logits(4, 2, 3).log_softmax(2), dl.tensor([[1, 2], [1, 1]]),
                                    [5, 4], [2, 2]), ValueError,
     r"ctc_loss: input_lengths must be at most T=4, got 5"),
    (lambda: dl.functional.ctc_loss(_logits(4, 2, 3).log_softmax(2), dl.tensor([[1, 2], [1, 1]]),
                                    [4, 4], [3, 2]), ShapeError,
     r"ctc_loss: targets of shape \(2, 2\) do not fit a batch of 2 with target lengths up to 3"),
    (lambda: dl.functional.ctc_loss(_logits(4, 2, 3).log_softmax(2), dl.tensor([[1, 7], [1, 1]]),
                                    [4, 4], [2, 2]), IndexError,
     r"ctc_loss: target labels must be in \[0, 2\]"),
])
def test_error_messages(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_legacy_reduction_flags_warn_and_apply():
    x, y = _logits(3, 2), _logits(3, 2)
    with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated"):
        out = dl.functional.mse_loss(x, y, size_average=False)
    np.testing.assert_allclose(out.item(), dl.functional.mse_loss(x, y, reduction="sum").item(),
                               rtol=1e-6)


def test_broadcast_target_warns_like_torch():
    with pytest.warns(UserWarning, match="mse_loss: using a target size"):
        dl.functional.mse_loss(_logits(3, 2), _logits(2))


def test_cross_entropy_double_backward_matches_composition():
    """Under create_graph the fused op's gradient equals log_softmax + nll's, to 2nd order."""
    rs = np.random.default_rng(0)
    x = dl.tensor(rs.standard_normal((4, 3)), requires_grad=True)
    t = dl.tensor([0, 2, 1, 2])
    v = dl.tensor(rs.standard_normal((4, 3)))
    second = []
    for loss in (dl.functional.cross_entropy(x, t, label_smoothing=0.1),
                 0.9 * dl.functional.nll_loss(x.log_softmax(1), t)
                 - 0.1 / 3 * x.log_softmax(1).sum(1).mean()):
        (g,) = dl.autograd.grad(loss, x, create_graph=True)
        (h,) = dl.autograd.grad((g * v).sum(), x)
        second.append(h.numpy())
    np.testing.assert_allclose(*second, rtol=1e-10, atol=1e-12)
