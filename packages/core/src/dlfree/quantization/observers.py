"""Observers: record the running range of a tensor and derive its quantization parameters."""

import numpy as np

_RANGES = {"qint8": (-128, 127), "quint8": (0, 255)}
_SCHEMES = ("per_tensor_affine", "per_tensor_symmetric")
_EPS = np.float32(np.finfo(np.float32).eps)


class MinMaxObserver:
    """Track the running min/max and compute (scale, zero_point) as torch's MinMaxObserver."""

    def __init__(self, dtype="qint8", qscheme="per_tensor_affine", reduce_range=False):
        if dtype not in _RANGES:
            raise ValueError(
                f"MinMaxObserver: dtype must be one of {sorted(_RANGES)}, "
                f"got {dtype!r}"
            )
        if qscheme not in _SCHEMES:
            raise ValueError(f"MinMaxObserver: qscheme must be one of {_SCHEMES}, got {qscheme!r}")
        if reduce_range and dtype == "quint8" and qscheme == "per_tensor_symmetric":
            raise ValueError(
                "MinMaxObserver: reduce_range is not supported "
                "for symmetric quint8 (as in torch)"
            )
        self.dtype, self.qscheme = dtype, qscheme
        qmin, qmax = _RANGES[dtype]
        if reduce_range:
            qmin, qmax = qmin // 2, qmax // 2
        self.quant_min, self.quant_max = qmin, qmax
        self.min_val = np.float32(np.inf)
        self.max_val = np.float32(-np.inf)

    def __call__(self, x):
        """Update the range with `x` (array or Tensor) and return it unchanged."""
        a = np.asarray(x.numpy() if hasattr(x, "numpy") else x, dtype=np.float32)
        self.min_val = np.minimum(self.min_val, a.min())
        self.max_val = np.maximum(self.max_val, a.max())
        return x

    def calculate_qparams(self):
        """Return (scale, zero_point) as float32 and int64 scalars."""
        if not np.isfinite(self.min_val):
            raise RuntimeError(
                "MinMaxObserver.calculate_qparams: no data observed yet; "
                "call the observer first"
            )
        qmin, qmax = self.quant_min, self.quant_max
        min_neg = np.minimum(self.min_val, np.float32(0))
        max_pos = np.maximum(self.max_val, np.float32(0))
        if self.qscheme == "per_tensor_symmetric":
            max_pos = np.maximum(-min_neg, max_pos)
            scale = np.maximum(max_pos / np.float32((qmax - qmin) / 2), _EPS)
            zero_point = 0 if self.dtype == "qint8" else (qmin + qmax + 1) // 2
        else:
            scale = np.maximum((max_pos - min_neg) / np.float32(qmax - qmin), _EPS)
            zero_point = int(np.clip(qmin - np.round(min_neg / scale), qmin, qmax))
        return np.float32(scale), np.int64(zero_point)
