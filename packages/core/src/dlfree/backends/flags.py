"""`dl.backends.cudnn` / `dl.backends.cuda`: torch's backend switches, so programs that set
them run unchanged.

dl.free's kernels come from NumPy and CuPy, which choose their own algorithms and never
use TF32 unless CuPy is told to by its own settings, so these flags are recorded and read
back but change no result: `cudnn.benchmark = True` is harmless, `deterministic` is what
dl.free already is on the CPU, and `allow_tf32` stays a request.
"""

from __future__ import annotations

from types import SimpleNamespace


def _cuda_is_built() -> bool:
    from ..cuda import is_available  # the devices layer stands above the backends

    return is_available()

cudnn = SimpleNamespace(enabled=True, benchmark=False, deterministic=False, allow_tf32=True,
                        is_available=lambda: False, version=lambda: None)
"""torch.backends.cudnn's flags; dl.free has no cuDNN, so `is_available()` is False."""

cuda = SimpleNamespace(matmul=SimpleNamespace(allow_tf32=False,
                                              allow_fp16_reduced_precision_reduction=True,
                                              allow_bf16_reduced_precision_reduction=True),
                       is_built=_cuda_is_built)
"""torch.backends.cuda's flags (`cuda.matmul.allow_tf32`); `is_built()` says whether a
CUDA GPU can be used."""

mps = SimpleNamespace(is_available=lambda: False, is_built=lambda: False)
"""torch.backends.mps: Apple's GPU is not a dl.free device."""
