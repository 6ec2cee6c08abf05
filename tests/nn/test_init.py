"""`dlfree.nn.init` against the definitions of torch.nn.init (distributions checked with
Kolmogorov-Smirnov tests, structure checked exactly), `calculate_gain` against torch's,
reproducibility through dl.free's generators, and every layer's default initialisation
against torch's (two-sample KS tests, moments and bounds over large layers)."""

from __future__ import annotations

import math

import dlfree as dl
import dlfree.nn as nn
from dlfree.nn import init

import numpy as np
import pytest
import torch
from scipy import stats

from support.torch_copy import to_numpy

# A KS p-value below this rejects "same distribution"; every draw here is seeded, so a
# passing case stays passing, and a wrong scale or shape gives p-values far below it.
P_MIN = 1e-3


def _param(*shape):
    return dl.Parameter(dl.empty(*shape))


def _ks(values, dist, *args) -> float:
    return stats.kstest(np.ravel(values), dist, args=args).pvalue


# -------------------------------------------------------------------------- gains
@pytest.mark.parametrize("nonlinearity, param", [
    ("linear", None), ("conv1d", None), ("conv2d", None), ("conv3d", None),
    ("conv_transpose1d", None), ("conv_transpose2d", None), ("conv_transpose3d", None),
    ("sigmoid", None), ("tanh", None), ("relu", None), ("selu", None),
    ("leaky_relu", None), ("leaky_relu", 0.2), ("leaky_relu", 1), ("leaky_relu", math.sqrt(5)),
])
def test_calculate_gain_matches_torch(nonlinearity, param):
    assert init.calculate_gain(nonlinearity, param) == pytest.approx(
        torch.nn.init.calculate_gain(nonlinearity, param), rel=1e-12)


@pytest.mark.parametrize("nonlinearity, param, match", [
    ("swish", None, "unsupported nonlinearity 'swish'"),
    ("leaky_relu", True, "not a valid number"),
    ("leaky_relu", "0.1", "not a valid number"),
])
def test_calculate_gain_rejects_bad_arguments(nonlinearity, param, match):
    with pytest.raises(ValueError, match=match):
        init.calculate_gain(nonlinearity, param)


# ------------------------------------------------------------- distributions by rule
def _uniform_bound(rule, shape, **kw) -> float:
    """The bound of torch.nn.init's uniform rules, written out."""
    receptive = math.prod(shape[2:])
    fan_in, fan_out = shape[1] * receptive, shape[0] * receptive
    if rule == "xavier":
        return kw.get("gain", 1.0) * math.sqrt(6 / (fan_in + fan_out))
    fan = fan_in if kw.get("mode", "fan_in") == "fan_in" else fan_out
    gain = torch.nn.init.calculate_gain(kw.get("nonlinearity", "leaky_relu"), kw.get("a", 0))
    return gain * math.sqrt(3 / fan)


@pytest.mark.parametrize("fn, kwargs, shape", [
    (init.xavier_uniform_, {}, (200, 300)),
    (init.xavier_uniform_, {"gain": 2.0}, (64, 32, 3, 3)),
    (init.kaiming_uniform_, {}, (300, 200)),
    (init.kaiming_uniform_, {"a": math.sqrt(5), "mode": "fan_out"}, (64, 32, 3, 3)),
    (init.kaiming_uniform_, {"nonlinearity": "relu"}, (32, 16, 5)),
])
def test_uniform_rules_follow_their_bounds(fn, kwargs, shape):
    dl.manual_seed(0)
    values = to_numpy(fn(_param(*shape), **kwargs))
    bound = _uniform_bound("xavier" if fn is init.xavier_uniform_ else "kaiming", shape, **kwargs)
    assert np.abs(values).max() <= bound
    assert _ks(values, "uniform", -bound, 2 * bound) > P_MIN


@pytest.mark.parametrize("fn, kwargs, shape, std", [
    (init.xavier_normal_, {}, (200, 300), math.sqrt(2 / 500)),
    (init.xavier_normal_, {"gain": 0.5}, (64, 32, 3), 0.5 * math.sqrt(2 / (96 * 3))),
    (init.kaiming_normal_, {}, (300, 200), math.sqrt(2 / (1 + 0.01**2)) / math.sqrt(200)),
    (init.kaiming_normal_, {"mode": "fan_out", "nonlinearity": "relu"}, (16, 8, 3, 3),
     math.sqrt(2) / math.sqrt(16 * 9)),
    (init.kaiming_normal_, {"a": 0.2, "nonlinearity": "leaky_relu"}, (300, 200),
     math.sqrt(2 / 1.04) / math.sqrt(200)),
])
def test_normal_rules_follow_their_std(fn, kwargs, shape, std):
    dl.manual_seed(1)
    values = to_numpy(fn(_param(*shape), **kwargs))
    assert _ks(values, "norm", 0.0, std) > P_MIN


def test_uniform_and_normal_fill_with_their_distributions():
    dl.manual_seed(2)
    u = to_numpy(init.uniform_(_param(100, 500), -0.5, 2.0))
    assert u.min() >= -0.5 and u.max() < 2.0 and _ks(u, "uniform", -0.5, 2.5) > P_MIN
    n = to_numpy(init.normal_(_param(100, 500), 3.0, 0.5))
    assert _ks(n, "norm", 3.0, 0.5) > P_MIN


@pytest.mark.parametrize("mean, std, a, b", [(0.0, 1.0, -2.0, 2.0), (0.0, 0.02, -0.04, 0.04),
                                             (1.0, 2.0, 0.5, 6.0), (0.0, 1.0, 1.5, 3.0)])
def test_trunc_normal_is_the_truncated_normal(mean, std, a, b):
    dl.manual_seed(3)
    values = to_numpy(init.trunc_normal_(_param(200, 300), mean, std, a, b))
    assert values.min() >= a and values.max() <= b
    reference = stats.truncnorm((a - mean) / std, (b - mean) / std, loc=mean, scale=std)
    assert stats.kstest(values.ravel(), reference.cdf).pvalue > P_MIN


def test_trunc_normal_warns_when_the_mean_is_far_outside_the_interval():
    with pytest.warns(UserWarning, match="more than 2 std"):
        init.trunc_normal_(_param(10), mean=5.0, std=1.0, a=-1.0, b=1.0)


# -------------------------------------------------------------------------- structure
def test_constant_ones_and_zeros_fill_exactly():
    assert np.all(to_numpy(init.constant_(_param(3, 4), 0.75)) == np.float32(0.75))
    assert np.all(to_numpy(init.ones_(_param(5))) == 1)
    assert np.all(to_numpy(init.zeros_(_param(2, 2, 2))) == 0)


@pytest.mark.parametrize("shape", [(3, 5), (5, 3), (4, 4)])
def test_eye_is_the_identity(shape):
    np.testing.assert_array_equal(to_numpy(init.eye_(_param(*shape))), np.eye(*shape))


@pytest.mark.parametrize("shape, groups", [((4, 3, 3), 1), ((6, 4, 3, 3), 2),
                                           ((2, 2, 3, 2, 3), 1), ((6, 2, 5, 4), 3)])
def test_dirac_matches_torch(shape, groups):
    expected = torch.nn.init.dirac_(torch.empty(shape), groups).numpy()
    np.testing.assert_array_equal(to_numpy(init.dirac_(_param(*shape), groups)), expected)


@pytest.mark.parametrize("shape, gain", [((30, 50), 1.0), ((50, 30), 2.0), ((8, 2, 3, 3), 0.5),
                                         ((16, 16), 1.0)])
def test_orthogonal_gives_orthonormal_rows_or_columns_times_gain(shape, gain):
    dl.manual_seed(4)
    w = to_numpy(init.orthogonal_(_param(*shape), gain=gain)).reshape(shape[0], -1)
    small = w @ w.T if w.shape[0] <= w.shape[1] else w.T @ w
    np.testing.assert_allclose(small, gain**2 * np.eye(len(small)), atol=1e-5)


def test_orthogonal_square_matrices_are_haar_distributed():
    """For Haar-random orthogonal matrices each entry times sqrt(n) is close to N(0, 1)."""
    dl.manual_seed(5)
    entries = np.concatenate([to_numpy(init.orthogonal_(_param(40, 40))).ravel() * math.sqrt(40)
                              for _ in range(10)])
    assert _ks(entries, "norm", 0.0, 1.0) > P_MIN


# ---------------------------------------------------------------------- bad arguments
@pytest.mark.parametrize("call, match", [
    (lambda: init.xavier_uniform_(_param(5)), "at least 2 dims"),
    (lambda: init.kaiming_normal_(_param(3, 4), mode="fan_avg"), "'fan_in' or 'fan_out'"),
    (lambda: init.eye_(_param(2, 2, 2)), "only 2-d tensors"),
    (lambda: init.dirac_(_param(3, 3)), "3-, 4- or 5-d"),
    (lambda: init.dirac_(_param(5, 2, 3), groups=2), "divisible by groups"),
    (lambda: init.orthogonal_(_param(4)), "2 or more dims"),
    (lambda: init.trunc_normal_(_param(4), a=1.0, b=1.0), "need a < b"),
])
def test_bad_init_arguments_are_named(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_kaiming_on_an_empty_tensor_warns_and_does_nothing():
    with pytest.warns(UserWarning, match="zero-element tensor"):
        init.kaiming_uniform_(_param(0, 3))


# ------------------------------------------------------- reproducibility and no_grad
@pytest.mark.parametrize("name", sorted(init.INITIALIZERS))
def test_initializers_run_without_recording_and_are_registered(name):
    fn = dl.registry.initializers.get(name)
    assert fn is init.INITIALIZERS[name] is getattr(nn.init, name)
    assert dl.registry.initializers.provider(name)["distribution"] == "dlfree-nn"
    p = _param(4, 3, 3)
    args = {"constant_": (0.5,)}.get(name, ())
    if name == "eye_":
        p = _param(4, 3)
    out = fn(p, *args)
    assert out is p and p.grad_fn is None and p.requires_grad


@pytest.mark.parametrize("fn", [init.uniform_, init.normal_, init.trunc_normal_,
                                init.xavier_uniform_, init.xavier_normal_,
                                init.kaiming_uniform_, init.kaiming_normal_, init.orthogonal_])
def test_a_generator_makes_draws_reproducible(fn):
    first = to_numpy(fn(_param(6, 5), generator=dl.Generator().manual_seed(7)))
    again = to_numpy(fn(_param(6, 5), generator=dl.Generator().manual_seed(7)))
    other = to_numpy(fn(_param(6, 5), generator=dl.Generator().manual_seed(8)))
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(first, other)


def test_manual_seed_makes_layer_initialisation_reproducible():
    dl.manual_seed(11)
    a = nn.Conv2d(3, 4, 3).state_dict()
    dl.manual_seed(11)
    b = nn.Conv2d(3, 4, 3).state_dict()
    for key in a:
        np.testing.assert_array_equal(to_numpy(a[key]), to_numpy(b[key]))


# ------------------------------------------------------- layers' defaults vs torch's
# (layer, args, kwargs, uniform): uniform layers are also checked against torch's bounds
DEFAULTS = [
    ("Linear", (300, 200), {}, True),
    ("Linear", (20, 6000), {}, True),  # (rows with 6000 outputs test the bias closely)
    ("Bilinear", (40, 30, 50), {}, True),
    ("Conv1d", (64, 32, 5), {}, True),
    ("Conv2d", (32, 64, 3), {"groups": 2}, True),
    ("Conv2d", (3, 6000, 2), {}, True),
    ("Conv3d", (8, 16, 3), {}, True),
    ("ConvTranspose1d", (64, 32, 5), {}, True),
    ("ConvTranspose2d", (16, 32, 3), {"groups": 2}, True),
    ("ConvTranspose1d", (2, 6000, 2), {}, True),
    ("Bilinear", (5, 3, 6000), {}, True),
    ("Embedding", (1000, 64), {"padding_idx": 3}, False),
    ("EmbeddingBag", (1000, 64), {}, False),
    ("BatchNorm2d", (64,), {}, False),
    ("InstanceNorm2d", (8,), {"affine": True, "track_running_stats": True}, False),
    ("LayerNorm", (64,), {}, False),
    ("GroupNorm", (4, 64), {}, False),
    ("RMSNorm", (64,), {}, False),
    ("PReLU", (8,), {"init": 0.1}, False),
]


@pytest.mark.parametrize("layer, args, kwargs, uniform", DEFAULTS,
                         ids=[f"{row[0]}-{i}" for i, row in enumerate(DEFAULTS)])
def test_default_initialisation_matches_torch(layer, args, kwargs, uniform):
    dl.manual_seed(0)
    torch.manual_seed(0)
    ours = getattr(nn, layer)(*args, **kwargs).state_dict()
    theirs = getattr(torch.nn, layer)(*args, **kwargs).state_dict()
    assert list(ours) == list(theirs)
    for key, t in theirs.items():
        a, b = to_numpy(ours[key]).ravel(), to_numpy(t).ravel()
        if np.all(b == b[0]) or key.endswith("num_batches_tracked"):  # constant fills
            np.testing.assert_array_equal(a, b, err_msg=key)
            continue
        if layer == "Embedding":  # the padding row is zero in both, the rest N(0, 1)
            np.testing.assert_array_equal(a.reshape(1000, 64)[3], 0)
        assert stats.ks_2samp(a, b).pvalue > P_MIN, key
        if b.size < 5000:  # a bias vector: too few values for tight moments and extremes
            continue
        # means agree within 4 standard errors, standard deviations within 3 %
        assert abs(a.mean() - b.mean()) < 4 * b.std() * math.sqrt(2 / b.size), key
        assert a.std() == pytest.approx(b.std(), rel=0.03), key
        if uniform:  # the same bound: both samples' extremes come within 0.1 % of it
            bound = np.abs(b).max()
            assert bound * 0.99 < np.abs(a).max() <= bound * 1.01, key


@pytest.mark.parametrize("name", sorted(init.INITIALIZERS))
def test_initializers_overwrite_nan_and_inf_contents(name):
    """Uninitialised memory may hold NaN or inf; nothing of it may survive."""
    p = _param(4, 3) if name == "eye_" else _param(4, 3, 3)
    p.array[...] = np.nan
    p.array[0] = np.inf
    args = {"constant_": (0.5,)}.get(name, ())
    assert np.isfinite(to_numpy(init.INITIALIZERS[name](p, *args))).all()
