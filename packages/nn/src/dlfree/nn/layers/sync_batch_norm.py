"""`SyncBatchNorm`: batch normalisation whose training statistics are the whole batch's,
over every rank of a process group (data parallelism with small per-rank batches)."""

from __future__ import annotations

import dlfree as dl
from dlfree import distributed
from dlfree.distributed import functional as dist_F

from ..module import Module
from .normalization import _BatchNorm

__all__ = ["SyncBatchNorm"]


class SyncBatchNorm(_BatchNorm):
    """Normalise each channel of an (N, C, *) input over the batches of all ranks, as
    BatchNorm over their concatenation would, forward and backward.

    In training, one all-reduce gives every rank the sum of each channel and the count,
    a second the sum of squared deviations from the global mean; both are differentiable
    (backward all-reduces their gradients), so the gradients are those of BatchNorm on
    the concatenated batch. The running statistics move toward the global ones. In eval
    mode, or without an initialized process group, it is BatchNorm.
    """

    ranks, layout = (2, 3, 4, 5), "(N, C, *)"

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, track_running_stats: bool = True, process_group=None,
                 device=None, dtype=None):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device,
                         dtype)
        self.process_group = process_group

    def get_config(self) -> dict:
        config = super().get_config()
        config.pop("process_group", None)  # a live communicator: not part of the model
        return config

    def forward(self, input):
        if not (self.training and distributed.is_initialized()):
            return super().forward(input)
        self._check_input(input, self.ranks, self.layout)
        if input.shape[1] != self.num_features:
            raise dl.ShapeError(f"SyncBatchNorm: expected {self.num_features} channels (dim 1) "
                                f"of the input, got shape {tuple(input.shape)}")
        dims = (0,) + tuple(range(2, input.ndim))
        local_count = input.numel() // self.num_features
        sums = dl.cat([input.sum(dims), dl.tensor([float(local_count)], dtype=input.dtype,
                                                  device=input.device)])
        sums = dist_F.all_reduce(sums, group=self.process_group)
        count = int(round(sums[-1].item()))
        if count <= 1:
            raise ValueError(f"SyncBatchNorm: expected more than 1 value per channel over all "
                             f"ranks when training, got {count} (input shape "
                             f"{tuple(input.shape)} on this rank)")
        affine = (1, self.num_features) + (1,) * (input.ndim - 2)
        mean = (sums[:-1] / count).reshape(affine)
        centered = input - mean
        var = dist_F.all_reduce((centered * centered).sum(dims), group=self.process_group)
        var = var / count
        out = centered * (var.reshape(affine) + self.eps).rsqrt()
        if self.weight is not None:
            out = out * self.weight.reshape(affine)
        if self.bias is not None:
            out = out + self.bias.reshape(affine)
        if self.track_running_stats:
            self._update_running(mean.detach().reshape(-1), var.detach() * (count / (count - 1)))
        return out

    def _update_running(self, mean, unbiased_var) -> None:
        with dl.no_grad():
            self.num_batches_tracked.add_(1)
            factor = 1.0 / int(self.num_batches_tracked.item()) if self.momentum is None \
                else self.momentum
            for running, value in ((self.running_mean, mean), (self.running_var, unbiased_var)):
                running.copy_(running * (1 - factor) + value.to(running.dtype) * factor)

    @classmethod
    def convert_sync_batchnorm(cls, module: Module, process_group=None) -> Module:
        """`module` with every BatchNorm1d/2d (itself included) replaced by a SyncBatchNorm
        holding the same parameters and running statistics (torch's classmethod)."""
        if isinstance(module, _BatchNorm) and not isinstance(module, SyncBatchNorm):
            sync = cls(module.num_features, module.eps, module.momentum, module.affine,
                       module.track_running_stats, process_group)
            for name in ("weight", "bias"):
                if getattr(module, name) is not None:
                    setattr(sync, name, getattr(module, name))
            for name in ("running_mean", "running_var", "num_batches_tracked"):
                sync._buffers[name] = module._buffers[name]
            sync.train(module.training)
            return sync
        for name, child in list(module._modules.items()):
            if child is not None:
                module._modules[name] = cls.convert_sync_batchnorm(child, process_group)
        return module

