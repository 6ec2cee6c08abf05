"""ONNX converters for the elementwise ops, activations, casts, comparisons and
reductions. Each takes a `Context` for one traced node and returns the name of its result."""

from __future__ import annotations

import math

import numpy as np

# ------------------------------------------------------------------ elementwise
_UNARY = {
    "abs": "Abs", "acos": "Acos", "acosh": "Acosh", "asin": "Asin", "asinh": "Asinh",
    "atan": "Atan", "atanh": "Atanh", "ceil": "Ceil", "cos": "Cos", "cosh": "Cosh",
    "erf": "Erf", "exp": "Exp", "floor": "Floor", "log": "Log", "neg": "Neg",
    "reciprocal": "Reciprocal", "relu": "Relu", "sigmoid": "Sigmoid", "sign": "Sign",
    "sin": "Sin", "sinh": "Sinh", "sqrt": "Sqrt", "tan": "Tan", "tanh": "Tanh",
    "hardswish": "HardSwish", "clone": "Identity",
}
_BINARY = {"add": "Add", "sub": "Sub", "mul": "Mul", "div": "Div", "pow": "Pow",
           "maximum": "Max", "minimum": "Min", "fmax": "Max", "fmin": "Min"}


def _same_type_inputs(ctx) -> list:
    """The node's inputs, each cast to the output dtype where it differs."""
    out = ctx.output_dtype
    return [name if dtype == out else ctx.cast(name, out)
            for name, dtype in zip(ctx.inputs, ctx.input_dtypes, strict=True)]


def _unary(op_type):
    def convert(ctx):
        return ctx.add(op_type, ctx.inputs)

    return convert


def _binary(op_type):
    def convert(ctx):
        return ctx.add(op_type, _same_type_inputs(ctx))

    return convert


def _scalar(ctx, value, like=None) -> str:
    return ctx.constant(np.array(value, dtype=like or ctx.output_dtype))


def _trunc(ctx, x):
    return ctx.add("Mul", [ctx.add("Sign", [x]), ctx.add("Floor", [ctx.add("Abs", [x])])])


def rsqrt(ctx):
    return ctx.add("Reciprocal", [ctx.add("Sqrt", ctx.inputs)])


def expm1(ctx):
    return ctx.add("Sub", [ctx.add("Exp", ctx.inputs), _scalar(ctx, 1)])


def log1p(ctx):
    return ctx.add("Log", [ctx.add("Add", [ctx.inputs[0], _scalar(ctx, 1)])])


def _log_base(base):
    def convert(ctx):
        return ctx.add("Div", [ctx.add("Log", ctx.inputs), _scalar(ctx, math.log(base))])

    return convert


def exp2(ctx):
    return ctx.add("Exp", [ctx.add("Mul", [ctx.inputs[0], _scalar(ctx, math.log(2))])])


def erfc(ctx):
    return ctx.add("Sub", [_scalar(ctx, 1), ctx.add("Erf", ctx.inputs)])


def logsigmoid(ctx):
    return ctx.add("Neg", [ctx.add("Softplus", [ctx.add("Neg", ctx.inputs)])])


def trunc(ctx):
    return _trunc(ctx, ctx.inputs[0])


def frac(ctx):
    x = ctx.inputs[0]
    return ctx.add("Sub", [x, _trunc(ctx, x)])


def round_(ctx):
    decimals = ctx.attributes["decimals"]
    x = ctx.inputs[0]
    if ctx.output_dtype.kind != "f":
        return ctx.add("Identity", [x])
    if decimals == 0:
        return ctx.add("Round", [x])
    scale = _scalar(ctx, 10.0 ** decimals)
    return ctx.add("Div", [ctx.add("Round", [ctx.add("Mul", [x, scale])]), scale])


def powscalar(ctx):
    return ctx.add("Pow", [ctx.inputs[0], _scalar(ctx, ctx.attributes["exponent"])])


def fmod(ctx):
    return ctx.add("Mod", _same_type_inputs(ctx), fmod=1)


def remainder(ctx):
    a, b = _same_type_inputs(ctx)
    if ctx.output_dtype.kind != "f":
        return ctx.add("Mod", [a, b], fmod=0)
    floor = ctx.add("Floor", [ctx.add("Div", [a, b])])
    return ctx.add("Sub", [a, ctx.add("Mul", [floor, b])])


def roundeddiv(ctx):
    a, b = _same_type_inputs(ctx)
    mode = ctx.attributes["mode"]
    if ctx.output_dtype.kind == "f":
        q = ctx.add("Div", [a, b])
        return ctx.add("Floor", [q]) if mode == "floor" else _trunc(ctx, q)
    if mode == "trunc":
        return ctx.add("Div", [a, b])  # ONNX's integer Div truncates
    return ctx.add("Div", [ctx.add("Sub", [a, ctx.add("Mod", [a, b], fmod=0)]), b])


def clamp(ctx):
    a = ctx.attributes
    bounds = ["" if v is None else _scalar(ctx, v) for v in (a["lo"], a["hi"])]
    return ctx.add("Clip", [ctx.inputs[0], *bounds])


def where(ctx):
    cond, a, b = ctx.inputs
    if ctx.input_dtypes[0] != np.bool_:
        cond = ctx.cast(cond, np.bool_)
    out = ctx.output_dtype
    a, b = (n if d == out else ctx.cast(n, out) for n, d in zip((a, b), ctx.input_dtypes[1:]))
    return ctx.add("Where", [cond, a, b])


def cast(ctx):
    return ctx.cast(ctx.inputs[0], ctx.output_dtype)


# ----------------------------------------------------------------- activations
_SQRT_2_OVER_PI = math.sqrt(2 / math.pi)


def gelu(ctx):
    x = ctx.inputs[0]
    if ctx.attributes["approximate"] == "tanh":
        half_x = ctx.add("Mul", [x, _scalar(ctx, 0.5)])
        cube = ctx.add("Mul", [ctx.add("Mul", [x, x]), x])
        inner = ctx.add("Add", [x, ctx.add("Mul", [cube, _scalar(ctx, 0.044715)])])
        t = ctx.add("Tanh", [ctx.add("Mul", [inner, _scalar(ctx, _SQRT_2_OVER_PI)])])
        return ctx.add("Mul", [half_x, ctx.add("Add", [t, _scalar(ctx, 1)])])
    # x * (1 + erf(x / sqrt 2)) * 0.5 in this order, the pattern ONNX Runtime fuses into one
    # Gelu (or BiasGelu) kernel; a product by 1/sqrt 2 is not matched
    t = ctx.add("Erf", [ctx.add("Div", [x, _scalar(ctx, math.sqrt(2))])])
    return ctx.add("Mul", [ctx.add("Mul", [x, ctx.add("Add", [t, _scalar(ctx, 1)])]),
                           _scalar(ctx, 0.5)])


def silu(ctx):
    x = ctx.inputs[0]
    return ctx.add("Mul", [x, ctx.add("Sigmoid", [x])])


def mish(ctx):
    x = ctx.inputs[0]
    return ctx.add("Mul", [x, ctx.add("Tanh", [ctx.add("Softplus", [x])])])


def leakyrelu(ctx):
    return ctx.add("LeakyRelu", ctx.inputs, alpha=float(ctx.attributes["slope"]))


def elu(ctx):
    a = ctx.attributes
    alpha, scale, input_scale = a["alpha"], a["scale"], a["input_scale"]
    x = ctx.inputs[0]
    if input_scale == 1 and scale == 1:
        return ctx.add("Elu", [x], alpha=float(alpha))
    if input_scale == 1:
        return ctx.add("Selu", [x], alpha=float(alpha), gamma=float(scale))
    # celu and other scalings: scale * (x > 0 ? x : alpha * (exp(input_scale * x) - 1))
    neg = ctx.add("Mul", [ctx.add("Sub", [ctx.add("Exp", [ctx.add(
        "Mul", [ctx.add("Min", [x, _scalar(ctx, 0)]), _scalar(ctx, input_scale)])]),
        _scalar(ctx, 1)]), _scalar(ctx, alpha * scale)])
    pos = ctx.add("Mul", [x, _scalar(ctx, scale)])
    return ctx.add("Where", [ctx.add("Greater", [x, _scalar(ctx, 0)]), pos, neg])


def hardtanh(ctx):
    a = ctx.attributes
    return ctx.add("Clip", [ctx.inputs[0], _scalar(ctx, a["lo"]), _scalar(ctx, a["hi"])])


def hardsigmoid(ctx):
    return ctx.add("HardSigmoid", ctx.inputs, alpha=1 / 6, beta=0.5)


def softplus(ctx):
    a = ctx.attributes
    x = ctx.inputs[0]
    bx = ctx.add("Mul", [x, _scalar(ctx, a["beta"])])
    soft = ctx.add("Div", [ctx.add("Softplus", [bx]), _scalar(ctx, a["beta"])])
    return ctx.add("Where", [ctx.add("Greater", [bx, _scalar(ctx, a["threshold"])]), x, soft])


def softmax(ctx):
    return ctx.add("Softmax", ctx.inputs, axis=ctx.attributes["dim"])


def logsoftmax(ctx):
    return ctx.add("LogSoftmax", ctx.inputs, axis=ctx.attributes["dim"])


def dropout(ctx):
    raise ctx.fail("dropout in training mode draws a new mask each call; export the model in "
                   "eval mode (model.eval()), where dropout is the identity")


# ------------------------------------------------------------------ comparisons
_COMPARE = {"eq": "Equal", "lt": "Less", "le": "LessOrEqual", "gt": "Greater",
            "ge": "GreaterOrEqual"}
_LOGICAL = {"logical_and": "And", "logical_or": "Or", "logical_xor": "Xor"}
_BITWISE = {"bitwise_and": ("And", "BitwiseAnd"), "bitwise_or": ("Or", "BitwiseOr"),
            "bitwise_xor": ("Xor", "BitwiseXor")}


def _operands(ctx) -> tuple:
    """input and other (a Tensor or a number) as ONNX names of one common dtype."""
    named, dtypes = ctx.named_inputs(), ctx.named_dtypes()
    x, dx = named["input"], dtypes["input"]
    if "other" in named:
        y, dy = named["other"], dtypes["other"]
        common = np.result_type(dx, dy)
    else:
        value = ctx.attributes["other"]
        kind = "f" if isinstance(value, float) else "b" if isinstance(value, bool) else "i"
        common = dx if kind in "bi" or dx.kind == "f" else np.dtype(np.float32)
        y, dy = ctx.constant(np.array(value, dtype=common)), common
    x = x if dx == common else ctx.cast(x, common)
    y = y if dy == common else ctx.cast(y, common)
    return x, y, common


def _compare(op_type, negate=False):
    def convert(ctx):
        x, y, _ = _operands(ctx)
        out = ctx.add(op_type, [x, y])
        return ctx.add("Not", [out]) if negate else out

    return convert


def _logical(op_type):
    def convert(ctx):
        x, y, dtype = _operands(ctx)
        if dtype != np.bool_:
            x, y = ctx.cast(x, np.bool_), ctx.cast(y, np.bool_)
        return ctx.add(op_type, [x, y])

    return convert


def _bitwise(pair):
    def convert(ctx):
        x, y, dtype = _operands(ctx)
        return ctx.add(pair[0] if dtype == np.bool_ else pair[1], [x, y])

    return convert


def logical_not(ctx):
    x = ctx.inputs[0]
    return ctx.add("Not", [x if ctx.input_dtypes[0] == np.bool_ else ctx.cast(x, np.bool_)])


def bitwise_not(ctx):
    return ctx.add("Not" if ctx.input_dtypes[0] == np.bool_ else "BitwiseNot", ctx.inputs)


def isnan(ctx):
    return ctx.add("IsNaN", ctx.inputs)


def isinf(ctx):
    return ctx.add("IsInf", ctx.inputs)


def isfinite(ctx):
    x = ctx.inputs[0]
    return ctx.add("Not", [ctx.add("Or", [ctx.add("IsNaN", [x]), ctx.add("IsInf", [x])])])


# ------------------------------------------------------------------- reductions
def reduce(ctx, op_type: str, x: str, axes, keepdims: bool) -> str:
    """An ONNX Reduce* over `axes` (None: all), with axes as an input where the opset says."""
    as_input = op_type == "ReduceSum" or ctx.opset >= 18
    if axes is None:
        return ctx.add(op_type, [x], keepdims=int(keepdims))
    axes = [int(a) for a in axes]
    if as_input:
        return ctx.add(op_type, [x, ctx.constant(np.array(axes, np.int64))],
                       keepdims=int(keepdims))
    return ctx.add(op_type, [x], axes=axes, keepdims=int(keepdims))


def _accumulated(ctx) -> str:
    """The input, cast first when the op accumulates in another dtype (float16 sums)."""
    x, dtype = ctx.inputs[0], ctx.input_dtypes[0]
    return x if dtype == ctx.output_dtype else ctx.cast(x, ctx.output_dtype)


def _reduction(op_type):
    def convert(ctx):
        a = ctx.attributes
        return reduce(ctx, op_type, _accumulated(ctx), a["dims"], a["keepdim"])

    return convert


def prod(ctx):
    a = ctx.attributes
    dims = None if a["dim"] is None else [a["dim"]]
    return reduce(ctx, "ReduceProd", _accumulated(ctx), dims, a["keepdim"])


def tieshare(ctx):
    a = ctx.attributes
    kernel = getattr(a["kernel"], "__name__", "")
    op_type = {"_amax_kernel": "ReduceMax", "_amin_kernel": "ReduceMin"}.get(kernel)
    if op_type is None:
        raise ctx.fail(f"the reduction {kernel.strip('_')} has no ONNX counterpart; valid: "
                       "amax, amin, max, min")
    return reduce(ctx, op_type, ctx.inputs[0], a["dims"], a["keepdim"])


def var(ctx):
    a = ctx.attributes
    x = _accumulated(ctx)
    dims, shape = a["dims"], ctx.input_shapes[0]
    mean = reduce(ctx, "ReduceMean", x, dims, True)
    centered = ctx.add("Sub", [x, mean])
    total = reduce(ctx, "ReduceSum", ctx.add("Mul", [centered, centered]), dims, a["keepdim"])
    sizes = [shape[d] for d in (range(len(shape)) if dims is None else dims)]
    if all(isinstance(n, int) for n in sizes):
        return ctx.add("Div", [total, _scalar(ctx, max(math.prod(sizes) - a["correction"], 0))])
    count = ctx.add("ReduceProd", [ctx.ints(sizes)], keepdims=0)
    count = ctx.add("Sub", [ctx.cast(count, ctx.output_dtype), _scalar(ctx, a["correction"])])
    return ctx.add("Div", [total, ctx.add("Relu", [count])])


def vectornorm(ctx):
    a = ctx.attributes
    op_type = {1: "ReduceL1", 2: "ReduceL2"}.get(a["ord"])
    if op_type is None:
        raise ctx.fail(f"vector norm of order {a['ord']}; valid: 1, 2")
    return reduce(ctx, op_type, _accumulated(ctx), a["dims"], a["keepdim"])


def logsumexp(ctx):
    a = ctx.attributes
    return reduce(ctx, "ReduceLogSumExp", _accumulated(ctx), a["dims"], a["keepdim"])


def cumsum(ctx):
    a = ctx.attributes
    axis = ctx.constant(np.array(a["dim"], np.int64))
    return ctx.add("CumSum", [_accumulated(ctx), axis], reverse=int(bool(a["reverse"])))


def _arg(op_type):
    def convert(ctx):
        a = ctx.attributes
        x = ctx.inputs[0]
        if a["dim"] is None:
            flat = ctx.add("Reshape", [x, ctx.constant(np.array([-1], np.int64))])
            out = ctx.add(op_type, [flat], axis=0, keepdims=0)
            if a["keepdim"]:
                ones = [1] * len(ctx.input_shapes[0])
                out = ctx.add("Reshape", [out, ctx.constant(np.array(ones, np.int64))])
            return out
        return ctx.add(op_type, [x], axis=a["dim"], keepdims=int(bool(a["keepdim"])))

    return convert


CONVERTERS = {
    **{op: _unary(t) for op, t in _UNARY.items()},
    **{op: _binary(t) for op, t in _BINARY.items()},
    "rsqrt": rsqrt, "expm1": expm1, "log1p": log1p, "log2": _log_base(2),
    "log10": _log_base(10), "exp2": exp2, "erfc": erfc, "logsigmoid": logsigmoid,
    "trunc": trunc, "frac": frac, "round": round_, "powscalar": powscalar, "fmod": fmod,
    "remainder": remainder, "roundeddiv": roundeddiv, "clamp": clamp, "where": where,
    "cast": cast, "autocastcast": cast, "gelu": gelu, "silu": silu, "mish": mish,
    "leakyrelu": leakyrelu, "elu": elu, "hardtanh": hardtanh, "hardsigmoid": hardsigmoid,
    "softplus": softplus, "softmax": softmax, "logsoftmax": logsoftmax, "dropout": dropout,
    **{op: _compare(t) for op, t in _COMPARE.items()}, "ne": _compare("Equal", negate=True),
    **{op: _logical(t) for op, t in _LOGICAL.items()},
    **{op: _bitwise(t) for op, t in _BITWISE.items()},
    "logical_not": logical_not, "bitwise_not": bitwise_not, "isnan": isnan, "isinf": isinf,
    "isfinite": isfinite,
    "sum": _reduction("ReduceSum"), "mean": _reduction("ReduceMean"), "prod": prod,
    "tieshare": tieshare, "var": var, "vectornorm": vectornorm, "logsumexp": logsumexp,
    "cumsum": cumsum, "argmax": _arg("ArgMax"), "argmin": _arg("ArgMin"),
}
