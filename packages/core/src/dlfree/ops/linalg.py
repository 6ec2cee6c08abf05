"""Matrix products (matmul/@, mm, bmm, dot, outer, einsum, tensordot) and matrix norms."""

from __future__ import annotations

import math
import numbers
import string

from .. import dtypes
from ..autograd.autocasting import autocast_policy
from ..autograd.function import Function
from ..autograd.grad_mode import STATE
from ..errors import DTypeError, ShapeError
from ..tensor import Tensor
from ._util import check_float, normalize_dim, promote, sum_array_to, sum_to, tensor_method
from .decomposition import singular_values
from .reduction import amax, amin, vector_norm

__all__ = ["matmul", "mm", "bmm", "dot", "outer", "ger", "einsum", "tensordot", "norm"]

_LETTERS = string.ascii_letters


# ------------------------------------------------------------------------ matmul
class MatMul(Function):
    """Batched, broadcast matrix product with NumPy's 1-d promotion rules.

    A batch of matrices times one matrix, (..., n, k) @ (k, m) as in a linear layer, is one
    (N, k) @ (k, m) product over the merged batch rows: BLAS runs a large product faster
    (and threads it better) than many small ones, and the weight's gradient is then one
    product too, instead of a batch of them summed.
    """

    complex_grad = True

    def forward(self, a, b):
        na, nb = self.needs_input_grad or (False, False)
        self.saves = ((1,) if na else ()) + ((0,) if nb else ())
        self.ndims = (a.ndim, b.ndim)
        self.shapes = (a.shape, b.shape)
        if a.ndim > 2 and b.ndim == 2 and a.flags.c_contiguous:
            return (_rows(a) @ b).reshape(a.shape[:-1] + b.shape[-1:])
        return a @ b

    def backward(self, g):
        na, nb = self.needs_input_grad
        saved = self.saved_tensors
        if saved[0]._data.dtype.kind == "c":  # complex: the products with the conjugates
            from .complex_numbers import conj

            saved = tuple(conj(t) for t in saved)
        b = saved[0] if na else None
        a = saved[-1] if nb else None
        da, db = self.ndims
        if da == 1 and db == 1:
            return (g * b if na else None, g * a if nb else None)
        if da > 2 and db == 2 and not STATE.enabled:  # plain backward, merged batch rows
            gd, dev = g._data, g._device
            rows = _rows(gd)
            return (Tensor._make((rows @ b._data.T).reshape(self.shapes[0]), dev)
                    if na else None,
                    Tensor._make(_rows(a._data).T @ rows, dev) if nb else None)
        if da > 1 and db > 1 and not STATE.enabled:  # plain backward: two GEMMs on arrays
            gd, dev = g._data, g._device
            return (Tensor._make(sum_array_to(gd @ b._data.swapaxes(-1, -2), self.shapes[0]),
                                 dev) if na else None,
                    Tensor._make(sum_array_to(a._data.swapaxes(-1, -2) @ gd, self.shapes[1]),
                                 dev) if nb else None)
        # lift 1-d operands to matrices so that every case is a (batched) matrix product
        if da == 1:
            g = g.unsqueeze(-2)
        if db == 1:
            g = g.unsqueeze(-1)
        ga = gb = None
        if na:
            bm = b.unsqueeze(-1) if db == 1 else b
            ga = g @ bm.mT
            ga = ga.squeeze(-2) if da == 1 else ga
            ga = sum_to(ga, self.shapes[0])
        if nb:
            am = a.unsqueeze(-2) if da == 1 else a
            gb = am.mT @ g
            gb = gb.squeeze(-1) if db == 1 else gb
            gb = sum_to(gb, self.shapes[1])
        return ga, gb


def _rows(array):
    """`array` as a matrix of its last dim's vectors (a view when the layout allows)."""
    return array.reshape(math.prod(array.shape[:-1]), array.shape[-1])


def _matmul(input, other, op: str) -> Tensor:
    if isinstance(input, Tensor) and isinstance(other, Tensor) and \
            input._data.dtype != other._data.dtype:
        # torch refuses to promote inside a matrix product (float32 @ int64 is an error)
        raise DTypeError(f"{op}: expected both operands to have the same dtype, got "
                         f"{input.dtype.name} and {other.dtype.name}; convert one first, "
                         f"e.g. other.to({input.dtype.name})")
    a, b = promote(input, other, op)
    if a.ndim == 0 or b.ndim == 0:
        raise ShapeError(f"{op}: both arguments need at least 1 dimension, got shapes "
                         f"{tuple(a.shape)} and {tuple(b.shape)}")
    k_a = a.shape[-1]
    k_b = b.shape[-2] if b.ndim > 1 else b.shape[0]
    if k_a != k_b:
        raise ShapeError(
            f"{op}: shapes {tuple(a.shape)} and {tuple(b.shape)} cannot be multiplied "
            f"({k_a} columns vs {k_b} rows); valid: the last dim of the first equals the "
            f"{'second-to-last' if b.ndim > 1 else 'only'} dim of the second"
        )
    try:
        return MatMul.apply(a, b)
    except ValueError as e:
        raise ShapeError(f"{op}: batch dimensions of {tuple(a.shape)} and {tuple(b.shape)} "
                         f"do not broadcast: {e}") from None


@tensor_method("matmul", "__matmul__")
@autocast_policy("lower")
def matmul(input, other) -> Tensor:
    """Matrix product with broadcasting over batch dimensions (PyTorch's torch.matmul)."""
    return _matmul(input, other, "matmul")


@tensor_method("__rmatmul__")
def _rmatmul(self, other) -> Tensor:
    return matmul(other, self)


@tensor_method()
@autocast_policy("lower")
def mm(input, mat2) -> Tensor:
    """Product of two matrices, (n, k) @ (k, m); no broadcasting."""
    if input.ndim != 2 or mat2.ndim != 2:
        raise ShapeError(f"mm: expected two 2-D matrices, got shapes {tuple(input.shape)} and "
                         f"{tuple(mat2.shape)}; valid: (n, k) and (k, m), or use matmul")
    return _matmul(input, mat2, "mm")


@tensor_method()
@autocast_policy("lower")
def bmm(input, mat2) -> Tensor:
    """Batched matrix product, (b, n, k) @ (b, k, m); no broadcasting."""
    if input.ndim != 3 or mat2.ndim != 3 or input.shape[0] != mat2.shape[0]:
        raise ShapeError(f"bmm: expected two 3-D batches of the same size, got shapes "
                         f"{tuple(input.shape)} and {tuple(mat2.shape)}; valid: (b, n, k) and "
                         "(b, k, m), or use matmul to broadcast")
    return _matmul(input, mat2, "bmm")


@tensor_method()
@autocast_policy("promote")
def dot(input, other) -> Tensor:
    """Inner product of two 1-D tensors of the same size and dtype."""
    if input.ndim != 1 or other.ndim != 1 or input.shape != other.shape:
        raise ShapeError(f"dot: expected two 1-D tensors of the same size, got shapes "
                         f"{tuple(input.shape)} and {tuple(other.shape)}")
    if input.dtype is not other.dtype:
        raise DTypeError(f"dot: expected both vectors to have the same dtype, got "
                         f"{input.dtype!r} and {other.dtype!r}")
    return _matmul(input, other, "dot")


@tensor_method("outer", "ger")
def outer(input, vec2) -> Tensor:
    """Outer product of two 1-D tensors: out[i, j] = input[i] * vec2[j]."""
    if input.ndim != 1 or vec2.ndim != 1:
        raise ShapeError(f"outer: expected two 1-D tensors, got shapes {tuple(input.shape)} "
                         f"and {tuple(vec2.shape)}")
    return input.unsqueeze(-1) * vec2


ger = outer


# ------------------------------------------------------------------------ einsum
def _parse_einsum(equation: str, shapes: list) -> tuple:
    """The equation with '...' spelled out as letters and checked against the shapes.

    Returns the input subscripts, the output subscript and the size of every letter
    (the broadcast size where an operand has 1).
    """
    shapes = [tuple(s) for s in shapes]

    def fail(problem):
        raise ShapeError(f"einsum: {problem} in equation {equation!r} for operand shapes "
                         f"{shapes}")

    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(shapes):
        fail(f"{len(terms)} subscript(s) for {len(shapes)} operand(s); valid: one "
             "comma-separated subscript per operand")
    bad = set(eq.replace("->", "").replace("...", "").replace(",", "")) - set(_LETTERS)
    if bad:
        fail(f"invalid character(s) {sorted(bad)}; valid: letters, ',', '...' and '->'")
    spare = iter(c for c in _LETTERS if c not in eq)
    n_ell = max([len(shape) - len(term) + 3 for term, shape in zip(terms, shapes, strict=True)
                 if "..." in term], default=0)
    ell = "".join(next(spare) for _ in range(n_ell))
    subs = []
    for i, (term, shape) in enumerate(zip(terms, shapes, strict=True)):
        sub = term
        if "..." in term:
            extra = len(shape) - len(term) + 3
            sub = term.replace("...", ell[n_ell - max(extra, 0):])
        if len(sub) != len(shape):
            fail(f"operand {i} has {len(shape)} dimension(s) but subscript {term!r} names "
                 f"{len(term.replace('...', ''))}")
        subs.append(sub)
    if arrow:
        out = rhs.replace("...", ell)
    else:
        out = ell + "".join(sorted(c for c in set(lhs) if c in _LETTERS and lhs.count(c) == 1))
    for c in out:
        if out.count(c) > 1:
            fail(f"output subscript {c!r} appears twice")
        if c not in lhs + ell:
            fail(f"output subscript {c!r} does not appear in any input")
    sizes: dict = {}
    for i, (sub, shape) in enumerate(zip(subs, shapes, strict=True)):
        for c, n in zip(sub, shape, strict=True):
            if sub.count(c) > 1 and len({m for d, m in zip(sub, shape, strict=True) if d == c}) > 1:
                fail(f"subscript {c!r} is repeated in operand {i} with different sizes")
            seen = sizes.get(c, 1)
            if n != seen and n != 1 and seen != 1:
                fail(f"subscript {c!r} has size {n} in operand {i} but {seen} elsewhere; "
                     "valid: equal sizes, or 1 to broadcast")
            sizes[c] = n if seen == 1 else seen
    return subs, out, sizes


class Einsum(Function):
    """Any NumPy einsum equation (ellipsis spelled out); each operand's gradient is one
    einsum of the output gradient with the other operands, so it is differentiable."""

    def forward(self, *arrays, subs, out, sizes):
        need = self.needs_input_grad or ()
        self.saves = tuple(j for j in range(len(arrays))
                           if any(n for i, n in enumerate(need) if i != j))
        self.subs, self.out, self.sizes = subs, out, sizes
        self.shapes = [a.shape for a in arrays]
        xp = self.xp
        result = xp.einsum(",".join(subs) + "->" + out, *arrays, optimize=True)
        # NumPy may answer with a view (a transpose, a diagonal); an output owns its memory
        if any(xp.may_share_memory(result, a) for a in arrays):
            result = result.copy()
        return result

    def backward(self, g):
        saved = dict(zip(self.saves, self.saved_tensors, strict=True))
        return tuple(self._operand_grad(i, g, saved) if need else None
                     for i, need in enumerate(self.needs_input_grad))

    def _operand_grad(self, i: int, g: Tensor, saved: dict) -> Tensor:
        xp, dt = g._device.xp, g._data.dtype
        sizes = self.sizes
        spare = iter(c for c in _LETTERS if c not in sizes)
        terms = [self.out] + [s for j, s in enumerate(self.subs) if j != i]
        operands = [g] + [saved[j] for j in range(len(self.subs)) if j != i]
        target = ""
        for c in self.subs[i]:
            if c in target:  # a repeated letter (a diagonal): a new letter tied by an identity
                tied = next(spare)
                terms.append(c + tied)
                operands.append(Tensor._make(xp.eye(sizes[c], dtype=dt), g._device))
                c = tied
            target += c
        for c in target:  # letters summed in this operand alone: broadcast the gradient
            if c not in "".join(terms):
                terms.append(c)
                operands.append(Tensor._make(xp.ones(sizes[c], dtype=dt), g._device))
        grad = einsum(",".join(terms) + "->" + target, *operands)
        # a letter of size 1 here but n elsewhere was broadcast: sum it; the reverse: expand
        shape = self.shapes[i]
        summed = tuple(d for d, (n, m) in enumerate(zip(grad.shape, shape, strict=True))
                       if m == 1 != n)
        return (grad.sum(summed, keepdim=True) if summed else grad).expand(shape)


@autocast_policy("lower")
def einsum(equation: str, *operands) -> Tensor:
    """Einstein summation as in torch.einsum / numpy.einsum: repeated letters are summed,
    '...' broadcasts, a letter repeated in one operand takes its diagonal."""
    if len(operands) == 1 and isinstance(operands[0], list | tuple):
        operands = tuple(operands[0])
    dt = dtypes.result_type(*operands)
    operands = [t if t._data.dtype == dt else t.to(dt) for t in operands]
    subs, out, sizes = _parse_einsum(equation, [t.shape for t in operands])
    return Einsum.apply(*operands, subs=subs, out=out, sizes=sizes)


@autocast_policy("promote")
def tensordot(a, b, dims=2) -> Tensor:
    """Contract the last `dims` dims of `a` with the first of `b`, or the dims listed as
    ([dims of a], [dims of b])."""
    if isinstance(dims, numbers.Integral):
        if not 0 <= dims <= min(a.ndim, b.ndim):
            raise ShapeError(f"tensordot: dims={dims} for shapes {tuple(a.shape)} and "
                             f"{tuple(b.shape)}; valid: 0 to {min(a.ndim, b.ndim)}")
        dims_a, dims_b = range(a.ndim - dims, a.ndim), range(dims)
    else:
        dims_a, dims_b = ([d] if isinstance(d, numbers.Integral) else list(d) for d in dims)
    dims_a = [normalize_dim(d, a.ndim, "tensordot") for d in dims_a]
    dims_b = [normalize_dim(d, b.ndim, "tensordot") for d in dims_b]
    if len(dims_a) != len(dims_b) or any(a.shape[i] != b.shape[j]
                                         for i, j in zip(dims_a, dims_b, strict=True)):
        raise ShapeError(f"tensordot: cannot contract dims {dims_a} of shape {tuple(a.shape)} "
                         f"with dims {dims_b} of shape {tuple(b.shape)}; valid: as many dims "
                         "on each side, with equal sizes pairwise")
    sub_a = _LETTERS[:a.ndim]
    sub_b = list(_LETTERS[a.ndim:a.ndim + b.ndim])
    for i, j in zip(dims_a, dims_b, strict=True):
        sub_b[j] = sub_a[i]
    out = [c for k, c in enumerate(sub_a) if k not in dims_a] + \
          [c for k, c in enumerate(sub_b) if k not in dims_b]
    return einsum(f"{sub_a},{''.join(sub_b)}->{''.join(out)}", a, b)


# ------------------------------------------------------------------------- norms
@autocast_policy("float32", dtype_arg="dtype")
def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim: bool = False, *, dtype=None) -> Tensor:
    """Matrix norm over the two dims `dim`: 'fro', 'nuc', 1, -1, 2, -2, inf or -inf."""
    op = "linalg.matrix_norm"
    if dtype is not None:
        A = A.to(dtype)
    check_float(A, op)
    if A.ndim < 2 or len(dim) != 2:
        raise ShapeError(f"{op}: needs a tensor with at least 2 dims and 2 dims to reduce, got "
                         f"shape {tuple(A.shape)} and dim={dim}")
    d0, d1 = (normalize_dim(d, A.ndim, op) for d in dim)
    if d0 == d1:
        raise ShapeError(f"{op}: dim={dim} names one dimension twice; valid: two distinct dims")
    if ord == "fro":
        return vector_norm(A, 2, (d0, d1), keepdim)
    if ord == "nuc" or ord in (2, -2):
        rest = [d for d in range(A.ndim) if d not in (d0, d1)]
        s = singular_values(A.permute(*rest, d0, d1))
        out = s.sum(-1) if ord == "nuc" else (amax if ord > 0 else amin)(s, -1)
        if keepdim:
            out = out.unsqueeze(min(d0, d1)).unsqueeze(max(d0, d1))
        return out
    if ord in (1, -1, math.inf, -math.inf):
        if abs(ord) == math.inf:  # the inf-norm is the 1-norm of the transpose
            d0, d1 = d1, d0
        if not keepdim and d0 < d1:
            d1 -= 1
        return (amax if ord > 0 else amin)(vector_norm(A, 1, d0, keepdim), d1, keepdim)
    raise ValueError(f"{op}: order {ord!r} is not supported; valid: 'fro', 'nuc', 1, -1, 2, -2, "
                     "inf, -inf")


@tensor_method()
@autocast_policy("float32", dtype_arg="dtype")
def norm(input, p="fro", dim=None, keepdim: bool = False, dtype=None) -> Tensor:
    """torch.norm: a vector p-norm over `dim` ('fro' is the 2-norm); 'nuc' is a matrix norm."""
    if isinstance(p, str):
        if p == "fro" and (dim is None or isinstance(dim, numbers.Integral) or len(dim) <= 2):
            return vector_norm(input, 2, dim, keepdim, dtype=dtype)
        dim = tuple(range(input.ndim)) if dim is None else dim
        return matrix_norm(input, p, dim, keepdim, dtype=dtype)
    return vector_norm(input, 2 if p is None else p, dim, keepdim, dtype=dtype)
