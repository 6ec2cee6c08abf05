"""The torch.optim optimizers against PyTorch 2.13: 50-step trajectories in float64 for each
optimizer and option, per-group hyperparameters, state_dict round trips (ours and torch's),
hyperparameter validation, gradient handling, a small network, and registration."""

from __future__ import annotations

import inspect

import dlfree as dl
import dlfree.optim as optim

import numpy as np
import pytest
import torch

from support.optim import (
    ATOL,
    RTOL,
    assert_same_trajectory,
    assert_skips_gradless_and_keeps_grads,
    assert_state_dict_round_trip_is_bit_exact,
    assert_step_advances_the_version,
    case_id,
    small_network_losses,
    use_float32,
)

# (optimizer, keyword arguments): every option whose code path differs.
CASES = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.05, momentum=0.9)),
    ("SGD", dict(lr=0.05, momentum=0.9, dampening=0.3)),
    ("SGD", dict(lr=0.05, momentum=0.9, nesterov=True)),
    ("SGD", dict(lr=0.1, weight_decay=0.2)),
    ("SGD", dict(lr=0.05, momentum=0.5, weight_decay=0.1, nesterov=True, maximize=True)),
    ("SGD", dict(lr=0.1, maximize=True)),
    ("Adam", dict(lr=0.05)),
    ("Adam", dict(lr=0.05, amsgrad=True)),
    ("Adam", dict(lr=0.05, weight_decay=0.1)),
    ("Adam", dict(lr=0.05, weight_decay=0.1, decoupled_weight_decay=True)),
    ("Adam", dict(lr=0.05, betas=(0.3, 0.6), eps=1e-3, maximize=True)),
    ("AdamW", dict(lr=0.05)),
    ("AdamW", dict(lr=0.05, weight_decay=0.3, amsgrad=True)),
    ("AdamW", dict(lr=0.05, maximize=True)),
    ("Adamax", dict(lr=0.05)),
    ("Adamax", dict(lr=0.05, weight_decay=0.1, betas=(0.6, 0.9))),
    ("Adamax", dict(lr=0.05, maximize=True)),
    ("NAdam", dict(lr=0.05)),
    ("NAdam", dict(lr=0.05, weight_decay=0.1)),
    ("NAdam", dict(lr=0.05, weight_decay=0.1, decoupled_weight_decay=True)),
    ("NAdam", dict(lr=0.05, momentum_decay=0.05, maximize=True)),
    ("RAdam", dict(lr=0.05)),
    ("RAdam", dict(lr=0.05, betas=(0.9, 0.9))),
    ("RAdam", dict(lr=0.05, weight_decay=0.1)),
    ("RAdam", dict(lr=0.05, weight_decay=0.1, decoupled_weight_decay=True, maximize=True)),
    ("RMSprop", dict(lr=0.01)),
    ("RMSprop", dict(lr=0.01, centered=True)),
    ("RMSprop", dict(lr=0.01, momentum=0.8)),
    ("RMSprop", dict(lr=0.01, centered=True, momentum=0.8, weight_decay=0.1)),
    ("RMSprop", dict(lr=0.01, alpha=0.5, eps=1e-4, maximize=True)),
    ("Adagrad", dict(lr=0.1)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.05)),
    ("Adagrad", dict(lr=0.1, initial_accumulator_value=0.5, eps=1e-4)),
    ("Adagrad", dict(lr=0.1, weight_decay=0.1, maximize=True)),
    ("Adadelta", dict()),
    ("Adadelta", dict(lr=0.5, rho=0.5, eps=1e-4)),
    ("Adadelta", dict(weight_decay=0.1, maximize=True)),
    ("ASGD", dict(lr=0.05)),
    ("ASGD", dict(lr=0.05, lambd=0.1, alpha=0.5, t0=10, weight_decay=0.1)),
    ("ASGD", dict(lr=0.05, t0=5, maximize=True)),
    ("Rprop", dict()),
    ("Rprop", dict(lr=0.1, etas=(0.3, 1.5), step_sizes=(1e-3, 0.2))),
    ("Rprop", dict(lr=0.05, maximize=True)),
]

# One configuration per optimizer that creates every kind of state it has.
RICH = {
    "SGD": dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.1),
    "Adam": dict(lr=0.05, amsgrad=True, weight_decay=0.1),
    "AdamW": dict(lr=0.05, amsgrad=True),
    "Adamax": dict(lr=0.05, weight_decay=0.1),
    "NAdam": dict(lr=0.05, weight_decay=0.1, decoupled_weight_decay=True),
    "RAdam": dict(lr=0.05, weight_decay=0.1),
    "RMSprop": dict(lr=0.01, centered=True, momentum=0.8),
    "Adagrad": dict(lr=0.1, lr_decay=0.05, initial_accumulator_value=0.1),
    "Adadelta": dict(lr=0.5, weight_decay=0.1),
    "ASGD": dict(lr=0.05, t0=5, weight_decay=0.1),
    "Rprop": dict(lr=0.05, etas=(0.4, 1.3)),
}
NAMES = list(RICH)


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_trajectory_matches_torch(case, problem):
    name, kwargs = case
    params, tparams = problem.dl_params(), problem.torch_params()
    ours = problem.run_dl(getattr(optim, name)(params, **kwargs), params, 50)
    theirs = problem.run_torch(getattr(torch.optim, name)(tparams, **kwargs), tparams, 50)
    assert not np.allclose(ours[-1][1], problem.inits[1])  # the parameters did move
    assert_same_trajectory(ours, theirs)


@pytest.mark.parametrize("name", NAMES)
def test_per_group_hyperparameters_match_torch(name, problem):
    kwargs = RICH[name]

    def groups(params):
        return [{"params": params[:2]}, {"params": params[2:], "lr": kwargs["lr"] * 3}]

    params, tparams = problem.dl_params(), problem.torch_params()
    ours = problem.run_dl(getattr(optim, name)(groups(params), **kwargs), params, 20)
    theirs = problem.run_torch(getattr(torch.optim, name)(groups(tparams), **kwargs),
                               tparams, 20)
    assert_same_trajectory(ours, theirs)


@pytest.mark.parametrize("name", NAMES)
def test_state_dict_round_trip_mid_run_is_bit_exact(name, problem):
    assert_state_dict_round_trip_is_bit_exact(getattr(optim, name), RICH[name], problem)


@pytest.mark.parametrize("name", NAMES)
def test_state_dict_layout_is_torchs(name, problem):
    kwargs = RICH[name]
    params, tparams = problem.dl_params(), problem.torch_params()
    ours, theirs = getattr(optim, name)(params, **kwargs), getattr(torch.optim, name)(
        tparams, **kwargs)
    problem.run_dl(ours, params, 2)
    problem.run_torch(theirs, tparams, 2)
    mine, torchs = ours.state_dict(), theirs.state_dict()
    assert mine["state"].keys() == torchs["state"].keys()
    for index, state in mine["state"].items():
        assert state.keys() == torchs["state"][index].keys()
        for key, value in state.items():
            if isinstance(value, dl.Tensor) and value.ndim:
                np.testing.assert_allclose(value.numpy(), torchs["state"][index][key].numpy(),
                                           rtol=RTOL, atol=ATOL, err_msg=key)
    for group, tgroup in zip(mine["param_groups"], torchs["param_groups"], strict=True):
        assert group["params"] == tgroup["params"]
        assert group == {k: tgroup[k] for k in group}


@pytest.mark.parametrize("name", NAMES)
def test_loading_torchs_state_dict_continues_its_trajectory(name, problem, from_torch_state):
    cls, tcls, kwargs = getattr(optim, name), getattr(torch.optim, name), RICH[name]
    tparams = problem.torch_params()
    reference = tcls(tparams, **kwargs)
    problem.run_torch(reference, tparams, 20)
    params = problem.dl_params([p.detach().numpy().copy() for p in tparams])
    ours = cls(params, **kwargs)
    ours.load_state_dict(from_torch_state(reference.state_dict()))
    assert_same_trajectory(problem.run_dl(ours, params, 30),
                            problem.run_torch(reference, tparams, 30))


BAD_HYPERPARAMETERS = [
    ("SGD", dict(lr=-0.1), "lr"),
    ("SGD", dict(momentum=-0.5), "momentum"),
    ("SGD", dict(dampening=1.5), "dampening"),
    ("SGD", dict(weight_decay=-1), "weight_decay"),
    ("SGD", dict(momentum=0.9, nesterov=True, dampening=0.1), "nesterov"),
    ("SGD", dict(nesterov=True), "nesterov"),
    ("SGD", dict(maximize="yes"), "maximize"),
    ("SGD", dict(lr="0.1"), "lr"),
    ("Adam", dict(lr=-1), "lr"),
    ("Adam", dict(betas=(1.0, 0.999)), r"betas\[0\]"),
    ("Adam", dict(betas=(0.9, -0.1)), r"betas\[1\]"),
    ("Adam", dict(betas=0.9), "betas"),
    ("Adam", dict(eps=-1e-8), "eps"),
    ("Adam", dict(weight_decay=-0.1), "weight_decay"),
    ("Adam", dict(amsgrad=1), "amsgrad"),
    ("Adam", dict(decoupled_weight_decay=None), "decoupled_weight_decay"),
    ("AdamW", dict(weight_decay=-0.01), "weight_decay"),
    ("AdamW", dict(betas=(0.9, 1.0)), r"betas\[1\]"),
    ("Adamax", dict(lr=-2e-3), "lr"),
    ("Adamax", dict(betas=(-0.1, 0.9)), r"betas\[0\]"),
    ("Adamax", dict(eps=-1.0), "eps"),
    ("NAdam", dict(momentum_decay=-1.0), "momentum_decay"),
    ("NAdam", dict(decoupled_weight_decay="no"), "decoupled_weight_decay"),
    ("NAdam", dict(weight_decay=float("nan")), "weight_decay"),
    ("RAdam", dict(betas=(0.9, 1.5)), r"betas\[1\]"),
    ("RAdam", dict(eps=-1e-8), "eps"),
    ("RMSprop", dict(alpha=1.5), "alpha"),
    ("RMSprop", dict(momentum=-0.1), "momentum"),
    ("RMSprop", dict(eps=-1.0), "eps"),
    ("RMSprop", dict(centered=2), "centered"),
    ("Adagrad", dict(lr_decay=-0.1), "lr_decay"),
    ("Adagrad", dict(initial_accumulator_value=-1.0), "initial_accumulator_value"),
    ("Adagrad", dict(eps=-1e-10), "eps"),
    ("Adadelta", dict(rho=1.5), "rho"),
    ("Adadelta", dict(lr=-1.0), "lr"),
    ("Adadelta", dict(weight_decay=-0.5), "weight_decay"),
    ("ASGD", dict(lambd=-1.0), "lambd"),
    ("ASGD", dict(t0=-1), "t0"),
    ("Rprop", dict(etas=(1.5, 1.2)), "etas"),
    ("Rprop", dict(step_sizes=(1.0, 0.1)), "step_sizes"),
]


@pytest.mark.parametrize("name, kwargs, bad", BAD_HYPERPARAMETERS,
                         ids=[f"{n}-{b}" for n, _, b in BAD_HYPERPARAMETERS])
def test_bad_hyperparameter_is_named(name, kwargs, bad):
    with pytest.raises(ValueError, match=f"^{name}: {bad}"):
        getattr(optim, name)([dl.Parameter(dl.zeros(2))], **kwargs)


@pytest.mark.parametrize("name", NAMES)
def test_bad_hyperparameter_in_a_group_is_named(name):
    opt = getattr(optim, name)([dl.Parameter(dl.zeros(2))], **RICH[name])
    with pytest.raises(ValueError, match=f"^{name}: lr must be >= 0, got -1"):
        opt.add_param_group({"params": [dl.Parameter(dl.zeros(2))], "lr": -1})


@pytest.mark.parametrize("name", NAMES)
def test_parameters_without_grad_are_skipped_and_grads_are_not_modified(name, problem):
    kwargs = {**RICH[name], "maximize": True}
    if "weight_decay" in inspect.signature(getattr(optim, name)).parameters:  # not Rprop
        kwargs.setdefault("weight_decay", 0.1)
    assert_skips_gradless_and_keeps_grads(lambda p: getattr(optim, name)(p, **kwargs), problem)


@pytest.mark.parametrize("name", NAMES)
def test_step_advances_the_parameters_version(name, problem):
    assert_step_advances_the_version(lambda p: getattr(optim, name)(p, **RICH[name]), problem)


@pytest.mark.parametrize("name", NAMES)
def test_float32_trajectory_is_close_to_torch(name, problem):
    values = use_float32(problem)
    params, tparams = problem.dl_params(values), problem.torch_params(values)
    ours = problem.run_dl(getattr(optim, name)(params, **RICH[name]), params, 10)
    theirs = problem.run_torch(getattr(torch.optim, name)(tparams, **RICH[name]), tparams, 10)
    assert ours[-1][0].dtype == np.float32
    for a, b in zip(ours[-1], theirs[-1]):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


TRAINING_KWARGS = {
    "SGD": dict(lr=0.2, momentum=0.9),
    "Adam": dict(lr=0.02),
    "AdamW": dict(lr=0.02),
    "Adamax": dict(lr=0.02),
    "NAdam": dict(lr=0.02),
    "RAdam": dict(lr=0.05),
    "RMSprop": dict(lr=0.005),
    "Adagrad": dict(lr=0.1),
    "Adadelta": dict(lr=1.0),
    "ASGD": dict(lr=0.2),
    "Rprop": dict(lr=0.01),
}


@pytest.mark.parametrize("name", NAMES)
def test_training_a_small_network_lowers_the_loss(name):
    losses = small_network_losses(lambda p: getattr(optim, name)(p, **TRAINING_KWARGS[name]))
    assert losses[-1] < 0.9 * losses[0], losses


@pytest.mark.parametrize("name", NAMES)
def test_registered_under_its_name(name):
    assert dl.registry.optimizers.get(name) is getattr(optim, name)
