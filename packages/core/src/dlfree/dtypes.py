"""dl.free dtypes, the default floating dtype and PyTorch's type-promotion rules."""

from __future__ import annotations

import numbers

import numpy as np

from .errors import DTypeError

BFLOAT16_MISSING = ("bfloat16 needs the ml_dtypes package, which is not installed; install "
                    "it with: pip install 'dlfree[bfloat16]'")


def kind(np_dtype) -> str:
    """NumPy's kind letter of `np_dtype` ("b", "u", "i", "f"), with bfloat16 (which NumPy
    files under "V", as it does every extension dtype) counted as "f"."""
    letter = np_dtype.kind
    return "f" if letter == "V" and np_dtype.name == "bfloat16" else letter


def accumulator(np_dtype):
    """The dtype a sum over `np_dtype` accumulates in: float32 for bfloat16 (as torch does;
    its 8 significant bits would lose most of a long sum), else None (NumPy's choice). The
    op's result is bfloat16 again (see `Function.apply`)."""
    return np.float32 if np_dtype.kind == "V" and np_dtype.name == "bfloat16" else None


class DType:
    """A tensor element type; wraps the NumPy dtype that stores it."""

    __slots__ = ("name", "np", "is_floating_point", "is_complex", "is_signed", "itemsize",
                 "category")

    def __init__(self, name: str, np_dtype=None):
        self.name = name
        self.np = np.dtype(name if np_dtype is None else np_dtype)
        letter = kind(self.np)
        self.is_floating_point = letter == "f"
        self.is_complex = letter == "c"
        self.is_signed = letter in "fic"
        self.itemsize = self.np.itemsize
        # 0 bool < 1 integer < 2 floating < 3 complex: the order PyTorch promotes by.
        self.category = {"b": 0, "u": 1, "i": 1, "f": 2, "c": 3}[letter]

    def __repr__(self) -> str:
        return f"dlfree.{self.name}"

    def __reduce__(self):
        return (_by_name.__getitem__, (self.name,))


bool_ = DType("bool")
uint8 = DType("uint8")
int8 = DType("int8")
int16 = DType("int16")
int32 = DType("int32")
int64 = DType("int64")
float16 = DType("float16")
float32 = DType("float32")
float64 = DType("float64")
complex64 = DType("complex64")
complex128 = DType("complex128")
ALL = (bool_, uint8, int8, int16, int32, int64, float16, float32, float64, complex64, complex128)
_by_name = {d.name: d for d in ALL}
_by_np = {d.np: d for d in ALL}


class _Bfloat16State:
    """Whether bfloat16 has been made (`on`): `Function.apply` looks at bfloat16 results
    only then, so programs that never use it pay one attribute read per op."""

    on = False
    dtype: DType | None = None


BFLOAT16 = _Bfloat16State()


def bfloat16_dtype() -> DType:
    """`dl.bfloat16`, made on first use: importing ml_dtypes (the NumPy extension dtype JAX
    uses, the `dlfree[bfloat16]` extra) takes longer than NumPy itself, so `import dlfree`
    does not. Raises `DTypeError` saying how to install it when it is missing."""
    if BFLOAT16.dtype is None:
        try:
            import ml_dtypes
        except ImportError:
            raise DTypeError(BFLOAT16_MISSING) from None
        made = DType("bfloat16", ml_dtypes.bfloat16)
        _by_name[made.name] = _by_np[made.np] = made
        _complex_of[made.np] = complex64.np
        BFLOAT16.dtype, BFLOAT16.on = made, True
    return BFLOAT16.dtype


def __getattr__(name: str) -> DType:
    if name == "bfloat16":  # dtypes.bfloat16, made on first use
        return bfloat16_dtype()
    raise AttributeError(f"module 'dlfree.dtypes' has no attribute {name!r}")
_aliases = {
    "half": float16, "float": float32, "double": float64, "short": int16,
    "int": int32, "long": int64, "bool": bool_, "cfloat": complex64, "cdouble": complex128,
}
# the complex dtype holding a floating dtype's pairs (NumPy has no complex32 for float16)
_complex_of = {float16.np: complex64.np, float32.np: complex64.np,
               float64.np: complex128.np}

_default_float = [float32]


def get_default_dtype() -> DType:
    """The dtype of floating tensors created from Python floats (float32 unless changed)."""
    return _default_float[0]


def set_default_dtype(dtype) -> None:
    """Set the dtype that Python floats and floating factories produce."""
    d = as_dtype(dtype)
    if not d.is_floating_point:
        raise DTypeError(
            f"set_default_dtype: {d!r} is not a floating dtype; valid: float16, float32, float64"
        )
    _default_float[0] = d


def finfo(dtype=None):
    """The machine limits of a floating dtype, as torch.finfo gives them (bits, eps, max,
    min, tiny, smallest_normal, resolution); of the default dtype when none is given, of
    the real part's dtype for a complex one."""
    d = get_default_dtype() if dtype is None else as_dtype(dtype)
    if not (d.is_floating_point or d.is_complex):
        raise DTypeError(f"finfo: {d!r} is not a floating dtype; use iinfo for integers")
    if d.name == "bfloat16":
        import ml_dtypes

        return ml_dtypes.finfo(d.np)
    return np.finfo(d.np)


def iinfo(dtype):
    """The machine limits of an integer dtype, as torch.iinfo gives them (bits, max, min)."""
    d = as_dtype(dtype)
    if d.category != 1:
        raise DTypeError(f"iinfo: {d!r} is not an integer dtype; use finfo for floating ones")
    return np.iinfo(d.np)


def as_dtype(spec) -> DType:
    """Resolve a DType, NumPy dtype, Python type or name to a DType."""
    if type(spec) is DType:
        return spec
    if spec is float:
        return _default_float[0]
    if spec is int:
        return int64
    if spec is bool:
        return bool_
    if spec is complex:
        return complex128 if _default_float[0] is float64 else complex64
    if isinstance(spec, str) and spec in _aliases:
        return _aliases[spec]
    if spec == "bfloat16" or getattr(spec, "__name__", None) == "bfloat16" or \
            getattr(spec, "name", None) == "bfloat16":  # the name, ml_dtypes' type or dtype
        return bfloat16_dtype()
    try:
        return _by_np[np.dtype(spec)]
    except (TypeError, KeyError):
        valid = ", ".join(d.name for d in (*ALL, BFLOAT16.dtype) if d is not None)
        raise DTypeError(f"unsupported dtype {spec!r}; valid: {valid}") from None


def from_np(np_dtype) -> DType:
    """The DType stored in a NumPy/CuPy dtype."""
    try:
        return _by_np[np_dtype]
    except KeyError:
        if getattr(np_dtype, "name", "") == "bfloat16":  # made by ml_dtypes before we did
            return bfloat16_dtype()
        valid = ", ".join(d.name for d in ALL)
        raise DTypeError(f"arrays of dtype {np_dtype} are not supported; valid: {valid}") from None


def _category_of_scalar(x) -> int:
    """0, 1, 2 or 3 for a Python or NumPy bool, integer, real or complex number."""
    if isinstance(x, bool | np.bool_):
        return 0
    if isinstance(x, numbers.Integral):
        return 1
    if isinstance(x, numbers.Real):
        return 2
    if isinstance(x, numbers.Complex):
        return 3
    raise DTypeError(
        f"unsupported scalar {x!r} of type {type(x).__name__}; valid: bool, int, float, "
        "complex"
    )


def is_scalar(x) -> bool:
    """A number an op accepts beside tensors: Python or NumPy bool, int, float or complex."""
    return isinstance(x, numbers.Number | np.bool_)


def _default_for(category: int) -> np.dtype:
    if category == 3:
        return _complex_of[_default_float[0].np]
    return (bool_, int64, _default_float[0])[category].np


def result_type(*operands) -> np.dtype:
    """PyTorch's promotion over tensors and Python scalars; returns a NumPy dtype.

    Dimensioned tensors decide first; a zero-dim tensor, then a Python scalar, only
    lifts the result when it belongs to a higher category (bool < int < float).
    """
    tiers: list[list] = [[], [], []]  # dimensioned arrays, zero-dim arrays, scalars
    for op in operands:
        data = getattr(op, "_data", None)
        if data is not None and hasattr(data, "dtype"):
            tiers[0 if data.ndim else 1].append(data.dtype)
        else:
            tiers[2].append(_category_of_scalar(op))
    result = None
    for tier, items in enumerate(tiers):
        if not items:
            continue
        if tier < 2:
            dt = items[0]
            for other in items[1:]:
                dt = _promote_pair(dt, other)
            cat = _by_np[dt].category
        else:
            cat = max(items)
            dt = _default_for(cat)
        if result is None:
            result = dt
        elif cat > (low := _by_np[result].category):
            # a complex number lifting a floating result keeps its precision (torch's rule)
            result = _complex_of[result] if cat == 3 and low == 2 else dt
    return result


def _promote_pair(a: np.dtype, b: np.dtype) -> np.dtype:
    if a == b:
        return a
    ca, cb = _by_np[a].category, _by_np[b].category
    if ca != cb and ca + cb != 5:  # complex with floating: the wider of both, as NumPy's
        return a if ca > cb else b
    if {a.name, b.name} == {"bfloat16", "float16"}:
        return np.dtype(np.float32)  # torch's rule; neither holds the other's values
    return np.promote_types(a, b)
