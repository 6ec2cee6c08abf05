"""`dlfree.nn.init`: fill a tensor in place with a weight initialisation (torch.nn.init's
functions, names, fan rules and distributions), drawing from dl.free's random generators."""

from __future__ import annotations

import math
import numbers
import warnings

import dlfree as dl
from dlfree import Tensor

__all__ = ["calculate_gain", "uniform_", "normal_", "trunc_normal_", "constant_", "ones_",
           "zeros_", "eye_", "dirac_", "xavier_uniform_", "xavier_normal_", "kaiming_uniform_",
           "kaiming_normal_", "orthogonal_", "INITIALIZERS"]

_LINEAR_GAIN = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
                "conv_transpose3d", "sigmoid")
_NONLINEARITIES = _LINEAR_GAIN + ("tanh", "relu", "leaky_relu", "selu")


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """The factor that keeps activations' variance steady through `nonlinearity`
    (`param` is leaky_relu's negative slope, default 0.01)."""
    if nonlinearity in _LINEAR_GAIN:
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif isinstance(param, numbers.Real) and not isinstance(param, bool):
            slope = param
        else:
            raise ValueError(f"calculate_gain: negative_slope {param!r} is not a valid number; "
                             "pass an int or a float")
        return math.sqrt(2.0 / (1 + slope**2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"calculate_gain: unsupported nonlinearity {nonlinearity!r}; valid: "
                     f"{', '.join(_NONLINEARITIES)}")


def _fans(tensor: Tensor, op: str) -> tuple[int, int]:
    """(fan_in, fan_out): dim 1 and dim 0 sizes times the receptive field (dims 2 and on)."""
    if tensor.ndim < 2:
        raise ValueError(f"{op}: fan in and fan out need a tensor of at least 2 dims, got "
                         f"shape {tuple(tensor.shape)}")
    receptive = math.prod(tensor.shape[2:])
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def _fan(tensor: Tensor, mode: str, op: str) -> int:
    if not isinstance(mode, str) or mode.lower() not in ("fan_in", "fan_out"):
        raise ValueError(f"{op}: mode must be 'fan_in' or 'fan_out', got {mode!r}")
    fan_in, fan_out = _fans(tensor, op)
    return fan_in if mode.lower() == "fan_in" else fan_out


def _overwrite(tensor: Tensor, values: Tensor) -> Tensor:
    """Write `values` over every element, as an index assignment: `copy_` computes
    src + dst * 0, which keeps the NaN or inf that uninitialised memory may hold."""
    with dl.no_grad():
        tensor[...] = values
    return tensor


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0, generator=None) -> Tensor:
    """Fill with samples from U(a, b)."""
    with dl.no_grad():
        return tensor.uniform_(a, b, generator=generator)


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, generator=None) -> Tensor:
    """Fill with samples from N(mean, std**2)."""
    with dl.no_grad():
        return tensor.normal_(mean, std, generator=generator)


def trunc_normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0,
                  b: float = 2.0, generator=None) -> Tensor:
    """Fill with samples from N(mean, std**2) truncated to [a, b] (absolute bounds).

    Sampled by inverting the normal CDF on the interval's probability range, so every
    draw lands in [a, b] without rejection.
    """
    if not a < b:
        raise ValueError(f"trunc_normal_: need a < b, got a={a}, b={b}")
    if std <= 0:
        raise ValueError(f"trunc_normal_: std must be positive, got {std}")
    if mean < a - 2 * std or mean > b + 2 * std:
        warnings.warn("trunc_normal_: mean is more than 2 std from [a, b]; the distribution "
                      "of values may be incorrect", UserWarning, stacklevel=2)

    def cdf(x: float) -> float:
        return (1.0 + math.erf((x - mean) / (std * math.sqrt(2.0)))) / 2.0

    # float64 keeps erfinv accurate near the ends of (-1, 1)
    u = dl.rand(*tensor.shape, generator=generator, dtype=dl.float64, device=tensor.device)
    lo, hi = 2 * cdf(a) - 1, 2 * cdf(b) - 1
    values = (u * (hi - lo) + lo).erfinv() * (std * math.sqrt(2.0)) + mean
    return _overwrite(tensor, values.clamp(a, b))


def constant_(tensor: Tensor, val: float) -> Tensor:
    """Fill with `val`."""
    with dl.no_grad():
        return tensor.fill_(val)


def ones_(tensor: Tensor) -> Tensor:
    """Fill with 1."""
    return constant_(tensor, 1.0)


def zeros_(tensor: Tensor) -> Tensor:
    """Fill with 0."""
    with dl.no_grad():
        return tensor.zero_()


def eye_(tensor: Tensor) -> Tensor:
    """Fill a 2-d tensor with the identity matrix (ones on the main diagonal), so a Linear
    layer passes as many inputs through unchanged as it can."""
    if tensor.ndim != 2:
        raise ValueError(f"eye_: only 2-d tensors are supported, got shape {tuple(tensor.shape)}")
    return _overwrite(tensor, dl.eye(*tensor.shape, dtype=tensor.dtype, device=tensor.device))


def dirac_(tensor: Tensor, groups: int = 1) -> Tensor:
    """Fill a 3-, 4- or 5-d convolution weight with the Dirac delta, so the convolution
    passes as many input channels through unchanged as it can (per group)."""
    if tensor.ndim not in (3, 4, 5):
        raise ValueError(f"dirac_: only 3-, 4- or 5-d tensors are supported, got shape "
                         f"{tuple(tensor.shape)}")
    if groups < 1 or tensor.shape[0] % groups:
        raise ValueError(f"dirac_: dim 0 ({tensor.shape[0]}) must be divisible by groups "
                         f"({groups}); valid: a positive divisor of {tensor.shape[0]}")
    xp = tensor.device.xp
    per_group = tensor.shape[0] // groups
    channels = xp.arange(min(per_group, tensor.shape[1]))
    rows = (xp.arange(groups)[:, None] * per_group + channels[None, :]).reshape(-1)
    cols = xp.tile(channels, groups)
    centre = tuple(n // 2 for n in tensor.shape[2:])
    delta = xp.zeros(tuple(tensor.shape), dtype=tensor.array.dtype)
    delta[(rows, cols) + centre] = 1
    return _overwrite(tensor, dl.as_tensor(delta))


def xavier_uniform_(tensor: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    """Glorot uniform: U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out))."""
    fan_in, fan_out = _fans(tensor, "xavier_uniform_")
    bound = gain * math.sqrt(6.0 / (fan_in + fan_out))
    return uniform_(tensor, -bound, bound, generator)


def xavier_normal_(tensor: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    """Glorot normal: N(0, std**2) with std = gain * sqrt(2 / (fan_in + fan_out))."""
    fan_in, fan_out = _fans(tensor, "xavier_normal_")
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / (fan_in + fan_out)), generator)


def _kaiming_std(tensor: Tensor, a: float, mode: str, nonlinearity: str, op: str) -> float:
    return calculate_gain(nonlinearity, a) / math.sqrt(_fan(tensor, mode, op))


def _empty(tensor: Tensor, op: str) -> bool:
    if tensor.numel() == 0:
        warnings.warn(f"{op}: initializing a zero-element tensor is a no-op", UserWarning,
                      stacklevel=3)
        return True
    return False


def kaiming_uniform_(tensor: Tensor, a: float = 0, mode: str = "fan_in",
                     nonlinearity: str = "leaky_relu", generator=None) -> Tensor:
    """He uniform: U(-bound, bound), bound = gain * sqrt(3 / fan); `a` is leaky_relu's
    negative slope, `mode` picks fan_in (forward variance) or fan_out (backward)."""
    if _empty(tensor, "kaiming_uniform_"):
        return tensor
    bound = math.sqrt(3.0) * _kaiming_std(tensor, a, mode, nonlinearity, "kaiming_uniform_")
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor: Tensor, a: float = 0, mode: str = "fan_in",
                    nonlinearity: str = "leaky_relu", generator=None) -> Tensor:
    """He normal: N(0, std**2), std = gain / sqrt(fan)."""
    if _empty(tensor, "kaiming_normal_"):
        return tensor
    return normal_(tensor, 0.0, _kaiming_std(tensor, a, mode, nonlinearity, "kaiming_normal_"),
                   generator)


def orthogonal_(tensor: Tensor, gain: float = 1, generator=None) -> Tensor:
    """Fill with a (semi-)orthogonal matrix times `gain`: the trailing dims are flattened,
    and the rows (or columns, whichever are fewer) are orthonormal."""
    if tensor.ndim < 2:
        raise ValueError(f"orthogonal_: only tensors of 2 or more dims are supported, got "
                         f"shape {tuple(tensor.shape)}")
    if tensor.numel() == 0:
        return tensor
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    xp = tensor.device.xp
    sample = dl.randn(rows, cols, generator=generator, dtype=tensor.dtype,
                      device=tensor.device).array
    tall = sample if rows >= cols else sample.T
    q, r = xp.linalg.qr(tall)
    # Signs from R's diagonal make Q Haar-distributed (Mezzadri, math-ph/0609050)
    q = q * xp.sign(xp.diagonal(r))
    q = q if rows >= cols else q.T
    return _overwrite(tensor, dl.as_tensor(q.reshape(tuple(tensor.shape)) * gain))


# name -> function, for `dlfree_register_initializers`
INITIALIZERS = {fn.__name__: fn for fn in (
    uniform_, normal_, trunc_normal_, constant_, ones_, zeros_, eye_, dirac_, xavier_uniform_,
    xavier_normal_, kaiming_uniform_, kaiming_normal_, orthogonal_)}
