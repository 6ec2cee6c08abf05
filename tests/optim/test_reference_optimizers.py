"""LAMB, NovoGrad and AdaBound/AMSBound against torch_optimizer 0.3.0: 50-step float64
trajectories per option, per-group and scheduled learning rates, the classic test functions
minimised with dl.free autograd, state_dict round trips, gradient handling, a small network and
validation."""

from __future__ import annotations

import dlfree as dl
from dlfree.optim.adabound import AdaBound
from dlfree.optim.lamb import LAMB
from dlfree.optim.novograd import NovoGrad

import numpy as np
import pytest
import torch
import torch_optimizer

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

PAIRS = {
    "LAMB": (LAMB, torch_optimizer.Lamb),
    "NovoGrad": (NovoGrad, torch_optimizer.NovoGrad),
    "AdaBound": (AdaBound, torch_optimizer.AdaBound),
}

# (optimizer, keyword arguments): the defaults and every option whose code path differs.
CASES = [
    ("LAMB", dict()),
    ("LAMB", dict(lr=0.05, weight_decay=0.1)),
    ("LAMB", dict(lr=0.05, clamp_value=0.5)),
    ("LAMB", dict(lr=0.05, adam=True)),
    ("LAMB", dict(lr=0.05, debias=True, betas=(0.8, 0.9))),
    ("LAMB", dict(lr=0.05, eps=1e-3, weight_decay=0.01, clamp_value=3.0, debias=True)),
    ("NovoGrad", dict()),
    ("NovoGrad", dict(lr=0.05, grad_averaging=True)),
    ("NovoGrad", dict(lr=0.05, amsgrad=True, betas=(0.9, 0.5))),
    ("NovoGrad", dict(lr=0.05, weight_decay=0.1)),
    ("NovoGrad", dict(lr=0.02, betas=(0.8, 0.99), eps=1e-3, weight_decay=0.05,
                      grad_averaging=True, amsgrad=True)),
    ("AdaBound", dict()),
    ("AdaBound", dict(lr=0.05, amsbound=True)),
    ("AdaBound", dict(lr=0.05, weight_decay=0.1)),
    ("AdaBound", dict(lr=0.05, final_lr=0.05, gamma=0.1)),
    ("AdaBound", dict(lr=0.02, betas=(0.8, 0.9), final_lr=0.2, gamma=0.01, eps=1e-4,
                      weight_decay=0.01, amsbound=True)),
]

# One configuration per optimizer that creates every kind of state it has.
RICH = {
    "LAMB": dict(lr=0.05, weight_decay=0.1, debias=True),
    "NovoGrad": dict(lr=0.05, weight_decay=0.1, grad_averaging=True, amsgrad=True),
    "AdaBound": dict(lr=0.05, weight_decay=0.1, amsbound=True),
}
NAMES = list(PAIRS)


@pytest.fixture(autouse=True)
def float64_torch_default():
    """torch_optimizer's NovoGrad makes its scalar second moment with torch.zeros([]), in
    the default dtype whatever the parameter's; float64 makes it measure the rule rather
    than float32 rounding (ours keeps the parameter's dtype)."""
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(previous)


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_trajectory_matches_torch_optimizer(case, problem):
    name, kwargs = case
    ours_cls, theirs_cls = PAIRS[name]
    params, tparams = problem.dl_params(), problem.torch_params()
    ours = problem.run_dl(ours_cls(params, **kwargs), params, 50)
    theirs = problem.run_torch(theirs_cls(tparams, **kwargs), tparams, 50)
    assert not np.allclose(ours[-1][1], problem.inits[1])  # the parameters did move
    assert_same_trajectory(ours, theirs)


@pytest.mark.parametrize("name", NAMES)
def test_per_group_and_scheduled_learning_rates_match_torch_optimizer(name, problem):
    """Two groups with different lr, both halved after 25 steps as a scheduler would
    (AdaBound's bounds follow lr / base_lr)."""
    kwargs = RICH[name]
    ours_cls, theirs_cls = PAIRS[name]

    def groups(params):
        return [{"params": params[:2]}, {"params": params[2:], "lr": kwargs["lr"] * 3}]

    params, tparams = problem.dl_params(), problem.torch_params()
    ours, theirs = ours_cls(groups(params), **kwargs), theirs_cls(groups(tparams), **kwargs)
    first = (problem.run_dl(ours, params, 25), problem.run_torch(theirs, tparams, 25))
    for group in ours.param_groups + theirs.param_groups:
        group["lr"] /= 2
    second = (problem.run_dl(ours, params, 25), problem.run_torch(theirs, tparams, 25))
    assert_same_trajectory(first[0] + second[0], first[1] + second[1])


def rosenbrock(x, y):
    return (1 - x) ** 2 + (y - x ** 2) ** 2


def quadratic(x, y):
    return x ** 2 + y ** 2


def beale(x, y):
    return ((1.5 - x + x * y) ** 2 + (2.25 - x + x * y ** 2) ** 2 +
            (2.625 - x + x * y ** 3) ** 2)


MINIMA = {rosenbrock: (1.0, 1.0), quadratic: (0.0, 0.0), beale: (3.0, 0.5)}

# (optimizer, function, keyword arguments, iterations)
DESCENTS = [
    ("LAMB", rosenbrock, dict(lr=0.1), 1000),
    ("LAMB", quadratic, dict(lr=0.2), 200),
    ("LAMB", beale, dict(lr=0.01), 1000),
    ("NovoGrad", rosenbrock, dict(lr=1.0, betas=(0.9, 0.999), grad_averaging=True), 300),
    ("NovoGrad", quadratic, dict(lr=0.3, betas=(0.9, 0.999), grad_averaging=True), 300),
    ("NovoGrad", beale, dict(lr=0.02, betas=(0.9, 0.9)), 300),
    ("AdaBound", rosenbrock, dict(lr=0.1, final_lr=0.1, gamma=0.01), 500),
    ("AdaBound", quadratic, dict(lr=0.1, final_lr=0.1, gamma=0.01), 200),
    ("AdaBound", beale, dict(lr=0.2, final_lr=0.1, gamma=0.01), 500),
]


@pytest.mark.parametrize("name, function, kwargs, iterations", DESCENTS,
                         ids=[f"{d[0]}-{d[1].__name__}" for d in DESCENTS])
def test_minimises_the_classic_functions_from_1_5_1_5(name, function, kwargs, iterations):
    """From (1.5, 1.5) in float64, with the lr decayed linearly to 0 over the run (LAMB
    and NovoGrad take steps of a fixed length, so only a decaying lr lets them settle),
    each coordinate ends within 1e-3 of the known minimum after `iterations` steps.
    Gradients come from dl.free's autograd."""
    point = dl.Parameter(dl.tensor([1.5, 1.5], dtype=dl.float64))
    opt = PAIRS[name][0]([point], **kwargs)
    for t in range(iterations):
        opt.param_groups[0]["lr"] = kwargs["lr"] * (1 - t / iterations)
        opt.zero_grad()
        function(point[0], point[1]).backward()
        opt.step()
    np.testing.assert_allclose(point.detach().numpy(), MINIMA[function], rtol=0, atol=1e-3)


@pytest.mark.parametrize("name", NAMES)
def test_state_dict_round_trip_mid_run_is_bit_exact(name, problem):
    assert_state_dict_round_trip_is_bit_exact(PAIRS[name][0], RICH[name], problem)


def test_adabound_base_lr_travels_with_the_state_dict(problem):
    """A resumed run whose constructor got another lr still bounds against the saved base."""
    params = problem.dl_params()
    first = AdaBound(params, lr=0.05)
    problem.run_dl(first, params, 5)
    resumed = AdaBound(problem.dl_params(), lr=0.01)
    resumed.load_state_dict(first.state_dict())
    assert resumed.param_groups[0]["base_lr"] == 0.05
    assert resumed.param_groups[0]["lr"] == 0.05


@pytest.mark.parametrize("name", NAMES)
def test_parameters_without_grad_are_skipped_and_grads_are_not_modified(name, problem):
    assert_skips_gradless_and_keeps_grads(lambda p: PAIRS[name][0](p, **RICH[name]), problem)


@pytest.mark.parametrize("name", NAMES)
def test_step_advances_the_parameters_version(name, problem):
    assert_step_advances_the_version(lambda p: PAIRS[name][0](p, **RICH[name]), problem)


TRAINING_KWARGS = {
    "LAMB": dict(lr=0.05),
    "NovoGrad": dict(lr=0.05),
    "AdaBound": dict(lr=0.02),
}


@pytest.mark.parametrize("name", NAMES)
def test_training_a_small_network_lowers_the_loss(name):
    losses = small_network_losses(lambda p: PAIRS[name][0](p, **TRAINING_KWARGS[name]))
    assert losses[-1] < 0.9 * losses[0], losses


@pytest.mark.parametrize("name", NAMES)
def test_float32_trajectory_keeps_its_dtype_and_stays_close(name, problem):
    values = use_float32(problem)
    params, tparams = problem.dl_params(values), problem.torch_params(values)
    ours_cls, theirs_cls = PAIRS[name]
    opt = ours_cls(params, **RICH[name])
    ours = problem.run_dl(opt, params, 10)
    theirs = problem.run_torch(theirs_cls(tparams, **RICH[name]), tparams, 10)
    assert_state_is_float32(opt)
    for a, b in zip(ours[-1], theirs[-1], strict=True):
        assert a.dtype == np.float32
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


BAD_HYPERPARAMETERS = [
    ("LAMB", dict(lr=-0.1), "lr"),
    ("LAMB", dict(lr="0.1"), "lr"),
    ("LAMB", dict(betas=(1.0, 0.999)), r"betas\[0\]"),
    ("LAMB", dict(betas=(0.9, -0.1)), r"betas\[1\]"),
    ("LAMB", dict(betas=0.9), "betas"),
    ("LAMB", dict(eps=-1e-6), "eps"),
    ("LAMB", dict(weight_decay=-0.1), "weight_decay"),
    ("LAMB", dict(clamp_value=-1.0), "clamp_value"),
    ("LAMB", dict(adam=1), "adam"),
    ("LAMB", dict(debias="yes"), "debias"),
    ("NovoGrad", dict(lr=-1e-3), "lr"),
    ("NovoGrad", dict(betas=(0.95, 1.0)), r"betas\[1\]"),
    ("NovoGrad", dict(eps=-1.0), "eps"),
    ("NovoGrad", dict(weight_decay=float("nan")), "weight_decay"),
    ("NovoGrad", dict(grad_averaging=None), "grad_averaging"),
    ("NovoGrad", dict(amsgrad=0), "amsgrad"),
    ("AdaBound", dict(lr=-1), "lr"),
    ("AdaBound", dict(betas=(-0.1, 0.999)), r"betas\[0\]"),
    ("AdaBound", dict(final_lr=-0.1), "final_lr"),
    ("AdaBound", dict(gamma=0.0), "gamma"),
    ("AdaBound", dict(gamma=1.0), "gamma"),
    ("AdaBound", dict(eps=-1e-8), "eps"),
    ("AdaBound", dict(weight_decay=-1e-4), "weight_decay"),
    ("AdaBound", dict(amsbound="no"), "amsbound"),
]


@pytest.mark.parametrize("name, kwargs, bad", BAD_HYPERPARAMETERS,
                         ids=[f"{n}-{b}-{i}" for i, (n, _, b) in enumerate(BAD_HYPERPARAMETERS)])
def test_bad_hyperparameter_is_named(name, kwargs, bad):
    with pytest.raises(ValueError, match=f"^{name}: {bad}"):
        PAIRS[name][0]([dl.Parameter(dl.zeros(2))], **kwargs)


@pytest.mark.parametrize("name", NAMES)
def test_bad_hyperparameter_in_a_group_is_named(name):
    opt = PAIRS[name][0]([dl.Parameter(dl.zeros(2))], **RICH[name])
    with pytest.raises(ValueError, match=f"^{name}: lr must be >= 0, got -1"):
        opt.add_param_group({"params": [dl.Parameter(dl.zeros(2))], "lr": -1})


@pytest.mark.parametrize("name", ["LAMB", "NovoGrad", "AdaBound", "LARS", "Lion", "Adafactor"])
def test_registered_by_dlfree_optim(name):
    import dlfree as dl
    from dlfree import optim

    assert dl.registry.optimizers.get(name) is getattr(optim, name)
    assert dl.registry.optimizers.provider(name)["distribution"] == "dlfree-optim"
