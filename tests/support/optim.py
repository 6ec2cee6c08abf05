"""What the optimizer test files share: the fixed loss they minimise (`Problem`), torch
optimizer state converted for dl.free, and the checks: step-by-step trajectory comparison,
state_dict round trips, gradient handling, version bumps, float32 runs and a small training
run."""

from __future__ import annotations

import dlfree as dl
import dlfree.functional as F

import numpy as np
import pytest

RTOL, ATOL = 1e-10, 1e-12  # float64 trajectories; ATOL only for coordinates that cross 0
SHAPES = [(3,), (4, 5), (2, 3, 4), ()]  # Problem's parameters, a scalar among them


class Problem:
    """loss(p) = sum(0.5 * a * p**2 + sin(b * p)) over several float64 parameters.

    The sine makes the gradient depend on the parameter non-linearly, so a wrong update
    changes every later gradient and the trajectories part quickly.
    """

    def __init__(self, seed: int = 0, shapes=SHAPES):
        rng = np.random.default_rng(seed)
        self.inits = [rng.uniform(-2, 2, s) for s in shapes]
        self.scales = [rng.uniform(0.5, 2, s) for s in shapes]
        self.freqs = [rng.uniform(0.5, 1.5, s) for s in shapes]

    def dl_params(self, values=None) -> list:
        return [dl.Parameter(dl.tensor(v)) for v in values or self.inits]

    def torch_params(self, values=None) -> list:
        import torch

        return [torch.nn.Parameter(torch.tensor(v)) for v in values or self.inits]

    def dl_loss(self, params):
        total = None
        for p, a, b in zip(params, self.scales, self.freqs):
            a, b = dl.tensor(a), dl.tensor(b)
            term = (0.5 * a * p * p + (b * p).sin()).sum()
            total = term if total is None else total + term
        return total

    def torch_loss(self, params):
        import torch

        return sum((0.5 * torch.tensor(a) * p * p + torch.sin(torch.tensor(b) * p)).sum()
                   for p, a, b in zip(params, self.scales, self.freqs))

    def run_dl(self, optimizer, params, steps: int) -> list:
        """Take `steps` steps; the parameter values after each, as NumPy arrays."""
        history = []
        for _ in range(steps):
            optimizer.zero_grad()
            self.dl_loss(params).backward()
            optimizer.step()
            history.append([p.detach().numpy().copy() for p in params])
        return history

    def run_torch(self, optimizer, params, steps: int) -> list:
        history = []
        for _ in range(steps):
            optimizer.zero_grad()
            self.torch_loss(params).backward()
            optimizer.step()
            history.append([p.detach().numpy().copy() for p in params])
        return history


def torch_state_to_dl(state_dict: dict) -> dict:
    """A torch optimizer's state_dict with every tensor converted (torch -> NumPy -> dl)."""
    import torch

    def convert(value):
        return dl.tensor(value.detach().numpy()) if isinstance(value, torch.Tensor) else value

    return {"state": {i: {k: convert(v) for k, v in s.items()}
                      for i, s in state_dict["state"].items()},
            "param_groups": [dict(g) for g in state_dict["param_groups"]]}


def case_id(case) -> str:
    """A readable test id for an (optimizer name, keyword arguments) case."""
    name, kwargs = case
    return name + "-" + ",".join(f"{k}={v}" for k, v in kwargs.items())


def assert_same_trajectory(ours: list, expected: list) -> None:
    """Every parameter equal to RTOL/ATOL after every step, naming the first that is not."""
    for step, (a, b) in enumerate(zip(ours, expected, strict=True)):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            np.testing.assert_allclose(x, y, rtol=RTOL, atol=ATOL,
                                       err_msg=f"step {step + 1}, parameter {i}")


def assert_state_dict_round_trip_is_bit_exact(cls, kwargs: dict, problem) -> None:
    """50 straight steps equal 20 steps, a saved state_dict loaded into a fresh optimizer
    and 30 more, bit for bit at every step; 5 steps taken after saving must not leak into
    the saved copy."""
    params = problem.dl_params()
    straight = problem.run_dl(cls(params, **kwargs), params, 50)

    params = problem.dl_params()
    first = cls(params, **kwargs)
    problem.run_dl(first, params, 20)
    saved = first.state_dict()
    problem.run_dl(first, params, 5)
    resumed_params = problem.dl_params([v.copy() for v in straight[19]])
    resumed = cls(resumed_params, **kwargs)
    resumed.load_state_dict(saved)
    rest = problem.run_dl(resumed, resumed_params, 30)
    for ours, reference in zip(rest, straight[20:], strict=True):
        for a, b in zip(ours, reference, strict=True):
            np.testing.assert_array_equal(a, b)


def assert_skips_gradless_and_keeps_grads(make_optimizer, problem) -> None:
    """With gradients for the first two parameters only, a step leaves those gradients as
    they were and the other parameters unmoved, without state."""
    params = problem.dl_params()
    opt = make_optimizer(params)
    problem.dl_loss(params[:2]).backward()
    grads = [p.grad.numpy().copy() for p in params[:2]]
    untouched = [p.detach().numpy().copy() for p in params[2:]]
    opt.step()
    for p, g in zip(params[:2], grads):
        np.testing.assert_array_equal(p.grad.numpy(), g)
    for p, v in zip(params[2:], untouched):
        assert p.grad is None
        np.testing.assert_array_equal(p.detach().numpy(), v)
        assert p not in opt.state
    assert all(opt.state[p] for p in params[:2])


def assert_step_advances_the_version(make_optimizer, problem) -> None:
    """A step is an in-place update: a graph that saved a parameter before it refuses to
    run backward."""
    params = problem.dl_params()
    opt = make_optimizer(params)
    problem.dl_loss(params).backward()
    saved = (params[1] * params[1]).sum()  # saves params[1] for its backward
    opt.step()
    with pytest.raises(dl.AutogradError, match="version"):
        saved.backward()


def use_float32(problem) -> list:
    """Make `problem`'s loss float32 and return its starting values in float32."""
    problem.scales = [a.astype(np.float32) for a in problem.scales]
    problem.freqs = [b.astype(np.float32) for b in problem.freqs]
    return [v.astype(np.float32) for v in problem.inits]


def assert_state_is_float32(opt) -> None:
    for state in opt.state.values():
        assert all(v.dtype == dl.float32 for v in state.values() if isinstance(v, dl.Tensor))


def small_network_losses(make_optimizer, steps: int = 30) -> list[float]:
    """The loss after each of `steps` closure steps on a 8-16-3 ReLU classifier of 64 fixed
    random points, float32."""
    rng = np.random.default_rng(7)
    x = dl.tensor(rng.standard_normal((64, 8)).astype(np.float32))
    y = dl.tensor(rng.integers(0, 3, 64))
    w1 = dl.Parameter(dl.tensor((rng.standard_normal((8, 16)) / 8 ** 0.5).astype(np.float32)))
    w2 = dl.Parameter(dl.tensor((rng.standard_normal((16, 3)) / 4).astype(np.float32)))
    opt = make_optimizer([w1, w2])

    def closure():
        opt.zero_grad()
        loss = F.cross_entropy(F.relu(x @ w1) @ w2, y)
        loss.backward()
        return loss

    return [opt.step(closure).item() for _ in range(steps)]
