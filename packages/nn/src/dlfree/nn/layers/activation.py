"""A module for every activation in `dlfree.functional`, with torch.nn's arguments and
reprs (`inplace` is accepted where torch has it)."""

from __future__ import annotations

import warnings

from dlfree import functional as F

from ..init import constant_
from ..module import Module
from ._common import check_choice, check_count, empty_parameter

__all__ = ["ReLU", "ReLU6", "LeakyReLU", "ELU", "SELU", "CELU", "GELU", "SiLU", "Mish",
           "Softplus", "Softsign", "Hardtanh", "Hardsigmoid", "Hardswish", "PReLU", "GLU",
           "LogSigmoid", "Tanhshrink", "Softmin", "Threshold", "Softmax", "LogSoftmax",
           "Sigmoid", "Tanh", "Hardshrink", "Softshrink"]


def _inplace_suffix(inplace: bool) -> str:
    return ", inplace=True" if inplace else ""


class _Inplace(Module):
    """An activation whose only argument is `inplace` (overwrite the input)."""

    def __init__(self, inplace: bool = False):
        super().__init__()
        self.inplace = inplace

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class ReLU(_Inplace):
    """max(0, x)."""

    def forward(self, input):
        return F.relu(input, inplace=self.inplace)


class SELU(_Inplace):
    """scale * (max(0, x) + min(0, alpha * (exp(x) - 1))) with the self-normalising
    constants."""

    def forward(self, input):
        return F.selu(input, self.inplace)


class SiLU(_Inplace):
    """x * sigmoid(x) (swish)."""

    def forward(self, input):
        return F.silu(input, inplace=self.inplace)


class Mish(_Inplace):
    """x * tanh(softplus(x))."""

    def forward(self, input):
        return F.mish(input, inplace=self.inplace)


class Hardsigmoid(Module):
    """relu6(x + 3) / 6."""

    def __init__(self, inplace: bool = False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.hardsigmoid(input, self.inplace)


class Hardswish(Module):
    """x * relu6(x + 3) / 6."""

    def __init__(self, inplace: bool = False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.hardswish(input, self.inplace)


class Hardtanh(Module):
    """x clamped to [min_val, max_val]."""

    def __init__(self, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False,
                 min_value: float | None = None, max_value: float | None = None):
        super().__init__()
        if min_value is not None or max_value is not None:
            warnings.warn("Hardtanh: the keyword arguments min_value and max_value are "
                          "deprecated; use min_val and max_val", FutureWarning, stacklevel=2)
            min_val = min_val if min_value is None else min_value
            max_val = max_val if max_value is None else max_value
        if min_val > max_val:
            raise ValueError(f"Hardtanh: min_val ({min_val}) must not exceed max_val "
                             f"({max_val})")
        self.min_val = min_val
        self.max_val = max_val
        self.inplace = inplace

    def forward(self, input):
        return F.hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self) -> str:
        return f"min_val={self.min_val}, max_val={self.max_val}{_inplace_suffix(self.inplace)}"


class ReLU6(Hardtanh):
    """min(max(0, x), 6)."""

    def __init__(self, inplace: bool = False):
        super().__init__(0.0, 6.0, inplace)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class LeakyReLU(Module):
    """x for x >= 0, negative_slope * x otherwise."""

    def __init__(self, negative_slope: float = 0.01, inplace: bool = False):
        super().__init__()
        self.negative_slope = negative_slope
        self.inplace = inplace

    def forward(self, input):
        return F.leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self) -> str:
        return f"negative_slope={self.negative_slope}{_inplace_suffix(self.inplace)}"


class ELU(Module):
    """x for x > 0, alpha * (exp(x) - 1) otherwise."""

    def __init__(self, alpha: float = 1.0, inplace: bool = False):
        super().__init__()
        self.alpha = alpha
        self.inplace = inplace

    def forward(self, input):
        return F.elu(input, self.alpha, self.inplace)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}{_inplace_suffix(self.inplace)}"


class CELU(Module):
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1))."""

    def __init__(self, alpha: float = 1.0, inplace: bool = False):
        super().__init__()
        self.alpha = alpha
        self.inplace = inplace

    def forward(self, input):
        return F.celu(input, self.alpha, self.inplace)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}{_inplace_suffix(self.inplace)}"


class GELU(Module):
    """x * Phi(x), exactly ('none') or with the tanh approximation ('tanh')."""

    def __init__(self, approximate: str = "none"):
        super().__init__()
        self.approximate = check_choice(approximate, "approximate", "GELU", ("none", "tanh"))

    def forward(self, input):
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class Softplus(Module):
    """log(1 + exp(beta * x)) / beta, linear above `threshold` for stability."""

    def __init__(self, beta: float = 1.0, threshold: float = 20.0):
        super().__init__()
        self.beta = beta
        self.threshold = threshold

    def forward(self, input):
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self) -> str:
        return f"beta={self.beta}, threshold={self.threshold}"


class Threshold(Module):
    """x where x > threshold, else `value`."""

    def __init__(self, threshold: float, value: float, inplace: bool = False):
        super().__init__()
        self.threshold = threshold
        self.value = value
        self.inplace = inplace

    def forward(self, input):
        return F.threshold(input, self.threshold, self.value, self.inplace)

    def extra_repr(self) -> str:
        return (f"threshold={self.threshold}, value={self.value}"
                f"{_inplace_suffix(self.inplace)}")


class PReLU(Module):
    """x for x >= 0, a * x otherwise, with a learnable slope a: one shared
    (num_parameters=1) or one per channel (dim 1), starting at `init`."""

    def __init__(self, num_parameters: int = 1, init: float = 0.25, device=None, dtype=None):
        super().__init__()
        self.num_parameters = check_count(num_parameters, "num_parameters", "PReLU")
        self.init = init
        self.weight = empty_parameter(num_parameters, device=device, dtype=dtype)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        constant_(self.weight, self.init)

    def forward(self, input):
        return F.prelu(input, self.weight)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"


class GLU(Module):
    """a * sigmoid(b), where a and b are the halves of the input along `dim`."""

    def __init__(self, dim: int = -1):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.glu(input, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class _Along(Module):
    """A normalising activation along `dim` (None: torch's legacy implicit choice, with a
    warning)."""

    def __init__(self, dim: int | None = None):
        super().__init__()
        self.dim = dim

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Softmax(_Along):
    """exp(x) / sum(exp(x)) along `dim`."""

    def forward(self, input):
        return F.softmax(input, self.dim)


class Softmin(_Along):
    """softmax(-x) along `dim`."""

    def forward(self, input):
        return F.softmin(input, self.dim)


class LogSoftmax(_Along):
    """log(softmax(x)) along `dim`, computed stably."""

    def forward(self, input):
        return F.log_softmax(input, self.dim)


class _Shrink(Module):
    def __init__(self, lambd: float = 0.5):
        super().__init__()
        self.lambd = lambd

    def extra_repr(self) -> str:
        return f"{self.lambd}"


class Hardshrink(_Shrink):
    """x where |x| > lambd, else 0."""

    def forward(self, input):
        return F.hardshrink(input, self.lambd)


class Softshrink(_Shrink):
    """x - lambd * sign(x) where |x| > lambd, else 0."""

    def forward(self, input):
        return F.softshrink(input, self.lambd)


class Softsign(Module):
    """x / (1 + |x|)."""

    def forward(self, input):
        return F.softsign(input)


class LogSigmoid(Module):
    """log(sigmoid(x)), computed stably."""

    def forward(self, input):
        return F.logsigmoid(input)


class Tanhshrink(Module):
    """x - tanh(x)."""

    def forward(self, input):
        return F.tanhshrink(input)


class Sigmoid(Module):
    """1 / (1 + exp(-x))."""

    def forward(self, input):
        return F.sigmoid(input)


class Tanh(Module):
    """tanh(x)."""

    def forward(self, input):
        return F.tanh(input)
