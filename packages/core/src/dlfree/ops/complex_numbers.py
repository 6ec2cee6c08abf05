"""Complex tensors' own ops: building them (`complex`, `polar`, `view_as_complex`) and
taking them apart (`real`, `imag`, `view_as_real`, `abs`, `angle`, `conj`).

Gradients follow torch's convention: for a real loss L of z = x + iy the gradient is
dL/dx + i dL/dy, so a complex op's backward multiplies by the conjugate derivative. The
results are copies, not views into the complex tensor's memory.
"""

from __future__ import annotations

from .. import dtypes
from ..autograd.function import Function
from ..errors import DTypeError, ShapeError
from ..tensor import Tensor
from ._util import check_kind, sum_to, tensor_method

__all__ = ["complex", "polar", "real", "imag", "view_as_real", "view_as_complex", "angle",
           "conj", "conj_physical", "resolve_conj", "is_complex"]


def _complex_dtype(real_np):
    return dtypes._complex_of[real_np]


class Complex(Function):
    complex_grad = True

    def forward(self, re, im):
        self.shapes = (re.shape, im.shape)
        out = self.xp.empty(self.xp.broadcast_shapes(re.shape, im.shape),
                            dtype=_complex_dtype(re.dtype))
        out.real, out.imag = re, im
        return out

    def backward(self, g):
        return sum_to(real(g), self.shapes[0]), sum_to(imag(g), self.shapes[1])


@tensor_method()
def is_complex(input) -> bool:
    """Whether `input` holds complex numbers."""
    return input._data.dtype.kind == "c"


def complex(real, imag) -> Tensor:  # noqa: A001  (torch.complex)
    """real + i imag, from two floating tensors of one dtype (they broadcast)."""
    for name, t in (("real", real), ("imag", imag)):
        if not isinstance(t, Tensor) or t._data.dtype.kind != "f":
            raise DTypeError(f"complex: {name} must be a float32 or float64 tensor, got "
                             f"{getattr(t, 'dtype', type(t).__name__)}")
    if real._data.dtype != imag._data.dtype or real._data.dtype.itemsize == 2:
        raise DTypeError(f"complex: real and imag must have one dtype, float32 or float64, "
                         f"got {real.dtype.name} and {imag.dtype.name}")
    return Complex.apply(real, imag)


def polar(abs, angle) -> Tensor:  # noqa: A002  (torch's argument names)
    """abs * (cos(angle) + i sin(angle))."""
    return complex(abs * angle.cos(), abs * angle.sin())


class Real(Function):
    complex_grad = True

    def forward(self, z):
        return z.real.copy()

    def backward(self, g):
        return (g.to(dtypes.from_np(_complex_dtype(g._data.dtype))),)


class Imag(Function):
    complex_grad = True

    def forward(self, z):
        return z.imag.copy()

    def backward(self, g):
        return (Complex.apply(g * 0, g),)


def real(input) -> Tensor:
    """The real part of a complex tensor; a real tensor is returned as it is (torch)."""
    return Real.apply(input) if input._data.dtype.kind == "c" else input


def imag(input) -> Tensor:
    """The imaginary part of a complex tensor."""
    check_kind(input, "c", "imag")
    return Imag.apply(input)


Tensor.real = property(real, doc="The real part (the tensor itself when it is real).")
Tensor.imag = property(imag, doc="The imaginary part of a complex tensor.")


class Conj(Function):
    complex_grad = True

    def forward(self, z):
        return self.xp.conj(z)

    def backward(self, g):
        return (conj(g),)


@tensor_method("conj", "conj_physical")
def conj(input) -> Tensor:
    """The complex conjugate (a copy; a real tensor is returned as it is)."""
    return Conj.apply(input) if input._data.dtype.kind == "c" else input


conj_physical = conj


@tensor_method()
def resolve_conj(input) -> Tensor:
    """`input` itself: conjugates here are computed, never lazy flags."""
    return input


class ViewAsReal(Function):
    complex_grad = True

    def forward(self, z):
        return self.xp.stack([z.real, z.imag], -1)

    def backward(self, g):
        return (Complex.apply(g[..., 0], g[..., 1]),)


class ViewAsComplex(Function):
    complex_grad = True

    def forward(self, x):
        return x[..., 0] + 1j * x[..., 1]

    def backward(self, g):
        return (ViewAsReal.apply(g),)


def view_as_real(input) -> Tensor:
    """A complex tensor as real pairs: shape (..., 2), the real part first."""
    check_kind(input, "c", "view_as_real")
    return ViewAsReal.apply(input)


def view_as_complex(input) -> Tensor:
    """Real pairs (..., 2) of float32 or float64 as one complex tensor of shape (...)."""
    check_kind(input, "f", "view_as_complex")
    if input.ndim == 0 or input.shape[-1] != 2 or input._data.dtype.itemsize == 2:
        raise ShapeError(f"view_as_complex: expected a float32 or float64 tensor whose last "
                         f"dim has size 2, got shape {tuple(input.shape)} of {input.dtype.name}")
    return ViewAsComplex.apply(input)


class ComplexAbs(Function):
    """|z|; its gradient g z / |z| is 0 at z = 0, as torch's."""

    complex_grad = True
    saves = (0,)
    save_output = True

    def forward(self, z):
        return self.xp.abs(z)

    def backward(self, g):
        z, r = self.saved_tensors
        return (g * z / (r + (r == 0).to(r.dtype)),)


def complex_abs(input) -> Tensor:
    """`abs` of a complex tensor (dl.abs calls it for complex inputs)."""
    return ComplexAbs.apply(input)


class Angle(Function):
    """The argument of each element, in (-pi, pi]; for real tensors 0 or pi, with a zero
    gradient (torch's)."""

    complex_grad = True
    saves = (0,)

    def forward(self, z):
        return self.xp.angle(z).astype(z.real.dtype, copy=False)

    def backward(self, g):
        (z,) = self.saved_tensors
        if z._data.dtype.kind != "c":
            return (g * 0,)
        r2 = real(z * conj(z))  # d angle = (x dy - y dx) / |z|^2: g i z / |z|^2
        return (g * z * 1j / (r2 + (r2 == 0).to(r2.dtype)),)


@tensor_method()
def angle(input) -> Tensor:
    """The argument of each complex element; 0 or pi for real ones."""
    check_kind(input, "fc", "angle")
    return Angle.apply(input)
