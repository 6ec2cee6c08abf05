"""Shape and layout ops: reshape/view, permute/transpose, expand, cat/stack, split, flip, ...

An op whose result shares memory with its input (a reshape that did not copy, permute,
expand, squeeze/unsqueeze, slicing, narrow/select and the pieces of split/chunk/unbind,
diagonal) marks it with `as_view`, so that in-place changes through either are tracked.
"""

from __future__ import annotations

import numbers

from .. import dtypes
from ..autograd.function import Function
from ..autograd.grad_mode import STATE
from ..errors import DTypeError, ShapeError
from ..tensor import Size, Tensor
from ._util import as_view, normalize_dim, sum_to, tensor_method

__all__ = [
    "reshape", "flatten", "unflatten", "squeeze", "unsqueeze", "permute", "transpose",
    "swapaxes", "swapdims", "t", "movedim", "moveaxis", "broadcast_to", "broadcast_shapes",
    "broadcast_tensors", "tile", "flip", "roll", "cat", "concat", "concatenate", "stack",
    "split", "chunk", "unbind", "narrow", "select", "diagonal", "diag_embed", "diag",
]

_ALL = slice(None)


def _shape_arg(shape) -> tuple:
    if len(shape) == 1 and not isinstance(shape[0], numbers.Integral):
        shape = tuple(shape[0])
    return tuple(int(s) for s in shape)


def _dims_arg(dims, op: str, ndim: int) -> tuple:
    """An int or a sequence of dims, made non-negative and checked for repeats."""
    dims = (dims,) if isinstance(dims, numbers.Integral) else tuple(dims)
    norm = tuple(normalize_dim(d, ndim, op) for d in dims)
    if len(set(norm)) != len(norm):
        raise ShapeError(f"{op}: dims {dims} name a dimension twice")
    return norm


def _resolve_shape(shape: tuple, numel: int, src: tuple, op: str) -> tuple:
    """Fill in one -1 and check that `shape` holds exactly `numel` elements."""
    known = 1
    free = [i for i, s in enumerate(shape) if s == -1]
    for s in shape:
        if s != -1:
            if s < 0:
                raise ShapeError(f"{op}: invalid size {s} in shape {shape}")
            known *= s
    if len(free) > 1:
        raise ShapeError(f"{op}: only one dimension can be inferred (-1), got shape {shape}")
    if free:
        if known == 0 or numel % known:
            raise ShapeError(f"{op}: shape {shape} is invalid for input of shape {src} "
                             f"({numel} elements)")
        shape = shape[:free[0]] + (numel // known,) + shape[free[0] + 1:]
    elif known != numel:
        raise ShapeError(f"{op}: shape {shape} is invalid for input of shape {src} "
                         f"({numel} elements); the sizes must multiply to {numel}")
    return shape


# ------------------------------------------------------------------ reshape and view
class Reshape(Function):
    complex_grad = True

    def forward(self, x, shape):
        self.src = x.shape
        return x.reshape(shape)

    def backward(self, g):
        return (g.reshape(self.src),)


def _reshaped(input: Tensor, shape: tuple, op: str = "reshape") -> Tensor:
    """Reshape to a resolved `shape`; a view when the array module reshaped without copying."""
    out = Reshape.apply(input, shape=shape)
    # a reshaped view refers to the memory owner of its input, a copy to a new array
    base = out._data.base
    if base is not None and (base is input._data or base is input._data.base):
        return as_view(out, input, lambda root: root.reshape(shape))
    if op == "view":
        raise ShapeError(
            f"view: size {shape} is not compatible with input of shape {tuple(input.shape)} "
            f"and strides {input.stride()} (a dimension spans non-adjacent memory); use "
            ".reshape(...) instead, which copies when needed"
        )
    return out


@tensor_method()
def reshape(input, *shape) -> Tensor:
    """The same elements in a new shape; a view when the layout allows, else a copy."""
    shape = _resolve_shape(_shape_arg(shape), input._data.size, tuple(input.shape), "reshape")
    if shape == input._data.shape:
        return input
    return _reshaped(input, shape)


@tensor_method()
def view(self, *shape) -> Tensor:
    """Like reshape, but always a view: fails instead of copying a non-viewable layout."""
    shape = _resolve_shape(_shape_arg(shape), self._data.size, tuple(self.shape), "view")
    return _reshaped(self, shape, "view")


@tensor_method()
def view_as(self, other: Tensor) -> Tensor:
    """`self.view(other.shape)`."""
    return view(self, tuple(other.shape))


@tensor_method()
def reshape_as(self, other: Tensor) -> Tensor:
    """`self.reshape(other.shape)`."""
    return reshape(self, tuple(other.shape))


@tensor_method()
def flatten(input, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    """Merge dims `start_dim`..`end_dim` into one (a 0-d tensor becomes 1-d)."""
    if input.ndim == 0:
        return _reshaped(input, (1,))
    start = normalize_dim(start_dim, input.ndim, "flatten")
    end = normalize_dim(end_dim, input.ndim, "flatten")
    if start > end:
        raise ShapeError(f"flatten: start_dim {start_dim} comes after end_dim {end_dim} for a "
                         f"tensor with {input.ndim} dimensions")
    if start == end:
        return input
    shape = input._data.shape
    merged = 1
    for s in shape[start:end + 1]:
        merged *= s
    return _reshaped(input, shape[:start] + (merged,) + shape[end + 1:])


@tensor_method()
def unflatten(input, dim: int, sizes) -> Tensor:
    """Split dim `dim` into `sizes` (one of which may be -1)."""
    d = normalize_dim(dim, input.ndim, "unflatten")
    shape = input._data.shape
    sizes = _resolve_shape(_shape_arg((sizes,)), shape[d], (shape[d],), "unflatten")
    return _reshaped(input, shape[:d] + sizes + shape[d + 1:])


@tensor_method()
def unsqueeze(input, dim: int) -> Tensor:
    """Insert a dimension of size 1 at `dim` (a view)."""
    d = normalize_dim(dim, input.ndim + 1, "unsqueeze")
    shape = input._data.shape
    return _reshaped(input, shape[:d] + (1,) + shape[d:])


@tensor_method()
def squeeze(input, dim=None) -> Tensor:
    """Drop size-1 dimensions (all of them, or those of `dim`, an int or tuple); a view."""
    shape = input._data.shape
    if dim is None:
        dims = {i for i, s in enumerate(shape) if s == 1}
    else:
        dims = {d for d in _dims_arg(dim, "squeeze", input.ndim) if input.ndim and shape[d] == 1}
    if not dims:
        return input
    return _reshaped(input, tuple(s for i, s in enumerate(shape) if i not in dims))


# ------------------------------------------------------------ permutations (views)
class Permute(Function):
    complex_grad = True

    def forward(self, x, dims):
        self.dims = dims
        return x.transpose(dims)

    def backward(self, g):
        inverse = [0] * len(self.dims)
        for i, d in enumerate(self.dims):
            inverse[d] = i
        return (g.permute(tuple(inverse)),)


def _permuted(input: Tensor, dims: tuple) -> Tensor:
    return as_view(Permute.apply(input, dims=dims), input, lambda root: root.permute(dims))


@tensor_method()
def permute(input, *dims) -> Tensor:
    """Reorder the dimensions: output dim i is input dim `dims[i]` (a view)."""
    dims = _shape_arg(dims)
    if len(dims) != input.ndim:
        raise ShapeError(f"permute: number of dims {len(dims)} does not match the input's "
                         f"{input.ndim} dimensions")
    norm = tuple(normalize_dim(d, input.ndim, "permute") for d in dims)
    if sorted(norm) != list(range(input.ndim)):
        raise ShapeError(f"permute: dims {dims} must be a permutation of 0..{input.ndim - 1}")
    return _permuted(input, norm)


@tensor_method("transpose", "swapaxes", "swapdims")
def transpose(input, dim0: int, dim1: int) -> Tensor:
    """Swap two dimensions (a view)."""
    n = input.ndim
    d0, d1 = normalize_dim(dim0, n, "transpose"), normalize_dim(dim1, n, "transpose")
    if d0 == d1 or n < 2:
        return input
    dims = list(range(n))
    dims[d0], dims[d1] = d1, d0
    return _permuted(input, tuple(dims))


swapaxes = swapdims = transpose


@tensor_method("t")
def t(input) -> Tensor:
    """Transpose of a matrix; 0-d and 1-d tensors are returned as they are."""
    if input.ndim > 2:
        raise ShapeError(f"t: expects a tensor with <= 2 dimensions, got {input.ndim}; "
                         "use transpose(dim0, dim1) or .mT")
    return transpose(input, 0, 1) if input.ndim == 2 else input


def _reversed(input) -> Tensor:
    return _permuted(input, tuple(range(input.ndim - 1, -1, -1)))


def _matrix_transpose(input) -> Tensor:
    if input.ndim < 2:
        raise ShapeError(f"mT: needs a matrix or a batch of matrices, got a tensor with "
                         f"{input.ndim} dimension(s)")
    return transpose(input, -2, -1)


Tensor.T = property(_reversed, doc="All dimensions reversed.")
Tensor.mT = property(_matrix_transpose,
                     doc="The last two dimensions swapped (batched matrix transpose).")


@tensor_method("movedim", "moveaxis")
def movedim(input, source, destination) -> Tensor:
    """Move dims `source` to positions `destination` (ints or sequences), keeping the
    order of the others (a view)."""
    src = _dims_arg(source, "movedim", input.ndim)
    dst = _dims_arg(destination, "movedim", input.ndim)
    if len(src) != len(dst):
        raise ShapeError(f"movedim: source {source} and destination {destination} must name "
                         "the same number of dims")
    order = [d for d in range(input.ndim) if d not in src]
    for d, s in sorted(zip(dst, src, strict=True)):
        order.insert(d, s)
    return _permuted(input, tuple(order))


moveaxis = movedim


# ----------------------------------------------------------------- broadcasting
class Expand(Function):
    complex_grad = True

    def forward(self, x, shape):
        self.src = x.shape
        return self.xp.broadcast_to(x, shape)

    def backward(self, g):
        return (sum_to(g, self.src),)


@tensor_method("broadcast_to")
def broadcast_to(input, shape) -> Tensor:
    """A broadcast view of `input` in `shape`; -1 keeps an existing size."""
    shape = tuple(shape)
    src = tuple(input.shape)
    lead = len(shape) - len(src)
    if lead < 0:
        raise ShapeError(f"expand: the target shape {shape} has fewer dimensions than the "
                         f"input's {src}")
    resolved = []
    for i, s in enumerate(shape):
        old = src[i - lead] if i >= lead else None
        if s == -1:
            if old is None:
                raise ShapeError(f"expand: -1 is not allowed in a new leading dimension {shape}")
            s = old
        if old is not None and old != s and old != 1:
            raise ShapeError(f"expand: the expanded size {s} must match the existing size {old} "
                             f"at dimension {i} (input shape {src}, target {shape}); only size-1 "
                             "dimensions can be expanded")
        resolved.append(s)
    resolved = tuple(resolved)
    if resolved == src:
        return input
    return as_view(Expand.apply(input, shape=resolved), input,
                   lambda root: root.expand(resolved))


@tensor_method()
def expand(self, *shape) -> Tensor:
    """A broadcast view of this tensor in `shape` (-1 keeps a size); no memory is copied."""
    return broadcast_to(self, _shape_arg(shape))


@tensor_method()
def expand_as(self, other: Tensor) -> Tensor:
    """`self.expand(other.shape)`."""
    return broadcast_to(self, tuple(other.shape))


def broadcast_shapes(*shapes) -> Size:
    """The shape that tensors of `shapes` broadcast to (an int counts as a 1-d shape)."""
    shapes = [(s,) if isinstance(s, numbers.Integral) else tuple(s) for s in shapes]
    out = [1] * max((len(s) for s in shapes), default=0)
    for s in shapes:
        for i, n in enumerate(s, len(out) - len(s)):
            if out[i] == 1:
                out[i] = n
            elif n not in (1, out[i]):
                raise ShapeError(f"broadcast_shapes: shapes {', '.join(map(str, shapes))} do "
                                 f"not broadcast (size {n} against {out[i]} at dimension {i})")
    return Size(out)


def broadcast_tensors(*tensors) -> tuple:
    """The tensors expanded to their common broadcast shape (views)."""
    shape = broadcast_shapes(*(t.shape for t in tensors))
    return tuple(broadcast_to(t, shape) for t in tensors)


# ---------------------------------------------------------------- copies of data
class Repeat(Function):
    complex_grad = True

    def forward(self, x, reps):
        self.src, self.reps = x.shape, reps
        return self.xp.tile(x, reps)

    def backward(self, g):
        # view each output dim as (repeat, size) and sum the copies over the repeats
        src = (1,) * (len(self.reps) - len(self.src)) + self.src
        pairs = []
        for r, s in zip(self.reps, src, strict=True):
            pairs += [r, s]
        summed = g.reshape(tuple(pairs)).sum(dim=tuple(range(0, len(pairs), 2)))
        return (summed.reshape(self.src),)


@tensor_method()
def repeat(self, *sizes) -> Tensor:
    """Tile this tensor `sizes[i]` times along dim i (extra leading sizes add dims)."""
    sizes = _shape_arg(sizes)
    if len(sizes) < self.ndim:
        raise ShapeError(f"repeat: {len(sizes)} repeat sizes given for a tensor with "
                         f"{self.ndim} dimensions; give at least {self.ndim}")
    if any(s < 0 for s in sizes):
        raise ShapeError(f"repeat: repeat sizes must be non-negative, got {sizes}")
    return Repeat.apply(self, reps=sizes)


@tensor_method()
def tile(input, *dims) -> Tensor:
    """Like repeat, but fewer `dims` than the tensor has are padded with leading 1s."""
    dims = _shape_arg(dims)
    return repeat(input, (1,) * (input.ndim - len(dims)) + dims)


class Flip(Function):
    complex_grad = True

    def forward(self, x, dims):
        self.dims = dims
        # NumPy's flip is a view with negative strides; torch's flip returns new memory
        return self.xp.flip(x, dims).copy()

    def backward(self, g):
        return (g.flip(self.dims),)


@tensor_method()
def flip(input, *args, dims=None) -> Tensor:
    """Reverse the order of elements along `dims` (a copy, as in torch); `x.flip(0, 1)`,
    `x.flip((0, 1))` and `flip(x, dims=(0, 1))` all work."""
    if args:
        dims = args[0] if len(args) == 1 and not isinstance(args[0], numbers.Integral) else args
    return Flip.apply(input, dims=_dims_arg(dims, "flip", input.ndim))


class Roll(Function):
    complex_grad = True

    def forward(self, x, shifts, dims):
        self.shifts, self.dims = shifts, dims
        return self.xp.roll(x, shifts, dims)

    def backward(self, g):
        back = -self.shifts if self.dims is None else tuple(-s for s in self.shifts)
        return (Roll.apply(g, shifts=back, dims=self.dims),)


@tensor_method()
def roll(input, shifts, dims=None) -> Tensor:
    """Shift elements circularly by `shifts` along `dims` (the flattened tensor when None)."""
    shifts = (shifts,) if isinstance(shifts, numbers.Integral) else tuple(shifts)
    if dims is None:
        if len(shifts) != 1:
            raise ShapeError(f"roll: {len(shifts)} shifts given without dims; give one shift "
                             "to roll the flattened tensor, or one dim per shift")
        return Roll.apply(input, shifts=int(shifts[0]), dims=None)
    dims = (dims,) if isinstance(dims, numbers.Integral) else tuple(dims)
    if len(dims) != len(shifts):
        raise ShapeError(f"roll: shifts {shifts} and dims {dims} must have the same length")
    dims = tuple(normalize_dim(d, input.ndim, "roll") for d in dims)
    return Roll.apply(input, shifts=tuple(int(s) for s in shifts), dims=dims)


# ------------------------------------------------------------------ cat and stack
def _promoted(tensors: list, op: str) -> list:
    """The tensors cast to their common dtype (torch promotes across cat/stack inputs)."""
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise DTypeError(f"{op}: expected a sequence of tensors, got {type(t).__name__} at "
                             f"position {i}")
    dt = dtypes.result_type(*tensors)
    return [t if t._data.dtype == dt else t.to(dt) for t in tensors]


class Cat(Function):
    complex_grad = True

    autocast = "promote"

    def forward(self, *arrays, dim):
        self.dim = dim
        self.sizes = [a.shape[dim] for a in arrays]
        return self.xp.concatenate(arrays, axis=dim)

    def backward(self, g):
        return split(g, self.sizes, self.dim)


def cat(tensors, dim: int = 0) -> Tensor:
    """Join tensors along an existing dim; they must match in every other dim.

    As in torch, 1-d empty tensors (shape (0,)) are skipped whatever the others' shapes.
    """
    tensors = list(tensors)
    if not tensors:
        raise ShapeError("cat: expected a non-empty sequence of tensors")
    tensors = _promoted(tensors, "cat")
    kept = [t for t in tensors if t._data.shape != (0,)] or tensors
    first = kept[0]._data.shape
    if not first:
        raise ShapeError("cat: zero-dimensional tensors cannot be concatenated; "
                         "use stack, or unsqueeze them first")
    d = normalize_dim(dim, len(first), "cat")
    for i, t in enumerate(kept):
        s = t._data.shape
        if len(s) != len(first) or s[:d] + s[d + 1:] != first[:d] + first[d + 1:]:
            raise ShapeError(f"cat: sizes of tensors must match except in dimension {d}; got "
                             f"shapes {first} and {s} (tensor {i})")
    return Cat.apply(*kept, dim=d)


concat = concatenate = cat


class Stack(Function):
    complex_grad = True

    autocast = "promote"

    def forward(self, *arrays, dim):
        self.dim = dim
        return self.xp.stack(arrays, axis=dim)

    def backward(self, g):
        return unbind(g, self.dim)


def stack(tensors, dim: int = 0) -> Tensor:
    """Join equally shaped tensors along a new dim `dim`."""
    tensors = list(tensors)
    if not tensors:
        raise ShapeError("stack: expected a non-empty sequence of tensors")
    tensors = _promoted(tensors, "stack")
    first = tensors[0]._data.shape
    for i, t in enumerate(tensors):
        if t._data.shape != first:
            raise ShapeError(f"stack: expects each tensor to be equal size, but got {first} "
                             f"at entry 0 and {t._data.shape} at entry {i}")
    return Stack.apply(*tensors, dim=normalize_dim(dim, len(first) + 1, "stack"))


# ------------------------------------------------------------ slices (views)
class Slice(Function):
    """`x[key]` for a basic key (ints, slices, None; ending in ...): a view of x."""

    complex_grad = True

    def forward(self, x, key):
        self.key, self.src = key, x.shape
        return x[key]

    def backward(self, g):
        return (SliceBackward.apply(g, key=self.key, shape=self.src),)


class SliceBackward(Function):
    """Slice's adjoint: zeros of the input's shape with the gradient written at the key."""

    complex_grad = True

    def forward(self, g, key, shape):
        self.key = key
        out = self.xp.zeros(shape, dtype=g.dtype)
        out[key] = g
        return out

    def backward(self, gg):
        return (Slice.apply(gg, key=self.key),)


def slice_view(input: Tensor, key: tuple) -> Tensor:
    """`input[key]` as a view, for a checked basic key ending in Ellipsis."""
    return as_view(Slice.apply(input, key=key), input, lambda root: slice_view(root, key))


def _dim_size(input: Tensor, dim: int, op: str) -> tuple:
    if input.ndim == 0:
        raise ShapeError(f"{op}: needs a tensor with at least one dimension, got a 0-d tensor")
    d = normalize_dim(dim, input.ndim, op)
    return d, input._data.shape[d]


@tensor_method()
def narrow(input, dim: int, start, length: int) -> Tensor:
    """Elements `start` .. `start + length - 1` along `dim` (a view); `start` may be < 0."""
    d, n = _dim_size(input, dim, "narrow")
    start, length = int(start), int(length)
    if not -n <= start <= n:
        raise IndexError(f"narrow: start {start} is out of range for dimension {d} of size {n} "
                         f"(tensor shape {tuple(input.shape)}); valid: [{-n}, {n}]")
    start %= n if n else 1
    if length < 0 or start + length > n:
        raise IndexError(f"narrow: start {start} + length {length} exceeds dimension {d} of "
                         f"size {n} (tensor shape {tuple(input.shape)}); valid lengths: "
                         f"[0, {n - start}]")
    return slice_view(input, (_ALL,) * d + (slice(start, start + length), Ellipsis))


@tensor_method()
def select(input, dim: int, index) -> Tensor:
    """The slice at `index` along `dim`, which is removed (a view); `index` may be < 0."""
    d, n = _dim_size(input, dim, "select")
    index = int(index)
    if not -n <= index < n:
        raise IndexError(f"select: index {index} is out of range for dimension {d} of size {n} "
                         f"(tensor shape {tuple(input.shape)}); valid: [{-n}, {n - 1}]")
    return slice_view(input, (_ALL,) * d + (index, Ellipsis))


class Split(Function):
    """The op behind split, chunk and unbind, whose outputs are the `Piece`s of its input.

    Forward passes the input through; the pieces are views of it at `keys`. The engine hands
    the gradient of every piece to one backward (see `Function.output_index`), which writes
    them into one array: one allocation and one pass over the input's size, however many
    pieces there are, with zeros only where a piece got no gradient.
    """

    complex_grad = True

    def forward(self, x, keys, dim, unbound):
        self.keys, self.dim, self.unbound, self.shape = keys, dim, unbound, x.shape
        self.shapes = [x[key].shape for key in keys]
        self.n_outputs = len(keys)
        return x

    def backward(self, grads):
        given = next(g for g in grads if g is not None)
        xp, dtype = self.xp, given._data.dtype
        if STATE.enabled:  # recording: the pieces joined by Tensor ops, for double backward
            parts = [g if g is not None else Tensor._make(xp.zeros(shape, dtype), self.device)
                     for shape, g in zip(self.shapes, grads, strict=True)]
            return ((stack if self.unbound else cat)(parts, self.dim),)
        out = xp.empty(self.shape, dtype=dtype)
        for key, g in zip(self.keys, grads, strict=True):
            out[key] = 0 if g is None else g._data
        return (Tensor._make(out, self.device),)

    def release(self) -> None:
        """Keep the layout of the pieces, all that backward reads: as in torch, another
        backward through pieces that the first one did not reach needs no retain_graph."""


class Piece(Function):
    """One output of `Split`, its input at `key`; its gradient goes to Split's backward."""

    complex_grad = True

    def forward(self, whole, key, index):
        self.output_index = index
        return whole[key]


def _pieces(input: Tensor, keys: list, d: int, unbound: bool = False) -> tuple:
    """The views of `input` at `keys` along dim `d`, under one Split node when recording."""
    if not (STATE.enabled and input.requires_grad):
        return tuple(slice_view(input, key) for key in keys)
    whole = Split.apply(input, keys=keys, dim=d, unbound=unbound)
    return tuple(as_view(Piece.apply(whole, key=key, index=i), input,
                         lambda root, key=key: slice_view(root, key))
                 for i, key in enumerate(keys))


@tensor_method()
def unbind(input, dim: int = 0) -> tuple:
    """All slices along `dim`, as a tuple of views."""
    d, n = _dim_size(input, dim, "unbind")
    return _pieces(input, [(_ALL,) * d + (i, Ellipsis) for i in range(n)], d, unbound=True)


def _split_keys(d: int, sizes) -> list:
    """The keys of consecutive pieces of `sizes` along dim `d`."""
    keys, start = [], 0
    for size in sizes:
        keys.append((_ALL,) * d + (slice(start, start + size), Ellipsis))
        start += size
    return keys


@tensor_method()
def split(tensor, split_size_or_sections, dim: int = 0) -> tuple:
    """Views of consecutive pieces along `dim`: of an int size each (the last may be
    smaller), or of the sizes in a list, which must add up to the dim's size."""
    d, n = _dim_size(tensor, dim, "split")
    if isinstance(split_size_or_sections, numbers.Integral):
        size = int(split_size_or_sections)
        if size < 0 or (size == 0 and n):
            raise ShapeError(f"split: split_size must be positive (0 only for an empty dim), "
                             f"got {size} for dimension {d} of size {n}")
        sizes = [size] * (n // size) + ([n % size] if n % size else []) if n else [0]
    else:
        sizes = [int(s) for s in split_size_or_sections]
        if sum(sizes) != n or any(s < 0 for s in sizes):
            raise ShapeError(f"split: sizes {sizes} must be non-negative and add up to the size "
                             f"{n} of dimension {d} (tensor shape {tuple(tensor.shape)})")
    return _pieces(tensor, _split_keys(d, sizes), d)


@tensor_method()
def chunk(input, chunks: int, dim: int = 0) -> tuple:
    """Split into `chunks` pieces of ceil(size / chunks) along `dim` (maybe fewer pieces)."""
    if chunks <= 0:
        raise ShapeError(f"chunk: chunks must be positive, got {chunks}")
    d, n = _dim_size(input, dim, "chunk")
    if n == 0:
        return _pieces(input, _split_keys(d, [0] * chunks), d)
    return split(input, -(-n // chunks), d)


# --------------------------------------------------------------------- diagonals
def _diagonal(xp, a, offset: int, dim1: int, dim2: int):
    """The diagonal as a writable view (NumPy hands it out read-only, torch's is writable)."""
    out = xp.diagonal(a, offset, dim1, dim2)
    if not getattr(out.flags, "writeable", True) and a.flags.writeable:
        out.flags.writeable = True
    return out


class Diagonal(Function):
    complex_grad = True

    def forward(self, x, offset, dim1, dim2):
        self.src, self.args = x.shape, (offset, dim1, dim2)
        return _diagonal(self.xp, x, offset, dim1, dim2)

    def backward(self, g):
        return (DiagonalScatter.apply(g, shape=self.src, args=self.args),)


class DiagonalScatter(Function):
    """Zeros of `shape` with the input written on a diagonal: Diagonal's adjoint."""

    complex_grad = True

    def forward(self, x, shape, args):
        self.args = args
        out = self.xp.zeros(shape, dtype=x.dtype)
        _diagonal(self.xp, out, *args)[...] = x
        return out

    def backward(self, g):
        offset, dim1, dim2 = self.args
        return (Diagonal.apply(g, offset=offset, dim1=dim1, dim2=dim2),)


def _diagonal_dims(ndim: int, dim1: int, dim2: int, op: str) -> tuple:
    if ndim < 2:
        raise ShapeError(f"{op}: needs at least 2 dimensions, got {ndim}")
    d1, d2 = normalize_dim(dim1, ndim, op), normalize_dim(dim2, ndim, op)
    if d1 == d2:
        raise ShapeError(f"{op}: dim1 and dim2 must differ, both are {d1}")
    return d1, d2


@tensor_method()
def diagonal(input, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """The diagonal of the (dim1, dim2) matrices, moved to the last dim (a view);
    `offset` > 0 is above the main diagonal."""
    d1, d2 = _diagonal_dims(input.ndim, dim1, dim2, "diagonal")
    out = Diagonal.apply(input, offset=int(offset), dim1=d1, dim2=d2)
    return as_view(out, input, lambda root: diagonal(root, offset, d1, d2))


@tensor_method()
def diag_embed(input, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """Matrices over dims (dim1, dim2) of the output whose `offset` diagonal holds the
    last dim of `input`, zeros elsewhere."""
    if input.ndim == 0:
        raise ShapeError("diag_embed: needs at least 1 dimension, got a 0-d tensor")
    d1, d2 = _diagonal_dims(input.ndim + 1, dim1, dim2, "diag_embed")
    size = input._data.shape[-1] + abs(int(offset))
    shape = list(input._data.shape[:-1])
    for d in sorted((d1, d2)):
        shape.insert(d, size)
    return DiagonalScatter.apply(input, shape=tuple(shape), args=(int(offset), d1, d2))


@tensor_method()
def diag(input, diagonal: int = 0) -> Tensor:
    """A 1-d tensor to a square matrix with it on a diagonal; a matrix to (a copy of)
    its diagonal."""
    if input.ndim == 1:
        return diag_embed(input, diagonal, 0, 1)
    if input.ndim == 2:
        return Diagonal.apply(input, offset=int(diagonal), dim1=0, dim2=1).clone()
    raise ShapeError(f"diag: expects a 1-d or 2-d tensor, got {input.ndim} dimensions")
