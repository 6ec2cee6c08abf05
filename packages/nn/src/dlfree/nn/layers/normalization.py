"""Normalisation layers: batch (with running statistics), layer, group, instance and RMS
normalisation."""

from __future__ import annotations

import numbers
import warnings

import dlfree as dl
from dlfree import ShapeError
from dlfree import functional as F

from .. import init
from ..module import Module
from ._common import check_count, empty_parameter

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "InstanceNorm1d", "InstanceNorm2d",
           "InstanceNorm3d", "LayerNorm", "GroupNorm", "RMSNorm", "LocalResponseNorm"]


def _add_affine(module: Module, shape: tuple, affine: bool, bias: bool, device, dtype) -> None:
    """Register `weight` and `bias` of `shape` (or None: no affine, or bias=False)."""
    if affine:
        module.weight = empty_parameter(*shape, device=device, dtype=dtype)
        if bias:
            module.bias = empty_parameter(*shape, device=device, dtype=dtype)
        else:
            module.register_parameter("bias", None)
    else:
        module.register_parameter("weight", None)
        module.register_parameter("bias", None)


def _reset_affine(module: Module) -> None:
    """The affine parameters, where there are any, back to weight 1 and bias 0."""
    if module.weight is not None:
        init.ones_(module.weight)
    if module.bias is not None:
        init.zeros_(module.bias)


class _NormBase(Module):
    """Per-channel affine parameters (weight 1, bias 0) and, with `track_running_stats`, the
    buffers running_mean (0), running_var (1) and num_batches_tracked (0)."""

    def __init__(self, num_features: int, eps: float, momentum: float | None, affine: bool,
                 track_running_stats: bool, device, dtype, bias: bool):
        super().__init__()
        self.num_features = check_count(num_features, "num_features", type(self).__name__)
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        _add_affine(self, (num_features,), affine, bias, device, dtype)
        if track_running_stats:
            self.register_buffer("running_mean", dl.zeros(num_features, device=device,
                                                          dtype=dtype))
            self.register_buffer("running_var", dl.ones(num_features, device=device,
                                                        dtype=dtype))
            self.register_buffer("num_batches_tracked", dl.tensor(0, dtype=dl.int64,
                                                                  device=device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self) -> None:
        """Back to mean 0, variance 1 and no batches seen."""
        if self.track_running_stats:
            with dl.no_grad():
                self.running_mean.zero_()
                self.running_var.fill_(1)
                self.num_batches_tracked.zero_()

    def reset_parameters(self) -> None:
        self.reset_running_stats()
        _reset_affine(self)

    def _check_input(self, input, ranks: tuple, layout: str) -> None:
        if input.ndim not in ranks:
            raise ShapeError(f"{type(self).__name__}: expected a {' or '.join(map(str, ranks))}-d "
                             f"input {layout}, got shape {tuple(input.shape)}")

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, bias={self.bias is not None}, "
                f"track_running_stats={self.track_running_stats}")


class _BatchNorm(_NormBase):
    """Normalise each channel over the batch (and the spatial dims). In training the batch
    statistics normalise and the running ones move toward them by `momentum`, or, with
    momentum=None, become the cumulative average over the batches seen; in eval mode the
    running statistics normalise."""

    ranks: tuple
    layout: str

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, track_running_stats: bool = True, device=None,
                 dtype=None, *, bias: bool = True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype,
                         bias)

    def forward(self, input):
        self._check_input(input, self.ranks, self.layout)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats:
            with dl.no_grad():
                self.num_batches_tracked.add_(1)
            if self.momentum is None:
                factor = 1.0 / int(self.num_batches_tracked.item())
        use_batch = self.training or (self.running_mean is None and self.running_var is None)
        keep = not self.training or self.track_running_stats
        return F.batch_norm(input, self.running_mean if keep else None,
                            self.running_var if keep else None, self.weight, self.bias,
                            use_batch, factor, self.eps)


class BatchNorm1d(_BatchNorm):
    """Batch normalisation of (N, C) or (N, C, L) input."""

    ranks, layout = (2, 3), "(N, C) or (N, C, L)"


class BatchNorm2d(_BatchNorm):
    """Batch normalisation of (N, C, H, W) input."""

    ranks, layout = (4,), "(N, C, H, W)"


class BatchNorm3d(_BatchNorm):
    """Batch normalisation of (N, C, D, H, W) input."""

    ranks, layout = (5,), "(N, C, D, H, W)"


class _InstanceNorm(_NormBase):
    """Normalise each channel of each sample over its `spatial` dims, batched or not. No
    affine parameters and no running statistics unless asked for; with
    `track_running_stats` the running statistics normalise in eval mode."""

    spatial: int
    layout: str

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float = 0.1,
                 affine: bool = False, track_running_stats: bool = False, device=None,
                 dtype=None, *, bias: bool = True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype,
                         bias)

    def forward(self, input):
        rank = self.spatial + 2
        self._check_input(input, (rank - 1, rank), self.layout)
        channels = input.shape[-rank + 1]
        if channels != self.num_features:
            message = (f"{type(self).__name__}: expected input's size at "
                       f"dim={input.ndim - rank + 1} to match num_features "
                       f"({self.num_features}), but got {channels}")
            if self.affine:
                raise ShapeError(message)
            warnings.warn(message + "; num_features is unused because affine=False",
                          UserWarning, stacklevel=2)
        batched = input if input.ndim == rank else input.unsqueeze(0)
        out = F.instance_norm(batched, self.running_mean, self.running_var, self.weight,
                              self.bias, self.training or not self.track_running_stats,
                              self.momentum if self.momentum is not None else 0.0, self.eps)
        return out if input.ndim == rank else out.squeeze(0)


class InstanceNorm1d(_InstanceNorm):
    """Instance normalisation of (N, C, L) or (C, L) input, over L."""

    spatial, layout = 1, "(N, C, L) or (C, L)"


class InstanceNorm2d(_InstanceNorm):
    """Instance normalisation of (N, C, H, W) or (C, H, W) input, over H and W."""

    spatial, layout = 2, "(N, C, H, W) or (C, H, W)"


class InstanceNorm3d(_InstanceNorm):
    """Instance normalisation of (N, C, D, H, W) or (C, D, H, W) input, over D, H and W."""

    spatial, layout = 3, "(N, C, D, H, W) or (C, D, H, W)"


class LocalResponseNorm(Module):
    """Each element divided by (k + alpha / size * sum of squares over `size` neighbouring
    channels) ** beta, for (N, C, *) input."""

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0):
        super().__init__()
        self.size = check_count(size, "size", "LocalResponseNorm")
        self.alpha, self.beta, self.k = alpha, beta, k

    def forward(self, input):
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


def _shape(normalized_shape) -> tuple:
    if isinstance(normalized_shape, numbers.Integral):
        return (int(normalized_shape),)
    return tuple(normalized_shape)


class LayerNorm(Module):
    """Normalise each sample over its last dims (`normalized_shape`), with an elementwise
    weight (1) and bias (0) of that shape."""

    def __init__(self, normalized_shape, eps: float = 1e-5, elementwise_affine: bool = True,
                 bias: bool = True, device=None, dtype=None):
        super().__init__()
        self.normalized_shape = _shape(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        _add_affine(self, self.normalized_shape, elementwise_affine, bias, device, dtype)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        _reset_affine(self)

    def forward(self, input):
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}, bias={self.bias is not None}")


class GroupNorm(Module):
    """Normalise each group of num_channels / num_groups channels of each sample of an
    (N, C, *) input, with a per-channel weight (1) and bias (0)."""

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5,
                 affine: bool = True, device=None, dtype=None, *, bias: bool = True):
        super().__init__()
        self.num_groups = check_count(num_groups, "num_groups", "GroupNorm")
        self.num_channels = check_count(num_channels, "num_channels", "GroupNorm")
        if num_channels % num_groups:
            raise ValueError(f"GroupNorm: num_channels ({num_channels}) must be divisible by "
                             f"num_groups ({num_groups})")
        self.eps = eps
        self.affine = affine
        _add_affine(self, (num_channels,), affine, bias, device, dtype)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        _reset_affine(self)

    def forward(self, input):
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
                f"bias={self.bias is not None}")


class RMSNorm(Module):
    """x / sqrt(mean(x**2) + eps) over the last dims (`normalized_shape`), times an
    elementwise weight (1); eps=None means the dtype's machine epsilon."""

    def __init__(self, normalized_shape, eps: float | None = None,
                 elementwise_affine: bool = True, device=None, dtype=None):
        super().__init__()
        self.normalized_shape = _shape(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = empty_parameter(*self.normalized_shape, device=device, dtype=dtype)
        else:
            self.register_parameter("weight", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        if self.elementwise_affine:
            init.ones_(self.weight)

    def forward(self, input):
        return F.rms_norm(input, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}")
