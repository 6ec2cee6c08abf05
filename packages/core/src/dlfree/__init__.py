"""dl.free: tensors on NumPy/CuPy, reverse-mode autograd and differentiable ops.

`import dlfree as dl` gives the core; `dl.nn`, `dl.optim`, `dl.metrics`, `dl.hf` and
`dl.train` come from separately installed distributions that share this namespace.
"""

import sys as _sys
from pkgutil import extend_path
from types import ModuleType
from typing import TYPE_CHECKING

__path__ = extend_path(__path__, __name__)

from . import threads  # noqa: E402  (first, to set OpenBLAS's idle timeout before NumPy loads)

threads.quiet_blas_threads()

from . import (  # noqa: E402
    accelerator,
    amp,
    autograd,
    backends,
    cuda,
    data,
    distributed,
    dtypes,
    fft,
    func,
    functional,
    io,
    linalg,
    ops,
    plugins,
    profiler,
    registry,
    utils,
)
from .autograd import enable_grad, is_grad_enabled, no_grad, set_grad_enabled  # noqa: E402
from .creation import *  # noqa: E402,F403
from .device import Device  # noqa: E402
from .dtypes import (  # noqa: E402
    DType,
    bool_,
    complex64,
    complex128,
    finfo,
    float16,
    float32,
    float64,
    get_default_dtype,
    iinfo,
    int8,
    int16,
    int32,
    int64,
    set_default_dtype,
    uint8,
)
from .errors import (  # noqa: E402
    AutogradError,
    CheckpointError,
    DeviceError,
    DLFreeError,
    DTypeError,
    PluginError,
    ShapeError,
)
from .func import vmap  # noqa: E402
from .hookspecs import hookimpl, hookspec  # noqa: E402
from .io import load, save  # noqa: E402

# The tensor ops (dlfree.ops.TENSOR_FAMILIES), a star import per family rather than one of
# dlfree.ops: a type checker reads only literal __all__ lists, and ops' is computed.
from .ops.cast import *  # noqa: E402,F403
from .ops.combining import *  # noqa: E402,F403
from .ops.comparison import *  # noqa: E402,F403
from .ops.complex_numbers import *  # noqa: E402,F403
from .ops.counting import *  # noqa: E402,F403
from .ops.decomposition import *  # noqa: E402,F403
from .ops.elementwise import *  # noqa: E402,F403
from .ops.grouped import *  # noqa: E402,F403
from .ops.householder import *  # noqa: E402,F403
from .ops.indexing import *  # noqa: E402,F403
from .ops.inplace import *  # noqa: E402,F403
from .ops.linalg import *  # noqa: E402,F403
from .ops.placing import *  # noqa: E402,F403
from .ops.pointwise import *  # noqa: E402,F403
from .ops.products import *  # noqa: E402,F403
from .ops.reduction import *  # noqa: E402,F403
from .ops.sampling import *  # noqa: E402,F403
from .ops.shape import *  # noqa: E402,F403
from .ops.softmax import *  # noqa: E402,F403
from .ops.sorting import *  # noqa: E402,F403
from .ops.special import *  # noqa: E402,F403
from .ops.statistics import *  # noqa: E402,F403
from .random import Generator, get_rng_state, initial_seed, manual_seed, seed, set_rng_state  # noqa: E402,I001
from .tensor import Parameter, Size, Tensor  # noqa: E402
from .threads import get_num_threads, set_num_threads  # noqa: E402
from .torch_names import *  # noqa: E402,F403
from .version import __version__  # noqa: E402

bool = bool_  # noqa: A001  (dl.bool, as torch.bool)
half, double, long, short = float16, float64, int64, int16
cfloat, cdouble = complex64, complex128
float, int = float32, int32  # noqa: A001  (dl.float, dl.int, as torch's)
# dl.cuda.amp, torch's older home of autocast and GradScaler, is dl.amp itself.
cuda.amp = amp
_sys.modules[__name__ + ".cuda.amp"] = amp
device = Device




if TYPE_CHECKING:  # made on first use by __getattr__; declared so type checkers see it
    bfloat16: DType


def __getattr__(name: str) -> ModuleType:
    if name == "bfloat16":  # made on first use (importing ml_dtypes is slow), see dtypes
        try:
            return dtypes.bfloat16_dtype()
        except DTypeError as e:
            raise AttributeError(str(e)) from None
    from .first_party import SUBPACKAGES

    if name in ("export", "onnx", "quantization"):  # the core's own, imported on first use
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    if name in SUBPACKAGES:
        import importlib

        try:
            return importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as e:
            if e.name != f"{__name__}.{name}":
                raise
            raise ModuleNotFoundError(
                f"dlfree.{name} is provided by the distribution {SUBPACKAGES[name]!r}, "
                f"which is not installed; install it with: pip install {SUBPACKAGES[name]}",
                name=f"{__name__}.{name}",
            ) from None
    raise AttributeError(f"module 'dlfree' has no attribute {name!r}")
