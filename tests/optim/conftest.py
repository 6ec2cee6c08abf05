"""Shared fixtures for the optimizer tests: a fixed loss over several parameter shapes
(support.optim.Problem), evaluated in dl.free and in PyTorch, so trajectories can be compared
step by step, and torch optimizer state converted for dl.free."""

from __future__ import annotations

import pytest

from support.optim import Problem, torch_state_to_dl


@pytest.fixture
def problem() -> Problem:
    return Problem()


@pytest.fixture
def from_torch_state():
    return torch_state_to_dl
