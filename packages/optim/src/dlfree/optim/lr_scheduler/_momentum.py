"""Momentum cycling shared by CyclicLR and OneCycleLR: SGD's `momentum`, or beta1 of the
`betas` of Adam-style optimizers."""

from __future__ import annotations

from ._checks import check_real
from .base import per_group


def uses_beta1(owner: str, optimizer) -> bool:
    """Whether to cycle `betas[0]` (True) or `momentum` (False) of `optimizer`'s groups."""
    defaults = getattr(optimizer, "defaults", None) or {}
    if "momentum" not in defaults and "betas" not in defaults:
        raise ValueError(f"{owner}: cycle_momentum=True needs an optimizer with a 'momentum' or "
                         f"'betas' hyperparameter, and {type(optimizer).__name__} has neither; "
                         "pass cycle_momentum=False")
    return "betas" in defaults


def momentum_bounds(owner: str, optimizer, base_momentum, max_momentum) -> tuple[list, list]:
    """The per-group lower and upper momentum of the cycle, each in [0, 1]."""
    bases = per_group(owner, "base_momentum", optimizer, base_momentum)
    maxes = per_group(owner, "max_momentum", optimizer, max_momentum)
    for value in bases:
        check_real(owner, "base_momentum", value, 0.0, 1.0)
    for value in maxes:
        check_real(owner, "max_momentum", value, 0.0, 1.0)
    return bases, maxes


def set_momentum(group: dict, value: float, use_beta1: bool) -> None:
    """Write `value` as the group's momentum (or as beta1, keeping the other betas)."""
    if use_beta1:
        group["betas"] = (value, *group["betas"][1:])
    else:
        group["momentum"] = value
