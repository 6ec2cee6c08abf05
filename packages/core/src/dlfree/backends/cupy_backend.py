"""The NVIDIA GPU backend: CuPy arrays, imported only when a CUDA device is asked for."""

from __future__ import annotations

from .base import Backend


class CupyBackend(Backend):
    name = "cupy"
    device_type = "cuda"
    unheld_dtypes = {"bfloat16": "convert with .float() (float32) or .half() (float16) "
                                 "before moving to cuda"}

    @property
    def xp(self):
        import cupy

        return cupy

    @property
    def array_type(self):
        return self.xp.ndarray

    def unavailable_reason(self) -> str | None:
        """None when a GPU answers; else why not, separating "no CuPy" from "no GPU"."""
        try:
            import cupy
        except ImportError as e:
            return (f"CuPy is not installed ({e}); install it with "
                    "pip install 'dlfree[cuda12]' (CUDA 12) or 'dlfree[cuda13]' (CUDA 13)")
        try:
            count = cupy.cuda.runtime.getDeviceCount()
        except Exception as e:  # CuPy raises its own CUDARuntimeError types
            return f"CuPy is installed but no CUDA GPU answers: {e}"
        return None if count > 0 else "CuPy is installed but it finds no CUDA GPU"

    def is_available(self) -> bool:
        return self.unavailable_reason() is None

    def device_count(self) -> int:
        return self.xp.cuda.runtime.getDeviceCount() if self.is_available() else 0

    def context(self, index: int = 0):
        """Ops on device `index` run with it as CuPy's current device."""
        return self.xp.cuda.Device(index)

    def asarray(self, obj, dtype=None, index: int = 0):
        wanted = getattr(obj, "dtype", None) if dtype is None else dtype
        if wanted is not None:
            self.check_dtype(wanted)
        with self.xp.cuda.Device(index):
            return self.xp.asarray(obj, dtype=dtype)

    def to_numpy(self, array):
        return self.xp.asnumpy(array)

    def device_index(self, array) -> int:
        return array.device.id

    def synchronize(self, index: int = 0) -> None:
        self.xp.cuda.Device(index).synchronize()

    def scatter_add(self, target, index, values) -> None:
        import cupyx

        cupyx.scatter_add(target, index, values)

    def group_reduce(self, values, ids, n: int, reduce: str):
        """CuPy's ufuncs have no `reduceat`: atomic scatters into an identity-filled output
        instead (cupyx's for sum, max and min; `multiply.at` for the product)."""
        import cupyx

        from .segments import identity

        out = self.xp.full((n,) + values.shape[1:], identity(self.xp, reduce, values.dtype),
                           dtype=values.dtype)
        scatter = {"sum": cupyx.scatter_add, "amax": cupyx.scatter_max,
                   "amin": cupyx.scatter_min}.get(reduce)
        if scatter is None:
            self.xp.multiply.at(out, ids, values)
        else:
            scatter(out, ids, values)
        return out

    def erf(self, x):
        import cupyx.scipy.special

        return cupyx.scipy.special.erf(x)

    def erfinv(self, x):
        import cupyx.scipy.special

        return cupyx.scipy.special.erfinv(x)


__all__ = ["CupyBackend"]
