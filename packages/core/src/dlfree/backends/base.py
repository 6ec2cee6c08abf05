"""The `Backend` contract: an array module plus reference kernels written against `self.xp`."""

from __future__ import annotations

from ..errors import DTypeError
from . import im2col, segments, special


class Backend:
    """An array library that holds tensor data for one device type.

    Subclasses set `name`, `device_type` and `xp`, and override a kernel only where
    their array module has a faster way; every default here is written against `xp`.
    """

    name: str = ""
    device_type: str = ""
    xp = None
    array_type: type = object
    # The dtypes (by name) this backend's arrays cannot hold, each with what to use instead.
    unheld_dtypes: dict[str, str] = {}

    def check_dtype(self, dtype) -> None:
        """Raise `DTypeError`, saying what to use instead, when this backend's arrays cannot
        hold `dtype` (a NumPy dtype, a dl.free dtype or a name); it needs no device."""
        name = getattr(dtype, "name", None) or str(dtype)
        if name in self.unheld_dtypes:
            raise DTypeError(f"{name} tensors live on the CPU only: {self.name} cannot hold "
                             f"{name}; {self.unheld_dtypes[name]}")

    def is_available(self) -> bool:
        """True when arrays can be created on this backend's devices right now."""
        return True

    def device_count(self) -> int:
        return 1

    def asarray(self, obj, dtype=None, index: int = 0):
        """An array of this backend on device `index` holding `obj`."""
        return self.xp.asarray(obj, dtype=dtype)

    def to_numpy(self, array):
        """A NumPy array with the same contents (a copy where the data lives elsewhere)."""
        return array

    def device_index(self, array) -> int:
        return 0

    def synchronize(self, index: int = 0) -> None:
        """Wait for queued work on the device; a no-op on synchronous backends."""

    def scatter_add(self, target, index, values) -> None:
        """Add `values` into `target[index]`, summing repeated indices (in place); whole
        rows picked by one 1-d index are summed by `group_reduce`, faster than `add.at`."""
        rows = segments.rows_of(index, values, target.shape)
        if rows is None:
            self.xp.add.at(target, index, values)
        else:
            target += self.group_reduce(values, rows, target.shape[0], "sum")

    def group_reduce(self, values, ids, n: int, reduce: str):
        """The rows of `values` sharing an id in `ids` reduced ("sum", "prod", "amax",
        "amin") into n rows; an id no row has gets the reduction's identity."""
        return segments.group_reduce(self.xp, values, ids, n, reduce)

    def add_scaled(self, target, value, alpha, subtract: bool = False) -> None:
        """target += alpha * value (or -= with `subtract`), in place: the optimizer update."""
        combine = self.xp.subtract if subtract else self.xp.add
        combine(target, value * alpha, out=target, casting="same_kind")

    def im2col(self, image, window, batch_last: bool = False):
        """The sliding windows of `image` as columns (see `backends.im2col`)."""
        return im2col.im2col(self.xp, image, window, batch_last)

    def col2im(self, columns, window, batch_last: bool = False):
        """Columns summed back into an image: the adjoint of `im2col`."""
        return im2col.col2im(self.xp, columns, window, batch_last)

    def erf(self, x):
        """The error function, elementwise (about 1e-15 relative in float64)."""
        return special.erf(self.xp, x)

    def erfc(self, x):
        """1 - erf(x), elementwise, accurate in relative terms where it is tiny."""
        return special.erfc(self.xp, x)

    def erfinv(self, x):
        """The inverse error function, elementwise: ±inf at ±1, NaN outside [-1, 1]."""
        return special.erfinv(self.xp, x)
