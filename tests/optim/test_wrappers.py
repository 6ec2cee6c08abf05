"""Lookahead and EMA against their rules written out in NumPy, their state_dict round trips
and errors; each optimizer of this family training a small network, alone and wrapped; and
gradient accumulation by not zeroing gradients between backward passes."""

from __future__ import annotations

import dlfree as dl
import dlfree.functional as F
from dlfree.optim.adabound import AdaBound
from dlfree.optim.adafactor import Adafactor
from dlfree.optim.ema import EMA
from dlfree.optim.lamb import LAMB
from dlfree.optim.lars import LARS
from dlfree.optim.lion import Lion
from dlfree.optim.lookahead import Lookahead
from dlfree.optim.novograd import NovoGrad
from dlfree.optim.sgd import SGD

import numpy as np
import pytest

RTOL, ATOL = 1e-10, 1e-12  # float64; ATOL only for coordinates that cross 0


def gradients(problem, values) -> list:
    """The gradient of the shared test loss, 0.5 * a * p**2 + sin(b * p), by hand."""
    return [a * x + b * np.cos(b * x) for x, a, b in zip(values, problem.scales, problem.freqs)]


# ---------------------------------------------------------------- Lookahead
def lookahead_over_momentum_sgd(problem, steps, lr, momentum, k, alpha) -> list:
    """Zhang et al. 2019, Algorithm 1, with inner momentum SGD (velocity = g on the first
    step, then momentum * velocity + g; x -= lr * velocity), whose state carries over."""
    fast = [v.copy() for v in problem.inits]
    slow = [v.copy() for v in problem.inits]
    velocity = None
    history = []
    for t in range(1, steps + 1):
        g = gradients(problem, fast)
        velocity = g if velocity is None else [momentum * v + d for v, d in zip(velocity, g)]
        fast = [x - lr * v for x, v in zip(fast, velocity)]
        if t % k == 0:
            slow = [s + alpha * (x - s) for s, x in zip(slow, fast)]
            fast = [s.copy() for s in slow]
        history.append([x.copy() for x in fast])
    return history


@pytest.mark.parametrize("k, alpha", [(5, 0.5), (3, 0.8), (1, 0.3)])
def test_lookahead_trajectory_follows_the_paper(k, alpha, problem):
    params = problem.dl_params()
    opt = Lookahead(SGD(params, lr=0.05, momentum=0.9), k=k, alpha=alpha)
    ours = problem.run_dl(opt, params, 23)
    expected = lookahead_over_momentum_sgd(problem, 23, 0.05, 0.9, k, alpha)
    for step, (a, b) in enumerate(zip(ours, expected, strict=True)):
        for x, y in zip(a, b, strict=True):
            np.testing.assert_allclose(x, y, rtol=RTOL, atol=ATOL, err_msg=f"step {step + 1}")


def test_lookahead_state_dict_round_trip_mid_run_is_bit_exact(problem):
    def make(params):
        return Lookahead(LAMB(params, lr=0.05, weight_decay=0.1), k=3, alpha=0.6)

    params = problem.dl_params()
    straight = problem.run_dl(make(params), params, 50)

    params = problem.dl_params()
    first = make(params)
    problem.run_dl(first, params, 20)  # mid-cycle: 20 = 3 * 6 + 2
    saved = first.state_dict()
    problem.run_dl(first, params, 5)  # the saved copy must not follow later steps
    resumed_params = problem.dl_params([v.copy() for v in straight[19]])
    resumed = make(resumed_params)
    resumed.load_state_dict(saved)
    rest = problem.run_dl(resumed, resumed_params, 30)
    for a, b in zip(rest[-1], straight[-1], strict=True):
        np.testing.assert_array_equal(a, b)


def test_lookahead_exposes_the_inner_optimizer(problem):
    params = problem.dl_params()
    inner = Lion(params[:2], lr=0.01)
    opt = Lookahead(inner, k=2)
    assert opt.param_groups is inner.param_groups and opt.defaults is inner.defaults
    opt.param_groups[0]["lr"] = 0.02  # as a scheduler would
    assert inner.param_groups[0]["lr"] == 0.02
    opt.add_param_group({"params": params[2:]})
    assert len(inner.param_groups) == 2

    def closure():
        opt.zero_grad()
        loss = problem.dl_loss(params)
        loss.backward()
        return loss

    loss = opt.step(closure)
    assert float(loss.item()) == pytest.approx(float(problem.dl_loss(
        problem.dl_params()).item()))
    assert opt.state is inner.state and all(p in opt.state for p in params)
    opt.zero_grad()
    assert all(p.grad is None for p in params)


@pytest.mark.parametrize("kwargs, message", [
    (dict(k=0), "k"), (dict(k=2.5), "k"), (dict(k=True), "k"),
    (dict(alpha=0.0), "alpha"), (dict(alpha=1.5), "alpha"), (dict(alpha="0.5"), "alpha"),
])
def test_lookahead_bad_hyperparameter_is_named(kwargs, message):
    inner = SGD([dl.Parameter(dl.zeros(2))], lr=0.1)
    with pytest.raises(ValueError, match=f"^Lookahead: {message} "):
        Lookahead(inner, **kwargs)


def test_lookahead_needs_an_optimizer():
    with pytest.raises(TypeError, match="Lookahead: optimizer must be"):
        Lookahead([dl.Parameter(dl.zeros(2))])


def test_lookahead_load_state_dict_rejects_mismatches(problem):
    params = problem.dl_params()
    opt = Lookahead(SGD(params, lr=0.1))
    problem.run_dl(opt, params, 1)
    saved = opt.state_dict()
    with pytest.raises(ValueError, match="expected a dict with keys"):
        opt.load_state_dict(saved["optimizer"])
    other = Lookahead(SGD(problem.dl_params([np.zeros(4)] + problem.inits[1:]), lr=0.1))
    with pytest.raises(ValueError, match=r"parameter 0 have shape \(3,\), the parameter \(4,\)"):
        other.load_state_dict(saved)


# ---------------------------------------------------------------- EMA
@pytest.mark.parametrize("use_num_updates", [False, True])
def test_ema_values_follow_the_rule(use_num_updates, problem):
    """shadow = d * shadow + (1 - d) * p after each update, d = decay or, counting updates,
    min(decay, (1 + n) / (10 + n)); the shadows start as the initial values."""
    params = problem.dl_params()
    ema = EMA(params, decay=0.9, use_num_updates=use_num_updates)
    rng = np.random.default_rng(3)
    expected = [v.copy() for v in problem.inits]
    for n in range(1, 21):
        with dl.no_grad():
            for p in params:
                p.add_(dl.tensor(rng.standard_normal(tuple(p.shape))))
        ema.update()
        d = min(0.9, (1 + n) / (10 + n)) if use_num_updates else 0.9
        expected = [d * s + (1 - d) * p.detach().numpy() for s, p in zip(expected, params)]
        for shadow, want in zip(ema.shadow, expected, strict=True):
            np.testing.assert_allclose(shadow.numpy(), want, rtol=1e-12, atol=1e-14)
    assert ema.num_updates == 20


def test_ema_swap_and_average_parameters_restore_exactly():
    values = np.array([-0.0, 1.5, np.inf, -np.nan, 1e-300, -2.0])
    p = dl.Parameter(dl.tensor(values))
    ema = EMA([p], decay=0.5)
    with dl.no_grad():
        p.mul_(3.0)
    ema.update()
    trained = p.detach().numpy().copy()
    averaged = ema.shadow[0].numpy().copy()
    with ema.average_parameters():
        assert p.detach().numpy().tobytes() == averaged.tobytes()
    assert p.detach().numpy().tobytes() == trained.tobytes()
    with pytest.raises(KeyError), ema.average_parameters():
        raise KeyError("an error while evaluating")
    assert p.detach().numpy().tobytes() == trained.tobytes()
    ema.swap()
    ema.swap()
    assert p.detach().numpy().tobytes() == trained.tobytes()
    assert ema.shadow[0].numpy().tobytes() == averaged.tobytes()


def test_ema_copy_to_keeps_the_averages():
    p = dl.Parameter(dl.tensor([1.0, 2.0]))
    ema = EMA([p], decay=0.5)
    with dl.no_grad():
        p.mul_(3.0)
    ema.update()
    ema.copy_to()
    np.testing.assert_array_equal(p.detach().numpy(), [2.0, 4.0])


def test_ema_refuses_to_update_or_save_while_swapped():
    ema = EMA([dl.Parameter(dl.zeros(2))])
    ema.swap()
    for method in (ema.update, ema.state_dict, ema.copy_to):
        with pytest.raises(RuntimeError, match="swapped"):
            method()


def test_ema_state_dict_round_trip_mid_run_is_bit_exact(problem):
    def train(opt, ema, params, steps):
        for _ in range(steps):
            opt.zero_grad()
            problem.dl_loss(params).backward()
            opt.step()
            ema.update()

    params = problem.dl_params()
    straight = EMA(params, decay=0.95, use_num_updates=True)
    train(Lion(params, lr=0.01), straight, params, 50)

    params = problem.dl_params()
    opt, first = Lion(params, lr=0.01), EMA(params, decay=0.95, use_num_updates=True)
    train(opt, first, params, 20)
    saved, saved_opt = first.state_dict(), opt.state_dict()
    at_step_20 = [p.detach().numpy().copy() for p in params]
    train(opt, first, params, 5)  # the saved copy must not follow later updates
    resumed_params = problem.dl_params(at_step_20)
    resumed_opt, resumed = Lion(resumed_params, lr=0.01), EMA(resumed_params, decay=0.5)
    resumed_opt.load_state_dict(saved_opt)
    resumed.load_state_dict(saved)
    train(resumed_opt, resumed, resumed_params, 30)
    assert resumed.num_updates == 50 and resumed.decay == 0.95
    for a, b in zip(resumed.shadow, straight.shadow, strict=True):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


@pytest.mark.parametrize("make, error, message", [
    (lambda: EMA([dl.Parameter(dl.zeros(2))], decay=1.5), ValueError, "decay"),
    (lambda: EMA([dl.Parameter(dl.zeros(2))], decay=-0.1), ValueError, "decay"),
    (lambda: EMA([dl.Parameter(dl.zeros(2))], use_num_updates=1), ValueError,
     "use_num_updates"),
    (lambda: EMA([]), ValueError, "empty parameter list"),
    (lambda: EMA([dl.tensor([1, 2])]), TypeError, "only floating-point"),
    (lambda: EMA([np.zeros(2)]), TypeError, "ndarray"),
    (lambda: EMA([p := dl.Parameter(dl.zeros(2)), p]), ValueError, "listed twice"),
])
def test_ema_bad_arguments_are_named(make, error, message):
    with pytest.raises(error, match=f"^EMA: .*{message}"):
        make()


def test_ema_load_state_dict_rejects_mismatches():
    ema = EMA([dl.Parameter(dl.zeros(2)), dl.Parameter(dl.zeros(3))])
    saved = ema.state_dict()
    with pytest.raises(ValueError, match="2 shadows, this EMA averages 1"):
        EMA([dl.Parameter(dl.zeros(2))]).load_state_dict(saved)
    with pytest.raises(ValueError, match=r"shadow 1 has shape \(3,\), its tensor \(4,\)"):
        EMA([dl.Parameter(dl.zeros(2)), dl.Parameter(dl.zeros(4))]).load_state_dict(saved)
    with pytest.raises(ValueError, match="expected a dict with keys"):
        ema.load_state_dict({"shadow": saved["shadow"]})


# ---------------------------------------------------------------- training and accumulation
OPTIMIZERS = {
    "LAMB": lambda params: LAMB(params, lr=0.05),
    "NovoGrad": lambda params: NovoGrad(params, lr=0.05),
    "AdaBound": lambda params: AdaBound(params, lr=0.02),
    "LARS": lambda params: LARS(params, lr=20.0),
    "Lion": lambda params: Lion(params, lr=0.02),
    "Adafactor": lambda params: Adafactor(params, lr=0.05, relative_step=False),
}


def _network(rng):
    x = dl.tensor(rng.standard_normal((64, 8)).astype(np.float32))
    y = dl.tensor(rng.integers(0, 3, 64))
    w1 = dl.Parameter(dl.tensor((rng.standard_normal((8, 16)) / 8 ** 0.5).astype(np.float32)))
    w2 = dl.Parameter(dl.tensor((rng.standard_normal((16, 3)) / 4).astype(np.float32)))
    return x, y, [w1, w2]


@pytest.mark.parametrize("wrapped", [False, True], ids=["alone", "lookahead"])
@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_training_a_small_network_lowers_the_loss(name, wrapped):
    """30 full-batch steps cut the cross-entropy by at least 10%, and so does evaluating
    with the EMA of the weights."""
    x, y, params = _network(np.random.default_rng(7))
    opt = OPTIMIZERS[name](params)
    if wrapped:
        opt = Lookahead(opt)
    ema = EMA(params, decay=0.8)

    def loss():
        return F.cross_entropy(F.relu(x @ params[0]) @ params[1], y)

    def closure():
        opt.zero_grad()
        value = loss()
        value.backward()
        return value

    losses = []
    for _ in range(30):
        losses.append(opt.step(closure).item())
        ema.update()
    assert losses[-1] < 0.9 * losses[0], losses
    with dl.no_grad(), ema.average_parameters():
        assert loss().item() < 0.9 * losses[0]


def test_gradient_accumulation_is_not_zeroing_between_backward_passes():
    """Four backward passes over quarter batches (loss / 4 each) and one step equal one
    step on the whole batch: gradients add up in .grad, so no wrapper is needed."""
    rng = np.random.default_rng(5)
    x, y, whole = _network(rng)
    x, whole = x.to(dl.float64), [dl.Parameter(p.detach().to(dl.float64)) for p in whole]
    parts = [dl.Parameter(p.detach().clone()) for p in whole]

    def loss(params, rows):
        return F.cross_entropy(F.relu(x[rows] @ params[0]) @ params[1], y[rows])

    opt = LAMB(whole, lr=0.05, weight_decay=0.1)
    loss(whole, slice(None)).backward()
    opt.step()
    opt = LAMB(parts, lr=0.05, weight_decay=0.1)
    for start in range(0, 64, 16):
        (loss(parts, slice(start, start + 16)) / 4).backward()
    opt.step()
    for a, b in zip(parts, whole, strict=True):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-12)


BACKEND_CASES = {
    **OPTIMIZERS,
    "LAMB-debias": lambda params: LAMB(params, lr=0.05, weight_decay=0.1, debias=True),
    "NovoGrad-amsgrad": lambda params: NovoGrad(params, lr=0.05, amsgrad=True,
                                                weight_decay=0.1),
    "AdaBound-amsbound": lambda params: AdaBound(params, lr=0.05, amsbound=True),
    "Adafactor-beta1": lambda params: Adafactor(params, beta1=0.9, weight_decay=0.1),
    "Lookahead": lambda params: Lookahead(Lion(params, lr=0.02), k=2),
}


@pytest.mark.parametrize("name", list(BACKEND_CASES))
def test_runs_on_every_backend_as_on_the_cpu(name, device, problem):
    """Ten steps on `device` (gradients set by hand) land where the CPU's do, and so does
    an EMA of them."""

    def run(on):
        params = [dl.Parameter(dl.tensor(v, device=on)) for v in problem.inits]
        opt, ema = BACKEND_CASES[name](params), EMA(params, decay=0.7)
        for _ in range(10):
            values = [p.detach().cpu().numpy() for p in params]
            for p, g in zip(params, gradients(problem, values)):
                p.grad = dl.tensor(g, device=on)
            opt.step()
            ema.update()
        return [p.detach().cpu().numpy() for p in params + ema.shadow]

    for a, b in zip(run(device), run("cpu"), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)
