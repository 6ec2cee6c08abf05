"""LARS, Lion and Adafactor against their papers' update rules, written out below in plain
NumPy and run step by step in float64; plus state layout, state_dict round trips, gradient
handling, a small network and hyperparameter validation."""

from __future__ import annotations

import math

import dlfree as dl
from dlfree.optim.adafactor import Adafactor
from dlfree.optim.lars import LARS
from dlfree.optim.lion import Lion

import numpy as np
import pytest

from support.optim import (
    assert_same_trajectory,
    assert_skips_gradless_and_keeps_grads,
    assert_state_dict_round_trip_is_bit_exact,
    assert_state_is_float32,
    assert_step_advances_the_version,
    case_id,
    small_network_losses,
    use_float32,
)

STEPS = 25
CLASSES = {"LARS": LARS, "Lion": Lion, "Adafactor": Adafactor}


def gradients(problem, values) -> list:
    """The gradient of the shared test loss, 0.5 * a * p**2 + sin(b * p), by hand."""
    return [a * x + b * np.cos(b * x) for x, a, b in zip(values, problem.scales, problem.freqs)]


def norm(x) -> float:
    return float(np.sqrt(np.sum(x * x)))


def rms(x) -> float:
    return float(np.sqrt(np.mean(x * x)))


# ---------------------------------------------------------------- the rules, from the papers
def lars_rule(problem, values, steps, lr=1.0, momentum=0.9, weight_decay=0.0,
              trust_coefficient=0.001, eps=1e-8, excluded=()):
    """You et al. 2017, Algorithm 1 (local lr 1 where a norm is 0); `excluded` holds the
    indices of parameters that take plain momentum SGD steps."""
    x = [v.copy() for v in values]
    velocity = [np.zeros_like(v) for v in values]
    history = []
    for _ in range(steps):
        for i, g in enumerate(gradients(problem, x)):
            if i in excluded:
                direction = g
            else:
                w_norm, g_norm = norm(x[i]), norm(g)
                local_lr = (trust_coefficient * w_norm / (g_norm + weight_decay * w_norm + eps)
                            if w_norm > 0 and g_norm > 0 else 1.0)
                direction = local_lr * (g + weight_decay * x[i])
            velocity[i] = momentum * velocity[i] + lr * direction
            x[i] = x[i] - velocity[i]
        history.append([v.copy() for v in x])
    return history


def lion_rule(problem, values, steps, lr=1e-4, betas=(0.9, 0.99), weight_decay=0.0):
    """Chen et al. 2023, Algorithm 2."""
    beta1, beta2 = betas
    x = [v.copy() for v in values]
    m = [np.zeros_like(v) for v in values]
    history = []
    for _ in range(steps):
        for i, g in enumerate(gradients(problem, x)):
            c = beta1 * m[i] + (1 - beta1) * g
            x[i] = x[i] - lr * (np.sign(c) + weight_decay * x[i])
            m[i] = beta2 * m[i] + (1 - beta2) * g
        history.append([v.copy() for v in x])
    return history


def adafactor_rule(problem, values, steps, lr=None, eps=(1e-30, 1e-3), clip_threshold=1.0,
                   decay_rate=-0.8, beta1=None, weight_decay=0.0, scale_parameter=True,
                   relative_step=True, warmup_init=False):
    """Shazeer & Stern 2018, Algorithms 4 (matrices: row and column sums, V = R C / 1'R)
    and 5 (vectors), with relative step, parameter scale and update clipping, and HF's
    additions: optional first moment beta1, warmup_init and decoupled weight decay. A
    tensor with more than two dimensions is a stack of matrices (its last two)."""
    eps1, eps2 = eps
    x = [v.copy() for v in values]
    row = [np.zeros(v.shape[:-1] + (1,)) if v.ndim >= 2 else None for v in values]
    col = [np.zeros(v.shape[:-2] + (1,) + v.shape[-1:]) if v.ndim >= 2 else None
           for v in values]
    second = [np.zeros_like(v) for v in values]
    first = [np.zeros_like(v) for v in values]
    history = []
    for t in range(1, steps + 1):
        for i, g in enumerate(gradients(problem, x)):
            ceiling = 1e-6 * t if warmup_init else 1e-2
            rho = min(ceiling, 1 / math.sqrt(t)) if relative_step else lr
            alpha = max(eps2, rms(x[i])) * rho if scale_parameter else rho
            beta2 = 1 - t ** decay_rate
            squared = g * g + eps1
            if x[i].ndim >= 2:
                row[i] = beta2 * row[i] + (1 - beta2) * squared.sum(axis=-1, keepdims=True)
                col[i] = beta2 * col[i] + (1 - beta2) * squared.sum(axis=-2, keepdims=True)
                v_hat = row[i] * col[i] / row[i].sum(axis=-2, keepdims=True)
            else:
                second[i] = beta2 * second[i] + (1 - beta2) * squared
                v_hat = second[i]
            u = g / np.sqrt(v_hat)
            u = u / max(1.0, rms(u) / clip_threshold)
            step = alpha * u
            if beta1 is not None:
                first[i] = beta1 * first[i] + (1 - beta1) * step
                step = first[i]
            x[i] = x[i] - step - weight_decay * alpha * x[i]
        history.append([v.copy() for v in x])
    return history


RULES = {"LARS": lars_rule, "Lion": lion_rule, "Adafactor": adafactor_rule}

CASES = [
    ("LARS", dict()),
    ("LARS", dict(lr=2.0, momentum=0.0, trust_coefficient=0.01)),
    ("LARS", dict(lr=0.5, weight_decay=0.1, trust_coefficient=0.02, eps=1e-3)),
    ("Lion", dict()),
    ("Lion", dict(lr=0.01, weight_decay=0.5)),
    ("Lion", dict(lr=0.003, betas=(0.5, 0.9))),
    ("Adafactor", dict()),
    ("Adafactor", dict(beta1=0.9, weight_decay=0.1)),
    ("Adafactor", dict(lr=0.05, relative_step=False, scale_parameter=False, weight_decay=0.2)),
    ("Adafactor", dict(lr=0.02, relative_step=False, beta1=0.5)),
    ("Adafactor", dict(warmup_init=True)),
    ("Adafactor", dict(clip_threshold=0.1, decay_rate=-0.5, eps=(1e-20, 1e-2))),
]

# One configuration per optimizer that creates every kind of state it has.
RICH = {
    "LARS": dict(lr=0.5, weight_decay=0.1, trust_coefficient=0.02),
    "Lion": dict(lr=0.01, weight_decay=0.1),
    "Adafactor": dict(beta1=0.9, weight_decay=0.1),
}
NAMES = list(CLASSES)


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_trajectory_follows_the_paper(case, problem):
    name, kwargs = case
    params = problem.dl_params()
    ours = problem.run_dl(CLASSES[name](params, **kwargs), params, STEPS)
    assert not np.allclose(ours[-1][1], problem.inits[1])  # the parameters did move
    assert_same_trajectory(ours, RULES[name](problem, problem.inits, STEPS, **kwargs))


def test_lars_excluded_group_and_zero_tensor_follow_the_paper(problem):
    """Biases in an excluded group take momentum SGD steps without decay; a tensor that
    starts at 0 (norm 0) moves with local lr 1."""
    values = [v.copy() for v in problem.inits]
    values[0] = np.zeros_like(values[0])
    params = problem.dl_params(values)
    kwargs = dict(lr=0.05, weight_decay=0.1, trust_coefficient=0.05)
    groups = [{"params": params[:2]}, {"params": params[2:], "exclude_from_lars": True}]
    ours = problem.run_dl(LARS(groups, **kwargs), params, STEPS)
    assert_same_trajectory(ours, lars_rule(problem, values, STEPS, excluded=(2, 3), **kwargs))


def test_adafactor_keeps_factored_moments_for_matrices(problem):
    params = problem.dl_params()
    opt = Adafactor(params)
    problem.run_dl(opt, params, 1)
    shapes = [{k: tuple(v.shape) for k, v in opt.state[p].items() if k != "step"}
              for p in params]
    assert shapes == [
        {"exp_avg_sq": (3,)},
        {"exp_avg_sq_row": (4, 1), "exp_avg_sq_col": (1, 5)},
        {"exp_avg_sq_row": (2, 3, 1), "exp_avg_sq_col": (2, 1, 4)},
        {"exp_avg_sq": ()},
    ]


@pytest.mark.parametrize("name", NAMES)
def test_state_dict_round_trip_mid_run_is_bit_exact(name, problem):
    assert_state_dict_round_trip_is_bit_exact(CLASSES[name], RICH[name], problem)


@pytest.mark.parametrize("name", NAMES)
def test_parameters_without_grad_are_skipped_and_grads_are_not_modified(name, problem):
    assert_skips_gradless_and_keeps_grads(lambda p: CLASSES[name](p, **RICH[name]), problem)


@pytest.mark.parametrize("name", NAMES)
def test_step_advances_the_parameters_version(name, problem):
    assert_step_advances_the_version(lambda p: CLASSES[name](p, **RICH[name]), problem)


@pytest.mark.parametrize("name", NAMES)
def test_float32_parameters_keep_their_dtype(name, problem):
    params = problem.dl_params(use_float32(problem))
    opt = CLASSES[name](params, **RICH[name])
    ours = problem.run_dl(opt, params, 5)
    expected = RULES[name](problem, problem.inits, 5, **RICH[name])
    for a, b in zip(ours[-1], expected[-1], strict=True):
        assert a.dtype == np.float32
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    assert_state_is_float32(opt)


TRAINING_KWARGS = {
    "LARS": dict(lr=1.0, trust_coefficient=0.01),
    "Lion": dict(lr=0.01),
    "Adafactor": dict(lr=0.05, relative_step=False, scale_parameter=False),
}


@pytest.mark.parametrize("name", NAMES)
def test_training_a_small_network_lowers_the_loss(name):
    losses = small_network_losses(lambda p: CLASSES[name](p, **TRAINING_KWARGS[name]))
    assert losses[-1] < 0.9 * losses[0], losses


BAD_HYPERPARAMETERS = [
    ("LARS", dict(lr=-0.1), "lr"),
    ("LARS", dict(momentum=1.0), "momentum"),
    ("LARS", dict(momentum=-0.1), "momentum"),
    ("LARS", dict(weight_decay=-1e-4), "weight_decay"),
    ("LARS", dict(trust_coefficient=0.0), "trust_coefficient"),
    ("LARS", dict(eps=-1e-8), "eps"),
    ("LARS", dict(exclude_from_lars=1), "exclude_from_lars"),
    ("Lion", dict(lr=-1e-4), "lr"),
    ("Lion", dict(betas=(0.9, 1.0)), r"betas\[1\]"),
    ("Lion", dict(betas=(0.9,)), "betas"),
    ("Lion", dict(weight_decay=-0.1), "weight_decay"),
    ("Adafactor", dict(lr=0.01), "lr must be None with relative_step=True"),
    ("Adafactor", dict(relative_step=False), "relative_step=False needs an lr"),
    ("Adafactor", dict(relative_step=False, lr=-0.1), "lr"),
    ("Adafactor", dict(relative_step=False, lr=0.1, warmup_init=True), "warmup_init"),
    ("Adafactor", dict(eps=1e-30), "eps"),
    ("Adafactor", dict(eps=(0.0, 1e-3)), r"eps\[0\]"),
    ("Adafactor", dict(eps=(1e-30, -1.0)), r"eps\[1\]"),
    ("Adafactor", dict(clip_threshold=0.0), "clip_threshold"),
    ("Adafactor", dict(decay_rate=0.5), "decay_rate"),
    ("Adafactor", dict(decay_rate=-1.5), "decay_rate"),
    ("Adafactor", dict(beta1=1.0), "beta1"),
    ("Adafactor", dict(weight_decay=-0.1), "weight_decay"),
    ("Adafactor", dict(scale_parameter="yes"), "scale_parameter"),
    ("Adafactor", dict(relative_step=None), "relative_step"),
    ("Adafactor", dict(warmup_init=0), "warmup_init"),
]


@pytest.mark.parametrize("name, kwargs, bad", BAD_HYPERPARAMETERS,
                         ids=[f"{n}-{i}" for i, (n, _, b) in enumerate(BAD_HYPERPARAMETERS)])
def test_bad_hyperparameter_is_named(name, kwargs, bad):
    with pytest.raises(ValueError, match=f"^{name}: {bad}"):
        CLASSES[name]([dl.Parameter(dl.zeros(2))], **kwargs)


@pytest.mark.parametrize("name, group", [("LARS", {"lr": -1}), ("Lion", {"lr": -1}),
                                         ("Adafactor", {"beta1": -1})])
def test_bad_hyperparameter_in_a_group_is_named(name, group):
    opt = CLASSES[name]([dl.Parameter(dl.zeros(2))], **RICH[name])
    key = next(iter(group))
    with pytest.raises(ValueError, match=f"^{name}: {key} must be .*, got -1"):
        opt.add_param_group({"params": [dl.Parameter(dl.zeros(2))], **group})
