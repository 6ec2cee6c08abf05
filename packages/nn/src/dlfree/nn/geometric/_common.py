"""What the graph layers share: PyG-style linear maps (glorot weights, zero bias) and the
checks of their arguments."""

from __future__ import annotations

from .. import init
from ..layers._common import check_choice, check_count
from ..layers.linear import Linear, _add_bias

__all__ = ["glorot_linear", "zero_bias", "check_count", "check_choice", "aggregation"]

AGGREGATIONS = ("sum", "add", "mean", "max", "min", "mul")


def glorot_linear(in_features: int, out_features: int, bias: bool = True) -> Linear:
    """A Linear layer initialised as PyG's graph layers initialise theirs (glorot weight,
    zero bias)."""
    lin = Linear(in_features, out_features, bias=bias)
    init.xavier_uniform_(lin.weight)
    if lin.bias is not None:
        init.zeros_(lin.bias)
    return lin


def zero_bias(module, size: int, bias: bool) -> None:
    """Register a zero (size,) `bias` on `module`, or None when bias=False."""
    _add_bias(module, bias, size, None, None)
    if bias:
        init.zeros_(module.bias)


def aggregation(aggr: str, layer: str) -> str:
    """A neighbourhood aggregation name that `utils.scatter` takes."""
    return check_choice(aggr, "aggr", layer, AGGREGATIONS)
