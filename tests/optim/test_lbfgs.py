"""optim.LBFGS against torch.optim.LBFGS in float64: the parameters after every `step`
(each up to max_iter inner iterations), the losses returned and the evaluation counts, with
and without the strong-Wolfe line search, a short history, and the stopping tolerances."""

from __future__ import annotations

import dlfree as dl
import dlfree.optim as optim

import numpy as np
import pytest
import torch

from support.optim import assert_same_trajectory


def _run(lib, problem, params, kwargs, steps):
    opt = (optim.LBFGS if lib is dl else torch.optim.LBFGS)(params, **kwargs)
    loss_of = problem.dl_loss if lib is dl else problem.torch_loss

    def closure():
        opt.zero_grad()
        loss = loss_of(params)
        loss.backward()
        return loss

    history, losses = [], []
    for _ in range(steps):
        losses.append(opt.step(closure).item())
        history.append([p.detach().numpy().copy() for p in params])
    state = opt.state[params[0]]
    return history, losses, (state["func_evals"], state["n_iter"])


CASES = [
    dict(),
    dict(lr=0.5, max_iter=5),
    dict(line_search_fn="strong_wolfe"),
    dict(line_search_fn="strong_wolfe", history_size=3, max_iter=7),
    dict(line_search_fn="strong_wolfe", tolerance_grad=1e-3),
    dict(history_size=2, tolerance_change=1e-4, max_eval=8),
]


@pytest.mark.parametrize("kwargs", CASES, ids=lambda k: ",".join(f"{a}={b}" for a, b in
                                                                 k.items()) or "defaults")
def test_trajectory_matches_torch(kwargs, problem):
    params, tparams = problem.dl_params(), problem.torch_params()
    ours, our_losses, our_counts = _run(dl, problem, params, kwargs, 4)
    theirs, their_losses, their_counts = _run(torch, problem, tparams, kwargs, 4)
    assert not np.allclose(ours[-1][1], problem.inits[1])
    assert_same_trajectory(ours, theirs)
    np.testing.assert_allclose(our_losses, their_losses, rtol=1e-10)
    assert our_counts == their_counts


def test_rosenbrock_reaches_the_minimum_as_torch():
    def rosenbrock(lib, xy):
        return (1 - xy[0]) ** 2 + 100 * (xy[1] - xy[0] ** 2) ** 2

    start = np.array([-1.5, 2.0])
    ours = dl.Parameter(dl.tensor(start))
    theirs = torch.nn.Parameter(torch.tensor(start))
    kwargs = dict(line_search_fn="strong_wolfe", max_iter=50)
    opt, topt = optim.LBFGS([ours], **kwargs), torch.optim.LBFGS([theirs], **kwargs)
    for o, p, lib in ((opt, ours, dl), (topt, theirs, torch)):
        def closure(o=o, p=p, lib=lib):
            o.zero_grad()
            loss = rosenbrock(lib, p)
            loss.backward()
            return loss
        for _ in range(3):
            o.step(closure)
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-9)
    np.testing.assert_allclose(ours.detach().numpy(), [1.0, 1.0], atol=1e-5)  # as torch stops


def test_state_dict_round_trip_continues_the_trajectory(problem):
    kwargs = dict(line_search_fn="strong_wolfe", history_size=4, max_iter=3)
    params = problem.dl_params()
    first = optim.LBFGS(params, **kwargs)
    _run_with(first, problem, params, 2)
    copies = problem.dl_params([p.detach().numpy().copy() for p in params])
    second = optim.LBFGS(copies, **kwargs)
    second.load_state_dict(first.state_dict())
    assert_same_trajectory(_run_with(first, problem, params, 2),
                           _run_with(second, problem, copies, 2))


def _run_with(opt, problem, params, steps):
    def closure():
        opt.zero_grad()
        loss = problem.dl_loss(params)
        loss.backward()
        return loss

    history = []
    for _ in range(steps):
        opt.step(closure)
        history.append([p.detach().numpy().copy() for p in params])
    return history


def test_bad_use_is_named():
    p = [dl.Parameter(dl.zeros(2))]
    with pytest.raises(ValueError, match="needs a closure"):
        optim.LBFGS(p).step()
    with pytest.raises(ValueError, match="line_search_fn must be None or 'strong_wolfe'"):
        optim.LBFGS(p, line_search_fn="armijo")
    with pytest.raises(ValueError, match="history_size must be an int >= 1"):
        optim.LBFGS(p, history_size=0)
    with pytest.raises(ValueError, match="one param group"):
        optim.LBFGS([{"params": p}, {"params": [dl.Parameter(dl.zeros(1))]}])
    assert dl.registry.optimizers.get("LBFGS") is optim.LBFGS
