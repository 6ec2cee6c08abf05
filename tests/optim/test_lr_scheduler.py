"""LR schedulers: lr and momentum sequences equal PyTorch's bit for bit over 100 steps,
state_dict round trips mid-run, LinearWarmup against its formula and against PyTorch's
SequentialLR (rtol 1e-12), and argument validation."""

from __future__ import annotations

import json
import math

import dlfree as dl
from dlfree import optim
from dlfree.optim import lr_scheduler as dls

import numpy as np
import pytest
import torch
from torch.optim import lr_scheduler as tls

STEPS = 100
LRS = (0.1, 0.05)
# Keys the schedulers write into param groups, which must match PyTorch's.
GROUP_KEYS = ("initial_lr", "max_lr", "min_lr", "max_momentum", "base_momentum")


def torch_optimizer(kind: str):
    groups = [{"params": [torch.nn.Parameter(torch.zeros(2))], "lr": lr} for lr in LRS]
    if kind == "adam":
        return torch.optim.Adam(groups, lr=LRS[0])
    return torch.optim.SGD(groups, lr=LRS[0], momentum=0.9)


def dl_optimizer(kind: str):
    groups = [{"params": [dl.Parameter(dl.zeros(2))], "lr": lr} for lr in LRS]
    if kind == "adam":
        return optim.Adam(groups, lr=LRS[0])
    return optim.SGD(groups, lr=LRS[0], momentum=0.9)


def snapshot(opt, sched) -> list[float]:
    """get_last_lr(), then each group's lr and momentum (beta1 for Adam)."""
    momenta = [g["betas"][0] if "betas" in g else g["momentum"] for g in opt.param_groups]
    return [*sched.get_last_lr(), *(g["lr"] for g in opt.param_groups), *momenta]


def run(opt, sched, steps: int, metrics=None) -> np.ndarray:
    """The snapshots before the first step and after each of `steps` steps."""
    rows = [snapshot(opt, sched)]
    for t in range(steps):
        opt.step()
        if metrics is None:
            sched.step()
        else:
            sched.step(metrics[t])
        rows.append(snapshot(opt, sched))
    return np.array(rows, dtype=np.float64)


def decay_by_epoch(epoch):
    return 0.97 ** epoch


def saw(epoch):
    return 0.1 + (epoch % 10) / 10


def shrink(epoch):
    return 0.98


def grow_then_shrink(epoch):
    return 1.02 if epoch < 20 else 0.96


def soft_scale(x):
    return 1 / (1 + 0.02 * x)


# (factory(module, optimizer) -> scheduler, optimizer kind); `module` is torch's
# lr_scheduler or ours, so one line builds both sides.
CASES = {
    "step": (lambda m, o: m.StepLR(o, step_size=7, gamma=0.5), "sgd"),
    "step-every": (lambda m, o: m.StepLR(o, step_size=1, gamma=0.97), "sgd"),
    "step-default-gamma": (lambda m, o: m.StepLR(o, step_size=30), "sgd"),
    "multistep": (lambda m, o: m.MultiStepLR(o, milestones=[10, 25, 60], gamma=0.5), "sgd"),
    "multistep-repeated": (lambda m, o: m.MultiStepLR(o, [40, 3, 40], gamma=0.3), "sgd"),
    "exponential": (lambda m, o: m.ExponentialLR(o, gamma=0.95), "sgd"),
    "exponential-growth": (lambda m, o: m.ExponentialLR(o, gamma=1.01), "sgd"),
    "constant": (lambda m, o: m.ConstantLR(o), "sgd"),
    "constant-long": (lambda m, o: m.ConstantLR(o, factor=0.5, total_iters=20), "sgd"),
    "linear": (lambda m, o: m.LinearLR(o), "sgd"),
    "linear-partial": (lambda m, o: m.LinearLR(o, 0.25, 0.9, total_iters=40), "sgd"),
    "linear-decay": (lambda m, o: m.LinearLR(o, 1.0, 0.1, total_iters=100), "sgd"),
    "linear-to-zero": (lambda m, o: m.LinearLR(o, 0.5, 0.0, total_iters=30), "sgd"),
    "polynomial": (lambda m, o: m.PolynomialLR(o), "sgd"),
    "polynomial-square": (lambda m, o: m.PolynomialLR(o, total_iters=60, power=2.0), "sgd"),
    "polynomial-sqrt": (lambda m, o: m.PolynomialLR(o, total_iters=100, power=0.5), "sgd"),
    "lambda": (lambda m, o: m.LambdaLR(o, decay_by_epoch), "sgd"),
    "lambda-per-group": (lambda m, o: m.LambdaLR(o, [decay_by_epoch, saw]), "sgd"),
    "multiplicative": (lambda m, o: m.MultiplicativeLR(o, shrink), "sgd"),
    "multiplicative-per-group": (
        lambda m, o: m.MultiplicativeLR(o, [shrink, grow_then_shrink]), "sgd"),
    "cosine": (lambda m, o: m.CosineAnnealingLR(o, T_max=100), "sgd"),
    "cosine-past-tmax": (lambda m, o: m.CosineAnnealingLR(o, T_max=30, eta_min=1e-3), "sgd"),
    "cosine-short": (lambda m, o: m.CosineAnnealingLR(o, T_max=7, eta_min=0.01), "sgd"),
    "warm-restarts": (lambda m, o: m.CosineAnnealingWarmRestarts(o, T_0=10), "sgd"),
    "warm-restarts-mult": (
        lambda m, o: m.CosineAnnealingWarmRestarts(o, T_0=5, T_mult=2, eta_min=0.01), "sgd"),
    "warm-restarts-one": (lambda m, o: m.CosineAnnealingWarmRestarts(o, T_0=1, T_mult=3),
                          "sgd"),
    "cyclic-triangular": (
        lambda m, o: m.CyclicLR(o, base_lr=[0.01, 0.02], max_lr=0.1, step_size_up=10), "sgd"),
    "cyclic-triangular2": (
        lambda m, o: m.CyclicLR(o, 0.001, [0.1, 0.2], step_size_up=5, step_size_down=15,
                                mode="triangular2", base_momentum=[0.8, 0.7],
                                max_momentum=0.95), "sgd"),
    "cyclic-exp-range": (
        lambda m, o: m.CyclicLR(o, 0.01, 0.1, step_size_up=8, mode="exp_range", gamma=0.99),
        "sgd"),
    "cyclic-scale-fn": (
        lambda m, o: m.CyclicLR(o, 0.01, 0.1, step_size_up=6, scale_fn=soft_scale,
                                scale_mode="iterations"), "sgd"),
    "cyclic-no-momentum": (
        lambda m, o: m.CyclicLR(o, 0.01, 0.1, step_size_up=12, cycle_momentum=False), "sgd"),
    "cyclic-adam-beta1": (
        lambda m, o: m.CyclicLR(o, 0.001, 0.01, step_size_up=7, step_size_down=3,
                                base_momentum=0.85, max_momentum=0.95), "adam"),
    "one-cycle": (lambda m, o: m.OneCycleLR(o, max_lr=0.1, total_steps=100), "sgd"),
    "one-cycle-linear": (
        lambda m, o: m.OneCycleLR(o, max_lr=[0.1, 0.3], epochs=10, steps_per_epoch=10,
                                  pct_start=0.25, anneal_strategy="linear"), "sgd"),
    "one-cycle-three-phase": (
        lambda m, o: m.OneCycleLR(o, 0.2, total_steps=120, three_phase=True,
                                  base_momentum=[0.8, 0.85], max_momentum=[0.9, 0.99]), "sgd"),
    "one-cycle-three-phase-linear": (
        lambda m, o: m.OneCycleLR(o, 0.2, total_steps=150, pct_start=0.4, three_phase=True,
                                  anneal_strategy="linear", div_factor=10.0,
                                  final_div_factor=100.0), "sgd"),
    "one-cycle-adam-beta1": (lambda m, o: m.OneCycleLR(o, 0.01, total_steps=100), "adam"),
    "one-cycle-no-momentum": (
        lambda m, o: m.OneCycleLR(o, 0.05, total_steps=110, cycle_momentum=False), "sgd"),
    "sequential": (
        lambda m, o: m.SequentialLR(o, [m.LinearLR(o, 0.1, total_iters=10),
                                        m.ExponentialLR(o, 0.95)], milestones=[10]), "sgd"),
    "sequential-three": (
        lambda m, o: m.SequentialLR(o, [m.ConstantLR(o, 0.5, total_iters=5),
                                        m.StepLR(o, step_size=10, gamma=0.5),
                                        m.CosineAnnealingLR(o, T_max=40, eta_min=0.001)],
                                    milestones=[5, 40]), "sgd"),
    "sequential-lambda-restarts": (
        lambda m, o: m.SequentialLR(o, [m.LambdaLR(o, saw),
                                        m.CosineAnnealingWarmRestarts(o, T_0=7)],
                                    milestones=[33]), "sgd"),
    "sequential-multiplicative": (
        lambda m, o: m.SequentialLR(o, [m.PolynomialLR(o, total_iters=20),
                                        m.MultiplicativeLR(o, grow_then_shrink)],
                                    milestones=[15]), "sgd"),
    "chained": (
        lambda m, o: m.ChainedScheduler([m.ConstantLR(o, factor=0.5, total_iters=10),
                                         m.ExponentialLR(o, gamma=0.95)]), "sgd"),
    "chained-three": (
        lambda m, o: m.ChainedScheduler([m.StepLR(o, 9, gamma=0.7),
                                         m.LinearLR(o, 0.2, total_iters=25),
                                         m.CosineAnnealingLR(o, T_max=50)], o), "sgd"),
}


def build(module, name):
    factory, kind = CASES[name]
    opt = torch_optimizer(kind) if module is tls else dl_optimizer(kind)
    return opt, factory(module, opt)


def assert_group_keys_match(torch_opt, dl_opt):
    for tg, dg in zip(torch_opt.param_groups, dl_opt.param_groups):
        assert {k: tg[k] for k in GROUP_KEYS if k in tg} == \
            {k: dg[k] for k in GROUP_KEYS if k in dg}


@pytest.mark.parametrize("name", CASES)
def test_sequence_matches_torch(name):
    torch_opt, torch_sched = build(tls, name)
    dl_opt, dl_sched = build(dls, name)
    assert_group_keys_match(torch_opt, dl_opt)
    expected = run(torch_opt, torch_sched, STEPS)
    got = run(dl_opt, dl_sched, STEPS)
    # Bit for bit (tighter than rtol 1e-12): the same recursions in the same order.
    np.testing.assert_array_equal(got, expected)
    assert_group_keys_match(torch_opt, dl_opt)
    for attr in ("last_epoch", "base_lrs"):
        if hasattr(torch_sched, attr):
            assert getattr(dl_sched, attr) == pytest.approx(getattr(torch_sched, attr),
                                                            rel=1e-12)


def plateau_metrics(seed: int, rising: bool) -> list[float]:
    """A noisy curve that improves, then stalls, then improves a little."""
    rng = np.random.default_rng(seed)
    t = np.arange(STEPS)
    curve = 1 / (1 + 0.1 * np.minimum(t, 40)) - 0.002 * np.maximum(t - 70, 0)
    values = curve + 0.01 * rng.standard_normal(STEPS)
    return list(-values if rising else values)


PLATEAU_CASES = {
    "min-rel": (dict(patience=3), False),
    "min-abs-cooldown": (dict(patience=2, threshold=0.005, threshold_mode="abs", cooldown=4),
                         False),
    "max-rel": (dict(mode="max", factor=0.5, patience=1, threshold=0.01), True),
    "max-abs-min-lr": (dict(mode="max", factor=0.3, patience=0, threshold=0.001,
                            threshold_mode="abs", min_lr=[0.01, 0.002]), True),
    "large-eps": (dict(patience=0, factor=0.5, eps=0.004), False),
}


@pytest.mark.parametrize("name", PLATEAU_CASES)
def test_reduce_on_plateau_matches_torch(name):
    config, rising = PLATEAU_CASES[name]
    metrics = plateau_metrics(len(name), rising)
    torch_opt, dl_opt = torch_optimizer("sgd"), dl_optimizer("sgd")
    expected = run(torch_opt, tls.ReduceLROnPlateau(torch_opt, **config), STEPS, metrics)
    # One side passes tensors, as a training loop passing its loss would.
    got = run(dl_opt, dls.ReduceLROnPlateau(dl_opt, **config), STEPS,
              [dl.tensor(m) for m in metrics])
    np.testing.assert_array_equal(got, expected)
    assert len(np.unique(got[:, 0])) > 2  # the case cuts the lr more than once


def test_warm_restarts_fractional_epochs_match_torch():
    epochs = [e + b / 4 for e in range(12) for b in range(4)] + [3, 0.5, 40, 17.25]
    rows = []
    for module, opt in ((tls, torch_optimizer("sgd")), (dls, dl_optimizer("sgd"))):
        sched = module.CosineAnnealingWarmRestarts(opt, T_0=3, T_mult=2, eta_min=0.001)
        seq = []
        for epoch in epochs:
            opt.step()
            sched.step(epoch)
            seq.append(sched.get_last_lr() + [sched.T_cur, sched.T_i, sched.last_epoch])
        rows.append(seq)
    np.testing.assert_array_equal(rows[1], rows[0])


def round_trip(opt_factory, sched_factory, metrics=None):
    """100 uninterrupted steps, and 50 + save + fresh objects + load + 50 more."""
    opt = opt_factory()
    full = run(opt, sched_factory(opt), STEPS, metrics)
    opt = opt_factory()
    sched = sched_factory(opt)
    first = run(opt, sched, STEPS // 2, metrics)
    saved_opt = opt.state_dict()
    # Through JSON: the state is plain data, fit for a checkpoint without pickle.
    saved_sched = json.loads(json.dumps(sched.state_dict()))
    opt = opt_factory()
    sched = sched_factory(opt)
    opt.load_state_dict(saved_opt)
    sched.load_state_dict(saved_sched)
    rest = run(opt, sched, STEPS - STEPS // 2, None if metrics is None else
               metrics[STEPS // 2:])
    np.testing.assert_array_equal(np.concatenate([first, rest[1:]]), full)
    np.testing.assert_array_equal(rest[0], first[-1])


@pytest.mark.parametrize("name", CASES)
def test_state_dict_round_trip(name):
    factory, kind = CASES[name]
    round_trip(lambda: dl_optimizer(kind), lambda opt: factory(dls, opt))


@pytest.mark.parametrize("name", PLATEAU_CASES)
def test_reduce_on_plateau_state_dict_round_trip(name):
    config, rising = PLATEAU_CASES[name]
    round_trip(lambda: dl_optimizer("sgd"),
               lambda opt: dls.ReduceLROnPlateau(opt, **config),
               plateau_metrics(len(name), rising))


def test_warmup_state_dict_round_trip():
    round_trip(lambda: dl_optimizer("sgd"),
               lambda opt: dls.LinearWarmup(opt, 30, after=dls.CosineAnnealingLR(opt, 70),
                                            start_factor=0.1))


class Decay:
    """A callable object with state, which a state dict keeps (unlike a function)."""

    def __init__(self, rate):
        self.rate = rate

    def __call__(self, epoch):
        return self.rate ** epoch


def test_lambda_state_keeps_callable_objects_not_functions():
    opt = dl_optimizer("sgd")
    sched = dls.LambdaLR(opt, [Decay(0.9), decay_by_epoch])
    state = sched.state_dict()
    assert state["lr_lambdas"] == [{"rate": 0.9}, None]
    other = dls.LambdaLR(dl_optimizer("sgd"), [Decay(0.5), saw])
    other.load_state_dict(state)
    assert other.lr_lambdas[0].rate == 0.9
    assert other.lr_lambdas[1] is saw
    with pytest.raises(ValueError, match="callable object"):
        dls.LambdaLR(dl_optimizer("sgd"), [saw, saw]).load_state_dict(state)


def test_load_state_dict_rejects_another_schedulers_state():
    opt = dl_optimizer("sgd")
    state = dls.StepLR(opt, 5).state_dict()
    with pytest.raises(ValueError, match="missing keys.*T_max.*unexpected keys.*step_size"):
        dls.CosineAnnealingLR(opt, 10).load_state_dict(state)
    with pytest.raises(TypeError, match="expected a dict"):
        dls.StepLR(opt, 5).load_state_dict([1, 2])


# ---------------------------------------------------------------------------- LinearWarmup
def cosine_formula(base, step, T_max, eta_min):
    return eta_min + (base - eta_min) * (1 + math.cos(math.pi * step / T_max)) / 2


def warmup_formula(base, t, warmup, start, after_lr):
    if t < warmup:
        return base * (start + (1 - start) * t / warmup)
    return after_lr(base, t - warmup)


@pytest.mark.parametrize("warmup,start,T_max,eta_min", [
    (10, 0.0, 90, 0.0), (25, 0.1, 75, 0.001), (1, 0.5, 99, 0.0), (0, 0.0, 100, 0.002),
])
def test_warmup_then_cosine_follows_formula(warmup, start, T_max, eta_min):
    opt = dl_optimizer("sgd")
    after = dls.CosineAnnealingLR(opt, T_max=T_max, eta_min=eta_min)
    got = run(opt, dls.LinearWarmup(opt, warmup, after=after, start_factor=start), STEPS)
    expected = [[warmup_formula(base, t, warmup, start,
                                lambda b, s: cosine_formula(b, s, T_max, eta_min))
                 for base in LRS] for t in range(STEPS + 1)]
    np.testing.assert_allclose(got[:, :2], expected, rtol=1e-12, atol=0)
    np.testing.assert_array_equal(got[:, :2], got[:, 2:4])


def test_warmup_alone_follows_formula():
    opt = dl_optimizer("sgd")
    got = run(opt, dls.LinearWarmup(opt, 40, start_factor=0.2), STEPS)
    expected = [[warmup_formula(base, t, 40, 0.2, lambda b, s: b) for base in LRS]
                for t in range(STEPS + 1)]
    np.testing.assert_allclose(got[:, :2], expected, rtol=1e-15, atol=0)


AFTERS = {
    "cosine": lambda m, o: m.CosineAnnealingLR(o, T_max=60, eta_min=0.001),
    "exponential": lambda m, o: m.ExponentialLR(o, gamma=0.96),
    "step": lambda m, o: m.StepLR(o, step_size=12, gamma=0.5),
    "multiplicative": lambda m, o: m.MultiplicativeLR(o, grow_then_shrink),
    "warm-restarts": lambda m, o: m.CosineAnnealingWarmRestarts(o, T_0=9, T_mult=2),
}


@pytest.mark.parametrize("after", AFTERS)
def test_warmup_hands_over_to_after_run_alone(after):
    """After the warm-up, the lr is what `after` sets when run alone from the base lr."""
    warmup = 20
    alone_opt = dl_optimizer("sgd")
    alone = run(alone_opt, AFTERS[after](dls, alone_opt), STEPS - warmup)
    opt = dl_optimizer("sgd")
    got = run(opt, dls.LinearWarmup(opt, warmup, after=AFTERS[after](dls, opt),
                                    start_factor=0.3), STEPS)
    np.testing.assert_array_equal(got[warmup:, :4], alone[:, :4])


@pytest.mark.parametrize("after", [a for a in AFTERS if a != "multiplicative"])
@pytest.mark.parametrize("warmup,start", [(10, 0.1), (37, 0.5), (1, 1.0)])
def test_warmup_equals_torch_sequential_linear(after, warmup, start):
    torch_opt = torch_optimizer("sgd")
    torch_sched = tls.SequentialLR(
        torch_opt, [tls.LinearLR(torch_opt, start, 1.0, total_iters=warmup),
                    AFTERS[after](tls, torch_opt)], milestones=[warmup])
    dl_opt = dl_optimizer("sgd")
    dl_sched = dls.LinearWarmup(dl_opt, warmup, after=AFTERS[after](dls, dl_opt),
                                start_factor=start)
    np.testing.assert_allclose(run(dl_opt, dl_sched, STEPS), run(torch_opt, torch_sched, STEPS),
                               rtol=1e-12, atol=0)


# ---------------------------------------------------------------------------- validation
def foreign_scheduler():
    """A scheduler on an optimizer other than the one under test."""
    return dls.StepLR(dl_optimizer("sgd"), 3)


INVALID = [
    (lambda o: dls.StepLR(o, step_size=0), ValueError, "step_size must be an integer >= 1"),
    (lambda o: dls.StepLR(o, step_size=2.5), ValueError, "step_size"),
    (lambda o: dls.StepLR(o, 3, gamma=0.0), ValueError, "gamma must be a number > 0"),
    (lambda o: dls.MultiStepLR(o, [5, -1]), ValueError, "each milestone"),
    (lambda o: dls.MultiStepLR(o, 5), ValueError, "milestones must be a list"),
    (lambda o: dls.ExponentialLR(o, gamma=-0.5), ValueError, "gamma"),
    (lambda o: dls.ConstantLR(o, factor=0.0), ValueError, r"factor must be a number in \(0, 1\]"),
    (lambda o: dls.ConstantLR(o, factor=1.5), ValueError, "factor"),
    (lambda o: dls.ConstantLR(o, total_iters=0), ValueError, "total_iters"),
    (lambda o: dls.LinearLR(o, start_factor=0.0), ValueError, "start_factor"),
    (lambda o: dls.LinearLR(o, end_factor=1.2), ValueError, r"end_factor must be .*\[0, 1\]"),
    (lambda o: dls.LinearLR(o, total_iters=-3), ValueError, "total_iters"),
    (lambda o: dls.PolynomialLR(o, total_iters=0), ValueError, "total_iters"),
    (lambda o: dls.PolynomialLR(o, power=-1.0), ValueError, "power"),
    (lambda o: dls.LambdaLR(o, 3), TypeError, "lr_lambda must be a function"),
    (lambda o: dls.LambdaLR(o, [saw]), ValueError, "lr_lambda has 1 values.*2 param groups"),
    (lambda o: dls.MultiplicativeLR(o, [shrink, "x"]), TypeError, "entry 1"),
    (lambda o: dls.CosineAnnealingLR(o, T_max=0), ValueError, "T_max"),
    (lambda o: dls.CosineAnnealingLR(o, 10, eta_min=-1e-3), ValueError, "eta_min"),
    (lambda o: dls.CosineAnnealingWarmRestarts(o, T_0=0), ValueError, "T_0"),
    (lambda o: dls.CosineAnnealingWarmRestarts(o, 5, T_mult=1.5), ValueError, "T_mult"),
    (lambda o: dls.CosineAnnealingWarmRestarts(o, 5, eta_min="0"), ValueError, "eta_min"),
    (lambda o: dls.CyclicLR(o, 0.01, 0.1, mode="sawtooth"), ValueError,
     "mode must be one of 'triangular', 'triangular2', 'exp_range'"),
    (lambda o: dls.CyclicLR(o, 0.01, 0.1, step_size_up=0), ValueError, "step_size_up"),
    (lambda o: dls.CyclicLR(o, 0.01, 0.1, step_size_down=0), ValueError, "step_size_down"),
    (lambda o: dls.CyclicLR(o, [0.01, 0.02, 0.03], 0.1), ValueError, "base_lr has 3 values"),
    (lambda o: dls.CyclicLR(o, 0.01, 0.1, scale_fn=soft_scale, scale_mode="epochs"),
     ValueError, "scale_mode"),
    (lambda o: dls.CyclicLR(o, 0.01, 0.1, scale_fn=3), TypeError, "scale_fn"),
    (lambda o: dls.CyclicLR(o, 0.01, 0.1, mode="exp_range", gamma=0.0), ValueError, "gamma"),
    (lambda o: dls.CyclicLR(o, 0.01, 0.1, max_momentum=1.5), ValueError, "max_momentum"),
    (lambda o: dls.OneCycleLR(o, 0.1), ValueError, "total_steps, or both epochs"),
    (lambda o: dls.OneCycleLR(o, 0.1, total_steps=0), ValueError, "total_steps"),
    (lambda o: dls.OneCycleLR(o, 0.1, epochs=0, steps_per_epoch=5), ValueError, "epochs"),
    (lambda o: dls.OneCycleLR(o, 0.1, 100, pct_start=1.5), ValueError, "pct_start"),
    (lambda o: dls.OneCycleLR(o, 0.1, 100, anneal_strategy="exp"), ValueError,
     "anneal_strategy"),
    (lambda o: dls.OneCycleLR(o, 0.1, 100, div_factor=0), ValueError, "div_factor"),
    (lambda o: dls.OneCycleLR(o, [0.1], 100), ValueError, "max_lr has 1 values"),
    (lambda o: dls.OneCycleLR(o, 0.1, 100, base_momentum=-0.1), ValueError, "base_momentum"),
    (lambda o: dls.OneCycleLR(o, 0.1, 100, three_phase=1), ValueError, "three_phase"),
    (lambda o: dls.ReduceLROnPlateau(o, mode="avg"), ValueError, "mode must be one of"),
    (lambda o: dls.ReduceLROnPlateau(o, factor=1.0), ValueError, r"factor .*\[0, 1\)"),
    (lambda o: dls.ReduceLROnPlateau(o, patience=-1), ValueError, "patience"),
    (lambda o: dls.ReduceLROnPlateau(o, threshold_mode="pct"), ValueError, "threshold_mode"),
    (lambda o: dls.ReduceLROnPlateau(o, cooldown=-2), ValueError, "cooldown"),
    (lambda o: dls.ReduceLROnPlateau(o, min_lr=[0.0]), ValueError, "min_lr has 1 values"),
    (lambda o: dls.ReduceLROnPlateau(o, eps=-1.0), ValueError, "eps"),
    (lambda o: dls.SequentialLR(o, [], []), ValueError, "schedulers is empty"),
    (lambda o: dls.SequentialLR(o, [dls.StepLR(o, 3), dls.StepLR(o, 5)], [5, 8]), ValueError,
     "milestones must be a list of 1 epochs"),
    (lambda o: dls.SequentialLR(o, [dls.StepLR(o, 3)] * 3, [9, 4]), ValueError,
     r"milestones\[1\] must be an integer >= 10"),
    (lambda o: dls.SequentialLR(o, [dls.StepLR(o, 3), dls.ReduceLROnPlateau(o)], [5]),
     ValueError, "scheduler 1 is a ReduceLROnPlateau"),
    (lambda o: dls.SequentialLR(o, [dls.StepLR(o, 3), foreign_scheduler()], [5]), ValueError,
     "scheduler 1 .* another optimizer"),
    (lambda o: dls.SequentialLR(o, [dls.StepLR(o, 3), "cosine"], [5]), TypeError,
     "scheduler 1 is a str"),
    (lambda o: dls.SequentialLR(o, [dls.StepLR(o, 3),
                                    dls.ChainedScheduler([dls.StepLR(o, 4)])], [5]),
     ValueError, "scheduler 1 is a ChainedScheduler"),
    (lambda o: dls.ChainedScheduler([]), ValueError, "schedulers is empty"),
    (lambda o: dls.ChainedScheduler([dls.ReduceLROnPlateau(o)]), ValueError,
     "ReduceLROnPlateau"),
    (lambda o: dls.ChainedScheduler([dls.StepLR(o, 3), foreign_scheduler()]), ValueError,
     "another optimizer"),
    (lambda o: dls.LinearWarmup(o, -1), ValueError, "warmup_steps"),
    (lambda o: dls.LinearWarmup(o, 5, start_factor=1.5), ValueError, "start_factor"),
    (lambda o: dls.LinearWarmup(o, 5, after=dls.ReduceLROnPlateau(o)), TypeError, "after"),
    (lambda o: dls.LinearWarmup(o, 5, after=dls.SequentialLR(o, [dls.StepLR(o, 3)], [])),
     TypeError, "not composite"),
    (lambda o: dls.LinearWarmup(o, 5, after=foreign_scheduler()), ValueError,
     "another optimizer"),
    (lambda o: dls.StepLR(object(), 3), TypeError, "expected an optimizer"),
    (lambda o: dls.StepLR(o, 3, last_epoch=-2), ValueError, "last_epoch"),
    (lambda o: dls.StepLR(o, 3, last_epoch=5), ValueError, "initial_lr"),
]


@pytest.mark.parametrize("make,error,message", INVALID)
def test_invalid_arguments_are_rejected(make, error, message):
    with pytest.raises(error, match=message):
        make(dl_optimizer("sgd"))


def test_cycle_momentum_needs_momentum_or_betas():
    opt = optim.Adagrad([dl.Parameter(dl.zeros(2))], lr=0.1)
    for make in (lambda: dls.CyclicLR(opt, 0.01, 0.1),
                 lambda: dls.OneCycleLR(opt, 0.1, total_steps=10)):
        with pytest.raises(ValueError, match="'momentum' or 'betas'.*cycle_momentum=False"):
            make()


def test_one_cycle_stepping_past_total_steps_is_an_error():
    opt = dl_optimizer("sgd")
    sched = dls.OneCycleLR(opt, 0.1, total_steps=10)
    for _ in range(10):
        sched.step()
    with pytest.raises(ValueError, match="stepped 11 times, but total_steps is 10"):
        sched.step()


def test_reduce_on_plateau_rejects_a_non_number():
    with pytest.raises(TypeError, match="metrics must be a number"):
        dls.ReduceLROnPlateau(dl_optimizer("sgd")).step("low")


def test_warm_restarts_rejects_a_negative_epoch():
    with pytest.raises(ValueError, match="epoch must be a number >= 0"):
        dls.CosineAnnealingWarmRestarts(dl_optimizer("sgd"), 5).step(-1)


def test_every_scheduler_is_registered_by_dlfree_optim():
    import dlfree as dl
    from dlfree.optim import lr_scheduler

    names = [n for n in lr_scheduler.__all__ if n != "LRScheduler"]
    assert set(names) <= set(dl.registry.schedulers.names())
    for name in names:
        assert dl.registry.schedulers.get(name) is getattr(lr_scheduler, name)
        assert dl.registry.schedulers.provider(name)["distribution"] == "dlfree-optim"
