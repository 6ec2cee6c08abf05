"""ONNX converters for the layer ops: linear maps and matmul, convolutions, pooling, the
norms, attention, embedding and the recurrent layers (as ONNX's LSTM, GRU and RNN nodes)."""

from __future__ import annotations

import math
import numbers

import numpy as np

from ..export.symbolic import SymInt
from .ops_math import reduce


# ------------------------------------------------------------------ linear maps
def linear(ctx):
    x, w, *bias = ctx.inputs
    if len(ctx.input_shapes[0]) == 2:
        return ctx.add("Gemm", [x, w, *bias], transB=1)
    out = ctx.add("MatMul", [x, ctx.add("Transpose", [w], perm=[1, 0])])
    return ctx.add("Add", [out, bias[0]]) if bias else out


def matmul(ctx):
    return ctx.add("MatMul", ctx.inputs)


def einsum(ctx):
    return ctx.add("Einsum", ctx.inputs, equation=ctx.attributes["subs"])


# ----------------------------------------------------------------- convolutions
def _window_attributes(ctx) -> dict:
    window = ctx.node.attributes["window"]
    return {"strides": list(window.stride), "dilations": list(window.dilation),
            "pads": [p[0] for p in window.pads] + [p[1] for p in window.pads],
            "group": int(ctx.attributes["groups"])}


def conv(ctx):
    kernel = list(ctx.input_shapes[1][2:])
    return ctx.add("Conv", ctx.inputs, kernel_shape=kernel, **_window_attributes(ctx))


def convtranspose(ctx):
    window = ctx.node.attributes["window"]
    kernel = list(ctx.input_shapes[1][2:])
    # the output size a transposed convolution of these pads would give, short by torch's
    # output_padding
    extra = [size - ((n - 1) * s - lo - hi + d * (k - 1) + 1) for size, n, s, (lo, hi), d, k in
             zip(window.size, window.grid, window.stride, window.pads, window.dilation, kernel,
                 strict=True)]
    return ctx.add("ConvTranspose", ctx.inputs, kernel_shape=kernel, output_padding=extra,
                   **_window_attributes(ctx))


# ---------------------------------------------------------------------- pooling
def _ints(value, d: int, default=None) -> list:
    if value is None:
        value = default
    if isinstance(value, numbers.Integral):
        return [int(value)] * d
    return [int(v) for v in value]


def _batched(ctx, d: int, emit):
    """Run `emit(x)` on a batched input: an unbatched (C, *spatial) one gets a batch of one."""
    x = ctx.named_inputs()["input"]
    unbatched = len(ctx.named_shapes()["input"]) == d + 1
    if unbatched:
        x = ctx.add("Unsqueeze", [x, ctx.ints([0])])
    out = emit(x)
    return ctx.add("Squeeze", [out, ctx.ints([0])]) if unbatched else out


def _pool_dims(ctx) -> int:
    return int(ctx.node.op[-2])


def max_pool(ctx):
    a, d = ctx.attributes, _pool_dims(ctx)
    if a["return_indices"]:
        raise ctx.fail("return_indices=True; valid: export the values alone")
    kernel = _ints(a["kernel_size"], d)
    stride = _ints(a["stride"], d, kernel)
    padding = _ints(a["padding"], d)
    return _batched(ctx, d, lambda x: ctx.add(
        "MaxPool", [x], kernel_shape=kernel, strides=stride, pads=padding * 2,
        dilations=_ints(a["dilation"], d), ceil_mode=int(bool(a["ceil_mode"]))))


def avg_pool(ctx):
    a, d = ctx.attributes, _pool_dims(ctx)
    if a.get("divisor_override") is not None:
        raise ctx.fail("divisor_override has no ONNX counterpart; valid: None")
    kernel = _ints(a["kernel_size"], d)
    stride = _ints(a["stride"], d, kernel)
    padding = _ints(a["padding"], d)
    return _batched(ctx, d, lambda x: ctx.add(
        "AveragePool", [x], kernel_shape=kernel, strides=stride, pads=padding * 2,
        ceil_mode=int(bool(a["ceil_mode"])),
        count_include_pad=int(bool(a["count_include_pad"]))))


def lp_pool(ctx):
    a, d = ctx.attributes, _pool_dims(ctx)
    if a["ceil_mode"]:
        raise ctx.fail("ceil_mode=True; valid: False")
    kernel = _ints(a["kernel_size"], d)
    return _batched(ctx, d, lambda x: ctx.add(
        "LpPool", [x], kernel_shape=kernel, strides=_ints(a["stride"], d, kernel),
        p=int(a["norm_type"])))


def _adaptive(kind):
    def convert(ctx):
        d = _pool_dims(ctx)
        if ctx.attributes.get("return_indices"):
            raise ctx.fail("return_indices=True; valid: export the values alone")
        spatial = ctx.named_shapes()["input"][-d:]
        size = ctx.attributes["output_size"]
        sizes = [size] * d if size is None or isinstance(size, numbers.Integral) else \
            list(size) * (d if len(size) == 1 else 1)
        sizes = [n if s is None else s for s, n in zip(sizes, spatial, strict=True)]
        if all(s == 1 for s in sizes):
            return _batched(ctx, d, lambda x: ctx.add(f"Global{kind}Pool", [x]))
        if any(isinstance(n, SymInt) or n % s for n, s in zip(spatial, sizes, strict=True)):
            raise ctx.fail(f"adaptive pooling of size {tuple(spatial)} to {tuple(sizes)} has "
                           "windows of different sizes, which ONNX pooling cannot express; "
                           "valid: output sizes that divide fixed input sizes, or 1")
        kernel = [n // s for n, s in zip(spatial, sizes, strict=True)]
        return _batched(ctx, d, lambda x: ctx.add(f"{kind}Pool", [x], kernel_shape=kernel,
                                                 strides=kernel))

    return convert


# ------------------------------------------------------------------------ norms
def _affine(ctx, out: str, weight, bias, channels_axis: int, rank: int) -> str:
    """out * weight + bias, the (C,) parameters broadcast along `channels_axis`."""
    shape = [1] * rank
    shape[channels_axis] = -1
    for name, op_type in ((weight, "Mul"), (bias, "Add")):
        if name is not None:
            out = ctx.add(op_type, [out, ctx.add("Reshape", [name, ctx.ints(shape)])])
    return out


def _standardize(ctx, x: str, axes: list, eps: float) -> str:
    """(x - mean) / sqrt(var + eps) over `axes`, the biased variance."""
    mean = reduce(ctx, "ReduceMean", x, axes, True)
    centered = ctx.add("Sub", [x, mean])
    var = reduce(ctx, "ReduceMean", ctx.add("Mul", [centered, centered]), axes, True)
    eps_name = ctx.constant(np.array(eps, ctx.output_dtype))
    return ctx.add("Div", [centered, ctx.add("Sqrt", [ctx.add("Add", [var, eps_name])])])


def _ones_or(ctx, name, channels: int, value: float):
    return name if name is not None else ctx.constant(np.full(channels, value, ctx.output_dtype))


def batch_norm(ctx):
    a, named = ctx.attributes, ctx.named_inputs()
    shape = ctx.named_shapes()["input"]
    rank, channels = len(shape), shape[1]
    if a["training"]:
        out = _standardize(ctx, named["input"], [0] + list(range(2, rank)), a["eps"])
        return _affine(ctx, out, named.get("weight"), named.get("bias"), 1, rank)
    if "running_mean" not in named or "running_var" not in named:
        raise ctx.fail("eval-mode batch norm without running statistics")
    scale = _ones_or(ctx, named.get("weight"), channels, 1.0)
    bias = _ones_or(ctx, named.get("bias"), channels, 0.0)
    return ctx.add("BatchNormalization", [named["input"], scale, bias, named["running_mean"],
                                          named["running_var"]], epsilon=float(a["eps"]))


def layer_norm(ctx):
    a, named = ctx.attributes, ctx.named_inputs()
    shape = a["normalized_shape"]
    k = 1 if isinstance(shape, numbers.Integral) else len(shape)
    weight = named.get("weight")
    if weight is None:
        weight = ctx.constant(np.ones(ctx.named_shapes()["input"][-k:], ctx.output_dtype))
    inputs = [named["input"], weight] + ([named["bias"]] if "bias" in named else [])
    return ctx.add("LayerNormalization", inputs, axis=-k, epsilon=float(a["eps"]))


def group_norm(ctx):
    a, named = ctx.attributes, ctx.named_inputs()
    shape = ctx.named_shapes()["input"]
    x = named["input"]
    grouped = ctx.add("Reshape", [x, ctx.ints([0, int(a["num_groups"]), -1])])
    out = _standardize(ctx, grouped, [2], a["eps"])
    out = ctx.add("Reshape", [out, ctx.add("Shape", [x])])
    return _affine(ctx, out, named.get("weight"), named.get("bias"), 1, len(shape))


def instance_norm(ctx):
    a, named = ctx.attributes, ctx.named_inputs()
    shape = ctx.named_shapes()["input"]
    rank, channels = len(shape), shape[1]
    if not a["use_input_stats"]:
        scale = _ones_or(ctx, named.get("weight"), channels, 1.0)
        bias = _ones_or(ctx, named.get("bias"), channels, 0.0)
        return ctx.add("BatchNormalization", [named["input"], scale, bias,
                                              named["running_mean"], named["running_var"]],
                       epsilon=float(a["eps"]))
    out = _standardize(ctx, named["input"], list(range(2, rank)), a["eps"])
    return _affine(ctx, out, named.get("weight"), named.get("bias"), 1, rank)


# -------------------------------------------------------------------- attention
def scaled_dot_product_attention(ctx):
    a, named, shapes = ctx.attributes, ctx.named_inputs(), ctx.named_shapes()
    if a["dropout_p"]:
        raise ctx.fail(f"attention dropout (dropout_p={a['dropout_p']}) draws a new mask each "
                       "call; export in eval mode, where it is 0")
    q, k, v = named["query"], named["key"], named["value"]
    q_shape, k_shape = shapes["query"], shapes["key"]
    rank = len(q_shape)
    dtype = ctx.output_dtype
    if a["enable_gqa"] and q_shape[-3] != k_shape[-3]:
        k, v = (_repeat_heads(ctx, t, shapes[n], q_shape[-3] // k_shape[-3])
                for t, n in ((k, "key"), (v, "value")))
    scale = a["scale"] if a["scale"] is not None else 1 / math.sqrt(q_shape[-1])
    perm = list(range(rank - 2)) + [rank - 1, rank - 2]
    scores = ctx.add("MatMul", [q, ctx.add("Transpose", [k], perm=perm)])
    scores = ctx.add("Mul", [scores, ctx.constant(np.array(scale, dtype))])
    zero, minus_inf = ctx.constant(np.array(0, dtype)), ctx.constant(np.array(-np.inf, dtype))
    if a["is_causal"]:
        length, source = q_shape[-2], k_shape[-2]
        ones = ctx.add("ConstantOfShape", [ctx.ints([length, source])],
                       value=ctx.helper.make_tensor("value", 1, [1], [1.0]))
        allowed = ctx.cast(ctx.add("Trilu", [ones], upper=0), np.bool_)
        scores = ctx.add("Add", [scores, ctx.add("Where", [allowed, zero, minus_inf])])
    if "attn_mask" in named:
        mask, mask_dtype = named["attn_mask"], ctx.named_dtypes()["attn_mask"]
        if mask_dtype == np.bool_:
            mask = ctx.add("Where", [mask, zero, minus_inf])
        elif mask_dtype != dtype:
            mask = ctx.cast(mask, dtype)
        scores = ctx.add("Add", [scores, mask])
    probs = ctx.add("Softmax", [scores], axis=-1)
    if "attn_mask" in named:  # rows masked out entirely give zeros, as in dl.free, not NaN
        probs = ctx.add("Where", [ctx.add("IsNaN", [probs]), zero, probs])
    return ctx.add("MatMul", [probs, v])


def _repeat_heads(ctx, t: str, shape: tuple, groups: int) -> str:
    """(..., H, S, E) -> (..., H * groups, S, E), each head repeated `groups` times."""
    lead, heads, rest = list(shape[:-3]), shape[-3], list(shape[-2:])
    grown = ctx.add("Unsqueeze", [t, ctx.ints([len(shape) - 2])])
    grown = ctx.add("Expand", [grown, ctx.ints(lead + [heads, groups] + rest)])
    merged = SymInt(heads.coeff * groups, heads.dims, heads.offset * groups) \
        if isinstance(heads, SymInt) else heads * groups
    return ctx.add("Reshape", [grown, ctx.ints(lead + [merged] + rest)])


def embedding(ctx):
    a, named = ctx.attributes, ctx.named_inputs()
    if a["max_norm"] is not None:
        raise ctx.fail("max_norm renormalizes the weight in place on each call; valid: None")
    ids = named["input"]
    if ctx.named_dtypes()["input"] not in (np.int32, np.int64):
        ids = ctx.cast(ids, np.int64)
    return ctx.add("Gather", [named["weight"], ids], axis=0)


# ------------------------------------------------------------------- recurrence
_GATE_ORDER = {"LSTM": [0, 3, 1, 2], "GRU": [1, 0, 2], "RNN_TANH": [0], "RNN_RELU": [0]}


def _gates(array, mode: str):
    """Rows of a (G, ...) weight or (G,) bias from torch's gate order to ONNX's."""
    blocks = np.split(np.asarray(array), len(_GATE_ORDER[mode]), axis=0)
    return np.concatenate([blocks[i] for i in _GATE_ORDER[mode]], axis=0)


def recurrence(ctx):
    a = ctx.attributes
    mode = a["mode"]
    if a["proj"]:
        raise ctx.fail("an LSTM with proj_size has no ONNX LSTM counterpart; valid: "
                       "proj_size=0")
    node, graph = ctx.node, ctx.graph
    xs_name, hh_name, h0_name, *rest = node.inputs
    w_hh = ctx.value(hh_name)
    if w_hh is None:
        raise ctx.fail("the hidden-to-hidden weight is computed in the graph; valid: a "
                       "parameter")
    w_hh = np.asarray(ctx.constant_input(1))
    gates, hidden = w_hh.shape
    c0 = ctx.names[rest.pop(0)] if mode == "LSTM" else None
    b_hh = ctx.constant_input(len(node.inputs) - len(rest)) if a["bias"] else None
    # the input projection: fused into the node when it is a linear of constants
    producer = next((n for n in graph.nodes if n.output == xs_name), None)
    weights = None
    if producer is not None and producer.op == "linear" and \
            all(ctx.value(i) is not None for i in producer.inputs[1:]):
        w_ih = np.asarray(ctx.value(producer.inputs[1]))
        b_ih = np.asarray(ctx.value(producer.inputs[2])) if len(producer.inputs) > 2 else None
        x = ctx.names[producer.inputs[0]]
        weights = w_ih
    if weights is None:
        x, weights, b_ih = ctx.names[xs_name], np.eye(gates, dtype=w_hh.dtype), None
    dtype = w_hh.dtype
    zeros = np.zeros(gates, dtype)
    bias = np.concatenate([_gates(zeros if b_ih is None else b_ih, mode),
                           _gates(zeros if b_hh is None else np.asarray(b_hh), mode)])
    inputs = [x, ctx.constant(_gates(weights, mode)[None]), ctx.constant(_gates(w_hh, mode)[None]),
              ctx.constant(bias[None]), "", ctx.add("Unsqueeze", [ctx.names[h0_name],
                                                                  ctx.ints([0])])]
    attributes = {"hidden_size": int(hidden),
                  "direction": "reverse" if a["reverse"] else "forward"}
    if mode == "LSTM":
        inputs.append(ctx.add("Unsqueeze", [c0, ctx.ints([0])]))
        y, _, y_c = ctx.add("LSTM", inputs, outputs=3, **attributes)
    elif mode == "GRU":
        y = ctx.add("GRU", inputs, outputs=2, linear_before_reset=1, **attributes)[0]
    else:
        y = ctx.add("RNN", inputs, outputs=2, activations=["Tanh" if mode == "RNN_TANH"
                                                           else "Relu"], **attributes)[0]
    hs = ctx.add("Squeeze", [y, ctx.ints([1])])
    if mode != "LSTM":
        return hs
    _check_cell_readers(ctx, hidden)
    # ONNX's LSTM gives the last cell state only: every step holds it, and the readers
    # (checked above) take the hidden states or the last step's cell state
    cells = ctx.add("Expand", [y_c, ctx.add("Shape", [hs])])
    return ctx.add("Concat", [hs, cells], axis=-1)


def _check_cell_readers(ctx, hidden: int) -> None:
    """Refuse a graph that reads an LSTM's cell state at any step but the last."""
    node, graph = ctx.node, ctx.graph
    last = 0 if ctx.attributes["reverse"] else -1
    length = graph.shapes[node.output][0]
    for reader in graph.nodes:
        if node.output not in reader.inputs:
            continue
        key = reader.attributes.get("key") if reader.op == "slice" else None
        if key is None:
            raise ctx.fail(f"its output is read by op {reader.op}; the ONNX LSTM gives every "
                           "step's hidden state and the last cell state, read by slicing")
        channels = key[2] if len(key) > 2 and key[2] is not Ellipsis else slice(None)
        hidden_only = isinstance(channels, slice) and channels.stop is not None and \
            channels.stop <= hidden and (channels.start or 0) >= 0
        step = key[0]
        final = isinstance(step, int) and (step == last or step == (
            length - 1 if isinstance(length, int) and last == -1 else None))
        if not hidden_only and not final:
            raise ctx.fail("the graph reads the LSTM's cell state before the last step, "
                           "which ONNX's LSTM does not give")


CONVERTERS = {
    "linear": linear, "matmul": matmul, "einsum": einsum, "conv": conv,
    "convtranspose": convtranspose,
    **{f"max_pool{d}d": max_pool for d in (1, 2, 3)},
    **{f"avg_pool{d}d": avg_pool for d in (1, 2, 3)},
    **{f"lp_pool{d}d": lp_pool for d in (1, 2, 3)},
    **{f"adaptive_avg_pool{d}d": _adaptive("Average") for d in (1, 2, 3)},
    **{f"adaptive_max_pool{d}d": _adaptive("Max") for d in (1, 2, 3)},
    "batch_norm": batch_norm, "layer_norm": layer_norm, "group_norm": group_norm,
    "instance_norm": instance_norm,
    "scaled_dot_product_attention": scaled_dot_product_attention, "embedding": embedding,
    "recurrence": recurrence,
}
