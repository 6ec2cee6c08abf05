"""Shared fixtures for the optimizer tests: a fixed loss over several parameter shapes,
evaluated in dl.free and in PyTorch, so trajectories can be compared step by step."""

from __future__ import annotations

import dlfree as dl

import numpy as np
import pytest

SHAPES = [(3,), (4, 5), (2, 3, 4), ()]


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


@pytest.fixture
def problem() -> Problem:
    return Problem()


def torch_state_to_dl(state_dict: dict) -> dict:
    """A torch optimizer's state_dict with every tensor converted (torch -> NumPy -> dl)."""
    import torch

    def convert(value):
        return dl.tensor(value.detach().numpy()) if isinstance(value, torch.Tensor) else value

    return {"state": {i: {k: convert(v) for k, v in s.items()}
                      for i, s in state_dict["state"].items()},
            "param_groups": [dict(g) for g in state_dict["param_groups"]]}


@pytest.fixture
def from_torch_state():
    return torch_state_to_dl
