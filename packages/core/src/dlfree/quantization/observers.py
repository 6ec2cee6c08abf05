"""Observers: record the running range of a tensor and derive its quantization parameters
(scale and zero point) with torch.ao.quantization's formulas."""

import numpy as np

_RANGES = {"qint8": (-128, 127), "quint8": (0, 255)}
_PER_TENSOR = ("per_tensor_affine", "per_tensor_symmetric")
_PER_CHANNEL = ("per_channel_affine", "per_channel_symmetric")
_EPS = np.float32(np.finfo(np.float32).eps)


def _as_array(x):
    """A float32 NumPy view of an array or Tensor."""
    return np.asarray(x.numpy() if hasattr(x, "numpy") else x, dtype=np.float32)


def qparams(min_val, max_val, quant_min, quant_max, symmetric, dtype):
    """(scale, zero_point) for the range [min_val, max_val] (scalars or per-channel arrays):
    the range is widened to hold 0; symmetric schemes centre it on the zero point."""
    min_neg = np.minimum(np.asarray(min_val, np.float32), np.float32(0))
    max_pos = np.maximum(np.asarray(max_val, np.float32), np.float32(0))
    if symmetric:
        max_pos = np.maximum(-min_neg, max_pos)
        scale = np.maximum(max_pos / np.float32((quant_max - quant_min) / 2), _EPS)
        zp = 0 if dtype == "qint8" else (quant_min + quant_max + 1) // 2
        zero_point = np.full(scale.shape, zp, np.int64)
    else:
        scale = np.maximum((max_pos - min_neg) / np.float32(quant_max - quant_min), _EPS)
        zero_point = np.clip(quant_min - np.round(min_neg / scale), quant_min, quant_max)
        zero_point = zero_point.astype(np.int64)
    return scale.astype(np.float32), zero_point


class ObserverBase:
    """What every observer shares: the dtype's integer range (halved by `reduce_range`, as
    torch does for kernels that would overflow) and the check of the scheme."""

    schemes = _PER_TENSOR

    def __init__(self, dtype, qscheme, reduce_range):
        name = type(self).__name__
        if dtype not in _RANGES:
            raise ValueError(f"{name}: dtype must be one of {sorted(_RANGES)}, got {dtype!r}")
        if qscheme not in self.schemes:
            raise ValueError(f"{name}: qscheme must be one of {self.schemes}, got {qscheme!r}")
        if reduce_range and dtype == "quint8" and qscheme.endswith("symmetric"):
            raise ValueError(
                f"{name}: reduce_range is not supported for symmetric quint8 (as in torch)"
            )
        self.dtype, self.qscheme, self.reduce_range = dtype, qscheme, reduce_range
        qmin, qmax = _RANGES[dtype]
        if reduce_range:
            qmin, qmax = qmin // 2, qmax // 2
        self.quant_min, self.quant_max = qmin, qmax

    @property
    def symmetric(self):
        return self.qscheme.endswith("symmetric")

    def _check_observed(self):
        if not np.all(np.isfinite(self.min_val)):
            raise RuntimeError(
                f"{type(self).__name__}.calculate_qparams: no data observed yet; "
                "call the observer first"
            )


class MinMaxObserver(ObserverBase):
    """Track the running min/max and compute (scale, zero_point) as torch's MinMaxObserver."""

    def __init__(self, dtype="qint8", qscheme="per_tensor_affine", reduce_range=False):
        super().__init__(dtype, qscheme, reduce_range)
        self.min_val = np.float32(np.inf)
        self.max_val = np.float32(-np.inf)

    def _update(self, lo, hi):
        self.min_val = np.minimum(self.min_val, lo)
        self.max_val = np.maximum(self.max_val, hi)

    def __call__(self, x):
        """Update the range with `x` (array or Tensor) and return it unchanged."""
        a = _as_array(x)
        if a.size:
            self._update(a.min(), a.max())
        return x

    def calculate_qparams(self):
        """Return (scale, zero_point) as float32 and int64 scalars."""
        self._check_observed()
        scale, zp = qparams(self.min_val, self.max_val, self.quant_min, self.quant_max,
                            self.symmetric, self.dtype)
        return np.float32(scale), np.int64(zp)


class MovingAverageMinMaxObserver(MinMaxObserver):
    """Min/max as an exponential moving average (weight `averaging_constant` for the new
    batch; the first batch sets them), as torch's MovingAverageMinMaxObserver: a range that
    follows activations drifting during training instead of keeping early outliers."""

    def __init__(self, averaging_constant=0.01, dtype="qint8", qscheme="per_tensor_affine",
                 reduce_range=False):
        if not 0.0 < averaging_constant <= 1.0:
            raise ValueError(
                "MovingAverageMinMaxObserver: averaging_constant must be in (0, 1], "
                f"got {averaging_constant!r}"
            )
        super().__init__(dtype, qscheme, reduce_range)
        self.averaging_constant = np.float32(averaging_constant)

    def _update(self, lo, hi):
        if not np.isfinite(self.min_val):
            self.min_val, self.max_val = np.float32(lo), np.float32(hi)
            return
        c = self.averaging_constant
        self.min_val = np.float32(self.min_val + c * (lo - self.min_val))
        self.max_val = np.float32(self.max_val + c * (hi - self.max_val))


class PerChannelMinMaxObserver(ObserverBase):
    """One running min/max per slice along `ch_axis` (a weight's output channels), giving one
    (scale, zero_point) per channel, as torch's PerChannelMinMaxObserver."""

    schemes = _PER_CHANNEL

    def __init__(self, ch_axis=0, dtype="qint8", qscheme="per_channel_affine",
                 reduce_range=False):
        super().__init__(dtype, qscheme, reduce_range)
        self.ch_axis = ch_axis
        self.min_val = np.array([np.inf], np.float32)
        self.max_val = np.array([-np.inf], np.float32)

    def __call__(self, x):
        """Update the per-channel ranges with `x` and return it unchanged."""
        a = _as_array(x)
        if not -a.ndim <= self.ch_axis < a.ndim:
            raise ValueError(
                f"PerChannelMinMaxObserver: ch_axis {self.ch_axis} is out of range for an "
                f"input of shape {a.shape}"
            )
        flat = np.moveaxis(a, self.ch_axis, 0).reshape(a.shape[self.ch_axis], -1)
        lo, hi = flat.min(axis=1), flat.max(axis=1)
        if np.isfinite(self.min_val).all() and self.min_val.shape != lo.shape:
            raise ValueError(
                f"PerChannelMinMaxObserver: saw {self.min_val.shape[0]} channels before, "
                f"got {lo.shape[0]}"
            )
        self.min_val = np.minimum(self.min_val, lo)
        self.max_val = np.maximum(self.max_val, hi)
        return x

    def calculate_qparams(self):
        """Return (scales, zero_points): float32 and int64 arrays, one entry per channel."""
        self._check_observed()
        return qparams(self.min_val, self.max_val, self.quant_min, self.quant_max,
                       self.symmetric, self.dtype)
