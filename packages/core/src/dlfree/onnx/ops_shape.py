"""ONNX converters for the shape ops: reshape, permute, expand, basic indexing (slice and
the pieces of split/chunk/unbind), cat, stack, flip, repeat, triangles and uniform fills."""

from __future__ import annotations

import math

import numpy as np

from ..export.symbolic import SymInt
from .context import INT64_MAX, INT64_MIN


def reshape(ctx):
    shape = list(ctx.attributes["shape"])
    symbolic = [i for i, d in enumerate(shape) if isinstance(d, SymInt)]
    if len(symbolic) == 1:  # one dim that follows the dynamic dims: ONNX infers it
        shape[symbolic[0]] = -1
    allowzero = {"allowzero": 1} if 0 in shape else {}
    return ctx.add("Reshape", [ctx.inputs[0], ctx.ints(shape)], **allowzero)


def permute(ctx):
    return ctx.add("Transpose", ctx.inputs, perm=[int(d) for d in ctx.attributes["dims"]])


def expand(ctx):
    return ctx.add("Expand", [ctx.inputs[0], ctx.ints(ctx.attributes["shape"])])


def index_basic(ctx, x: str, key: tuple) -> str:
    """`x[key]` for a basic key (ints, slices, None, a trailing Ellipsis): one Slice for the
    ranges and ints, then Squeeze for the ints and Unsqueeze for the Nones."""
    starts, ends, axes, steps, squeeze, unsqueeze = [], [], [], [], [], []
    dim = out_dim = 0
    for k in key:
        if k is Ellipsis:
            break
        if k is None:
            unsqueeze.append(out_dim)
            out_dim += 1
            continue
        if isinstance(k, slice):
            if not (k.start in (None, 0) and k.stop is None and k.step in (None, 1)):
                starts.append(0 if k.start is None else k.start)
                ends.append(INT64_MAX if k.stop is None else k.stop)
                axes.append(dim)
                steps.append(1 if k.step is None else k.step)
            out_dim += 1
        else:  # an int: a slice of one, squeezed
            starts.append(k)
            ends.append(SymInt(k.coeff, k.dims, k.offset + 1) if isinstance(k, SymInt)
                        else INT64_MAX if k == -1 else k + 1)
            axes.append(dim)
            steps.append(1)
            squeeze.append(dim)
        dim += 1
    if axes:
        x = ctx.add("Slice", [x, ctx.ints(starts), ctx.ints(ends), ctx.ints(axes),
                              ctx.ints(steps)])
    if squeeze:
        x = ctx.add("Squeeze", [x, ctx.ints(squeeze)])
    if unsqueeze:
        x = ctx.add("Unsqueeze", [x, ctx.ints(unsqueeze)])
    if not (axes or squeeze or unsqueeze):
        x = ctx.add("Identity", [x])
    return x


def slice_(ctx):
    return index_basic(ctx, ctx.inputs[0], ctx.attributes["key"])


def split(ctx):
    # Split passes its input through; each Piece takes its part
    return ctx.inputs[0]


def piece(ctx):
    return index_basic(ctx, ctx.inputs[0], ctx.attributes["key"])


def cat(ctx):
    return ctx.add("Concat", ctx.inputs, axis=int(ctx.attributes["dim"]))


def stack(ctx):
    dim = int(ctx.attributes["dim"])
    axis = ctx.ints([dim])
    parts = [ctx.add("Unsqueeze", [x, axis]) for x in ctx.inputs]
    return ctx.add("Concat", parts, axis=dim)


def flip(ctx):
    dims = [int(d) for d in ctx.attributes["dims"]]
    n = len(dims)
    return ctx.add("Slice", [ctx.inputs[0], ctx.ints([-1] * n), ctx.ints([INT64_MIN] * n),
                             ctx.ints(dims), ctx.ints([-1] * n)])


def repeat(ctx):
    reps = list(ctx.attributes["reps"])
    x = ctx.inputs[0]
    extra = len(reps) - len(ctx.input_shapes[0])
    if extra:
        x = ctx.add("Unsqueeze", [x, ctx.ints(list(range(extra)))])
    return ctx.add("Tile", [x, ctx.ints(reps)])


def roll(ctx):
    a = ctx.attributes
    x, shape = ctx.inputs[0], ctx.input_shapes[0]
    shifts, dims = a["shifts"], a["dims"]
    if dims is None:  # rolled as one flat row, then shaped back
        flat = ctx.add("Reshape", [x, ctx.ints([-1])])
        rolled = _roll_axis(ctx, flat, shifts, math.prod(shape), 0)
        return ctx.add("Reshape", [rolled, ctx.add("Shape", [x])])
    for shift, dim in zip(shifts, dims, strict=True):
        x = _roll_axis(ctx, x, shift, shape[dim], dim)
    return x


def _roll_axis(ctx, x: str, shift: int, size, axis: int) -> str:
    """x rolled by `shift` along `axis` of `size`: its last `shift` entries moved first."""
    if isinstance(size, SymInt):
        raise ctx.fail("roll along a dim that follows the dynamic dims; valid: fixed dims")
    shift %= size
    if shift == 0:
        return x
    cut, axes = ctx.ints([size - shift]), ctx.ints([axis])
    tail = ctx.add("Slice", [x, cut, ctx.ints([INT64_MAX]), axes])
    head = ctx.add("Slice", [x, ctx.ints([0]), cut, axes])
    return ctx.add("Concat", [tail, head], axis=axis)


def triangle(ctx):
    a = ctx.attributes
    k = ctx.constant(np.array(a["diagonal"], np.int64))
    return ctx.add("Trilu", [ctx.inputs[0], k], upper=int(bool(a["upper"])))


def full(ctx):
    a = ctx.attributes
    dtype = np.dtype(a["dtype"])
    value = ctx.helper.make_tensor("value", ctx.helper.np_dtype_to_tensor_dtype(dtype), [1],
                                   [np.array(a["fill_value"], dtype).item()])
    return ctx.add("ConstantOfShape", [ctx.ints(a["shape"])], value=value)


def arange(ctx):
    a = ctx.attributes
    dtype = np.dtype(a["dtype"])
    start, step = (ctx.constant(np.array(v, dtype)) for v in (a["start"], a["step"]))
    size = ctx.ints([a["size"]])
    count = ctx.add("Squeeze", [size if dtype == np.int64 else ctx.cast(size, dtype)])
    limit = ctx.add("Add", [start, ctx.add("Mul", [count, step])])
    return ctx.add("Range", [start, limit, step])


def constantpad(ctx):
    widths = ctx.attributes["widths"]
    pads = [w[0] for w in widths] + [w[1] for w in widths]
    value = ctx.constant(np.array(ctx.attributes["value"], ctx.output_dtype))
    return ctx.add("Pad", [ctx.inputs[0], ctx.ints(pads), value], mode="constant")


def modepad(ctx):
    widths = ctx.attributes["widths"]
    pads = [w[0] for w in widths] + [w[1] for w in widths]
    mode = {"reflect": "reflect", "replicate": "edge", "circular": "wrap"}[ctx.attributes["mode"]]
    if mode == "wrap" and ctx.opset < 19:
        raise ctx.fail("circular padding needs ONNX opset 19 or later (Pad's 'wrap' mode); "
                       "valid: opset_version=19")
    return ctx.add("Pad", [ctx.inputs[0], ctx.ints(pads)], mode=mode)


CONVERTERS = {
    "reshape": reshape, "permute": permute, "expand": expand, "slice": slice_,
    "split": split, "piece": piece, "cat": cat, "stack": stack, "flip": flip,
    "repeat": repeat, "roll": roll, "triangle": triangle, "full": full, "arange": arange,
    "constantpad": constantpad, "modepad": modepad,
}
