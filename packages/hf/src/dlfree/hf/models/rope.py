"""Rotary position embeddings (RoPE, Su et al. 2021) for the LLaMA family, with the frequency
scalings of transformers' `rope_parameters`: "default", "linear" (position interpolation),
"dynamic" (NTK-aware, grows with the sequence) and "llama3" (Llama 3.1's banded scaling).
Other types (yarn, longrope, ...) are refused by name.
"""

from __future__ import annotations

import math

import dlfree as dl
from dlfree import Tensor

import numpy as np

__all__ = ["ROPE_TYPES", "normalize_rope_parameters", "check_rope_parameters",
           "inverse_frequencies", "RotaryEmbedding", "apply_rotary"]

ROPE_TYPES = ("default", "linear", "dynamic", "llama3")
_REQUIRED = {"default": (), "linear": ("factor",), "dynamic": ("factor",),
             "llama3": ("factor", "low_freq_factor", "high_freq_factor",
                        "original_max_position_embeddings")}
DEFAULT_THETA = 10_000.0


def normalize_rope_parameters(rope_parameters, rope_theta=None, rope_scaling=None,
                              max_position_embeddings: int | None = None) -> dict:
    """One `rope_parameters` dict (transformers >= 5's form) from it or from the older
    top-level `rope_theta` and `rope_scaling` keys (`rope_scaling` wins, as in
    transformers): it always has "rope_type" and "rope_theta", and "llama3" gets
    "original_max_position_embeddings" (default: `max_position_embeddings`)."""
    for name, value in (("rope_parameters", rope_parameters), ("rope_scaling", rope_scaling)):
        if value is not None and not isinstance(value, dict):
            raise ValueError(f"{name} must be a dict (e.g. {{'rope_type': 'linear', "
                             f"'factor': 2.0}}) or null, got {value!r}")
    params = dict(rope_scaling or rope_parameters or {})
    if "type" in params:  # the older name of rope_type
        params.setdefault("rope_type", params.pop("type"))
    params.setdefault("rope_type", "default")
    params.setdefault("rope_theta", rope_theta if rope_theta is not None else DEFAULT_THETA)
    if params["rope_type"] == "llama3" and max_position_embeddings is not None:
        params.setdefault("original_max_position_embeddings", max_position_embeddings)
    return params


def _positive(value) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float)) and value > 0


def check_rope_parameters(params: dict, where: str) -> None:
    """Refuse RoPE settings dl.free does not implement, or that miss a required value."""
    kind = params.get("rope_type")
    if kind not in ROPE_TYPES:
        raise ValueError(f"{where}: rope type {kind!r} is not supported; dl.free implements "
                         f"{', '.join(map(repr, ROPE_TYPES))}")
    missing = [key for key in _REQUIRED[kind] if key not in params]
    if missing:
        raise ValueError(f"{where}: rope type {kind!r} needs {', '.join(missing)} in "
                         f"rope_parameters, which has {sorted(params)}")
    for key in ("rope_theta", *_REQUIRED[kind]):
        if not _positive(params[key]):
            raise ValueError(f"{where}: rope_parameters[{key!r}] must be a number > 0, got "
                             f"{params[key]!r}")
    partial = params.get("partial_rotary_factor", 1.0)
    if partial != 1.0:
        raise ValueError(f"{where}: partial_rotary_factor={partial} is not supported (the "
                         "LLaMA family rotates the whole head)")
    if kind == "llama3" and params["high_freq_factor"] <= params["low_freq_factor"]:
        raise ValueError(f"{where}: llama3 rope needs high_freq_factor > low_freq_factor, got "
                         f"{params['high_freq_factor']} and {params['low_freq_factor']}")


def inverse_frequencies(params: dict, head_dim: int, max_position_embeddings: int,
                        seq_len: int | None = None) -> np.ndarray:
    """The rotation frequency of each pair of dims, theta^(-2i/d), scaled as `params` says
    (float32; "dynamic" depends on the sequence length `seq_len`)."""
    base = float(params["rope_theta"])
    kind = params["rope_type"]
    if kind == "dynamic" and seq_len is not None and seq_len > max_position_embeddings:
        factor = params["factor"]
        stretch = factor * seq_len / max_position_embeddings - (factor - 1)
        base *= stretch ** (head_dim / (head_dim - 2))
    exponents = np.arange(0, head_dim, 2, dtype=np.float64) / head_dim
    inv_freq = 1.0 / base ** exponents
    if kind == "linear":
        inv_freq = inv_freq / params["factor"]
    elif kind == "llama3":
        inv_freq = _llama3(inv_freq, params)
    return inv_freq.astype(np.float32)


def _llama3(inv_freq: np.ndarray, params: dict) -> np.ndarray:
    """Long wavelengths slowed by `factor`, short ones kept, those between interpolated."""
    factor, low, high = params["factor"], params["low_freq_factor"], params["high_freq_factor"]
    context = params["original_max_position_embeddings"]
    wavelength = 2 * math.pi / inv_freq
    scaled = np.where(wavelength > context / low, inv_freq / factor, inv_freq)
    smooth = (context / wavelength - low) / (high - low)
    blended = (1 - smooth) * scaled / factor + smooth * scaled
    medium = (wavelength >= context / high) & (wavelength <= context / low)
    return np.where(medium, blended, scaled)


class RotaryEmbedding:
    """cos and sin of position × frequency for given position ids. Not a module: it has no
    weights (transformers' `rotary_emb` holds only non-persistent buffers)."""

    def __init__(self, params: dict, head_dim: int, max_position_embeddings: int):
        if head_dim % 2:
            raise ValueError(f"rotary embeddings rotate pairs of dims: head_dim must be even, "
                             f"got {head_dim}")
        self.params, self.head_dim = params, head_dim
        self.max_position_embeddings = max_position_embeddings
        self._static = inverse_frequencies(params, head_dim, max_position_embeddings)
        self._on_device: dict[str, Tensor] = {}

    def frequencies(self, position_ids: Tensor) -> Tensor:
        """The inverse frequencies for these positions, on their device."""
        if self.params["rope_type"] == "dynamic":
            seq_len = int(position_ids.max()) + 1
            if seq_len > self.max_position_embeddings:
                return dl.as_tensor(inverse_frequencies(
                    self.params, self.head_dim, self.max_position_embeddings, seq_len),
                    device=position_ids.device)
        key = str(position_ids.device)
        if key not in self._on_device:
            self._on_device[key] = dl.as_tensor(self._static, device=position_ids.device)
        return self._on_device[key]

    def __call__(self, position_ids: Tensor, dtype) -> tuple[Tensor, Tensor]:
        """(cos, signed sin) of shape (batch or 1, length, 1, head_dim), in `dtype`, for
        `apply_rotary` on (batch, length, heads, head_dim); computed in float32 as in
        transformers. The sin's first half is negated, which folds rotate_half's sign in."""
        angles = position_ids.to(dl.float32).unsqueeze(-1) * self.frequencies(position_ids)
        angles = angles.unsqueeze(2)
        cos, sin = angles.cos(), angles.sin()
        return dl.cat([cos, cos], dim=-1).to(dtype), dl.cat([-sin, sin], dim=-1).to(dtype)


def apply_rotary(x: Tensor, cos: Tensor, signed_sin: Tensor) -> Tensor:
    """Rotate each pair (x_i, x_{i + d/2}) of the last dim by its angle: transformers'
    `x * cos + rotate_half(x) * sin`, where rotate_half(x) * sin is the halves swapped
    times the signed sin (the same products, so the same bits)."""
    return x * cos + x.roll(x.shape[-1] // 2, dims=-1) * signed_sin
