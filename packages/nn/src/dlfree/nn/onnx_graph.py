"""`OnnxGraph`: an ONNX model as a dl.free module, so that a model that exists only as ONNX
can be run and fine-tuned. Its float initializers are Parameters (by their ONNX names, dots
as underscores), the others buffers; `forward` runs the nodes with dl.free's differentiable
ops. `dlfree.onnx.load(path)` makes one; an op outside the supported subset is refused by
name when the module is built, not when it first runs."""

from __future__ import annotations

import math

import dlfree as dl
from dlfree import functional as F
from dlfree.dtypes import from_np
from dlfree.errors import CheckpointError, ExportError
from dlfree.ops.recurrent import recurrence

import numpy as np

from .module import Module, Parameter


def _attrs(node) -> dict:
    from onnx import helper

    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _ints(t) -> list:
    return [int(v) for v in np.asarray(t.detach().numpy() if isinstance(t, dl.Tensor) else t)
            .reshape(-1)]


def _optional(inputs, k: int, default=None):
    """Input k of a node, or `default` where it is omitted (absent or named "")."""
    return inputs[k] if len(inputs) > k and inputs[k] is not None else default


def _axes(inputs, attrs, at: int):
    """Reduce/squeeze axes: the attribute (older opsets) or input `at` (newer)."""
    if "axes" in attrs:
        return [int(a) for a in attrs["axes"]]
    at_input = _optional(inputs, at)
    return None if at_input is None else _ints(at_input)


def _reduce(fn):
    def run(inputs, attrs):
        axes = _axes(inputs, attrs, 1)
        keep = bool(attrs.get("keepdims", 1))
        x = inputs[0]
        if axes is None:
            axes = list(range(x.ndim))
        return fn(x, tuple(axes), keep)

    return run


def _slice(inputs, attrs):
    x = inputs[0]
    starts, ends = _ints(inputs[1]), _ints(inputs[2])
    axes = _ints(_optional(inputs, 3, range(len(starts))))
    steps = _ints(_optional(inputs, 4, [1] * len(starts)))
    key = [slice(None)] * x.ndim
    for s, e, a, st in zip(starts, ends, axes, steps, strict=True):
        n = x.shape[a]
        if st < 0:
            if st != -1 or s not in (-1, n - 1) or e > -n - 1:
                raise ExportError("onnx.load: Slice with a negative step is supported as a "
                                  "full reversal (flip) only")
            x = x.flip(a)
            continue
        key[a] = slice(max(-n, min(s, n)), max(-n, min(e, n)), st)
    return x[tuple(key)]


def _conv(inputs, attrs):
    x, w = inputs[0], inputs[1]
    d = w.ndim - 2
    pads = list(attrs.get("pads", [0] * 2 * d))
    before, after = pads[:d], pads[d:]
    if before != after:
        widths = []
        for lo, hi in zip(reversed(before), reversed(after), strict=True):
            widths += [lo, hi]
        x, before = F.pad(x, widths), [0] * d
    conv = (F.conv1d, F.conv2d, F.conv3d)[d - 1]
    return conv(x, w, _optional(inputs, 2),
                stride=tuple(attrs.get("strides", [1] * d)), padding=tuple(before),
                dilation=tuple(attrs.get("dilations", [1] * d)), groups=attrs.get("group", 1))


def _pool(kind):
    def run(inputs, attrs):
        x = inputs[0]
        kernel = list(attrs["kernel_shape"])
        d = len(kernel)
        pads = list(attrs.get("pads", [0] * 2 * d))
        if pads[:d] != pads[d:]:
            raise ExportError(f"onnx.load: {kind} pooling with asymmetric pads is not "
                              "supported")
        stride = list(attrs.get("strides", [1] * d))
        ceil = bool(attrs.get("ceil_mode", 0))
        if kind == "max":
            fn = (F.max_pool1d, F.max_pool2d, F.max_pool3d)[d - 1]
            return fn(x, kernel, stride, pads[:d], dilation=list(attrs.get("dilations", [1] * d)),
                      ceil_mode=ceil)
        fn = (F.avg_pool1d, F.avg_pool2d, F.avg_pool3d)[d - 1]
        return fn(x, kernel, stride, pads[:d], ceil_mode=ceil,
                  count_include_pad=bool(attrs.get("count_include_pad", 0)))

    return run


def _lp_pool(inputs, attrs):
    kernel = list(attrs["kernel_shape"])
    d = len(kernel)
    if any(attrs.get("pads", [0])) or any(v != 1 for v in attrs.get("dilations", [1])):
        raise ExportError("onnx.load: LpPool with pads or dilations is not supported; valid: "
                          "none")
    fn = (F.lp_pool1d, F.lp_pool2d, F.lp_pool3d)[d - 1]
    return fn(inputs[0], attrs.get("p", 2), kernel, list(attrs.get("strides", kernel)),
              ceil_mode=bool(attrs.get("ceil_mode", 0)))


def _conv_transpose(inputs, attrs):
    x, w = inputs[0], inputs[1]
    d = w.ndim - 2
    pads = list(attrs.get("pads", [0] * 2 * d))
    if "output_shape" in attrs or pads[:d] != pads[d:]:
        raise ExportError("onnx.load: ConvTranspose with output_shape or asymmetric pads is "
                          "not supported; valid: symmetric pads")
    conv = (F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d)[d - 1]
    return conv(x, w, _optional(inputs, 2),
                stride=tuple(attrs.get("strides", [1] * d)), padding=tuple(pads[:d]),
                output_padding=tuple(attrs.get("output_padding", [0] * d)),
                groups=attrs.get("group", 1), dilation=tuple(attrs.get("dilations", [1] * d)))


_PAD_MODES = {"constant": "constant", "reflect": "reflect", "edge": "replicate"}


def _pad(inputs, attrs):
    x, pads = inputs[0], _ints(inputs[1])
    mode = attrs.get("mode", b"constant")
    mode = mode.decode() if isinstance(mode, bytes) else mode
    if mode not in _PAD_MODES:
        raise ExportError(f"onnx.load: Pad mode {mode!r} is not supported; valid: "
                          f"{sorted(_PAD_MODES)}")
    axes = _ints(_optional(inputs, 3, range(x.ndim)))
    axes = [a % x.ndim for a in axes]
    begin, end = dict(zip(axes, pads[:len(axes)])), dict(zip(axes, pads[len(axes):]))
    first = min(axes)
    widths = []
    for a in range(x.ndim - 1, first - 1, -1):
        widths += [begin.get(a, 0), end.get(a, 0)]
    value = _scalar(_optional(inputs, 2, 0.0))
    return F.pad(x, widths, _PAD_MODES[mode], value if mode == "constant" else None)


def _constant(inputs, attrs):
    from onnx import numpy_helper

    if "value" in attrs:
        return dl.tensor(numpy_helper.to_array(attrs["value"]).copy())
    for key, dtype in (("value_float", np.float32), ("value_floats", np.float32),
                       ("value_int", np.int64), ("value_ints", np.int64)):
        if key in attrs:
            return dl.tensor(np.asarray(attrs[key], dtype))
    raise ExportError(f"onnx.load: Constant with {sorted(attrs)} is not supported; valid: "
                      "value, value_float(s), value_int(s)")


def _split(inputs, attrs):
    x, axis = inputs[0], attrs.get("axis", 0)
    sizes = attrs.get("split")
    if sizes is None and _optional(inputs, 1) is not None:
        sizes = _ints(inputs[1])
    if sizes is None:
        parts = attrs.get("num_outputs")
        if parts is None:
            raise ExportError("onnx.load: Split needs its sizes or num_outputs")
        sizes = -(-x.shape[axis] // parts)
    return dl.split(x, list(sizes) if not isinstance(sizes, int) else sizes, axis)


def _trilu(inputs, attrs):
    k = _scalar(_optional(inputs, 1, 0))
    return (dl.triu if attrs.get("upper", 1) else dl.tril)(inputs[0], int(k))


# ONNX's gate blocks in torch's order (torch's LSTM is i f g o, ONNX's i o f c; GRU r z n
# against z r h), which the recurrence op computes in
_TORCH_GATES = {"LSTM": [0, 2, 3, 1], "GRU": [1, 0, 2], "RNN": [0]}


def _recurrent(mode):
    def run(inputs, attrs):
        x, w, r = inputs[0], inputs[1], inputs[2]
        bias, lengths, h0 = (inputs + [None] * 6)[3:6]
        c0 = (inputs + [None] * 7)[6] if mode == "LSTM" else None
        if lengths is not None:
            raise ExportError(f"onnx.load: {mode} with sequence_lens is not supported")
        if attrs.get("layout", 0) or attrs.get("clip") is not None or \
                attrs.get("input_forget", 0):
            raise ExportError(f"onnx.load: {mode} with layout, clip or input_forget is not "
                              "supported")
        kind = mode
        if mode == "GRU" and not attrs.get("linear_before_reset", 0):
            raise ExportError("onnx.load: GRU with linear_before_reset=0 is not supported; "
                              "valid: linear_before_reset=1 (torch's GRU)")
        if mode == "RNN":
            acts = [a.decode() if isinstance(a, bytes) else a
                    for a in attrs.get("activations", ["Tanh"])]
            if len(set(acts)) != 1 or acts[0] not in ("Tanh", "Relu"):
                raise ExportError(f"onnx.load: RNN activations {acts} are not supported; "
                                  "valid: Tanh or Relu")
            kind = "RNN_TANH" if acts[0] == "Tanh" else "RNN_RELU"
        elif attrs.get("activations") is not None:
            raise ExportError(f"onnx.load: {mode} with custom activations is not supported")
        direction = attrs.get("direction", b"forward")
        direction = direction.decode() if isinstance(direction, bytes) else direction
        hidden = int(r.shape[-1])
        steps, batch = x.shape[0], x.shape[1]
        order = _TORCH_GATES[mode]

        def torch_order(t):
            blocks = dl.split(t, hidden, 0)
            return dl.cat([blocks[i] for i in order], 0)

        dirs = {"forward": [False], "reverse": [True], "bidirectional": [False, True]}[direction]
        outs, last_h, last_c = [], [], []
        for d, reverse in enumerate(dirs):
            w_ih, w_hh = torch_order(w[d]), torch_order(r[d])
            b_ih = b_hh = None
            if bias is not None:
                b_ih, b_hh = torch_order(bias[d][:w.shape[1]]), torch_order(bias[d][w.shape[1]:])
            xs = F.linear(x, w_ih, b_ih)
            h = x.new_zeros((batch, hidden)) if h0 is None else h0[d]
            c = None if mode != "LSTM" else (x.new_zeros((batch, hidden)) if c0 is None
                                             else c0[d])
            y = recurrence(kind, xs, h, c, w_hh, b_hh, None, reverse)
            hs = y[..., :hidden]
            outs.append(hs)
            last_h.append(hs[0 if reverse else steps - 1])
            if mode == "LSTM":
                last_c.append(y[0 if reverse else steps - 1, :, hidden:])
        result = (dl.stack(outs, 1), dl.stack(last_h, 0))
        return result + (dl.stack(last_c, 0),) if mode == "LSTM" else result

    return run


def _gemm(inputs, attrs):
    a, b = inputs[0], inputs[1]
    if attrs.get("transA", 0):
        a = a.t()
    if attrs.get("transB", 0):
        b = b.t()
    out = (a @ b) * attrs.get("alpha", 1.0)
    if _optional(inputs, 2) is not None:
        out = out + inputs[2] * attrs.get("beta", 1.0)
    return out


def _batch_norm(inputs, attrs):
    x, scale, bias, mean, var = inputs
    return F.batch_norm(x, mean, var, scale, bias, training=False,
                        eps=attrs.get("epsilon", 1e-5))


def _layer_norm(inputs, attrs):
    x = inputs[0]
    axis = attrs.get("axis", -1) % x.ndim
    shape = tuple(x.shape[axis:])
    return F.layer_norm(x, shape, inputs[1], _optional(inputs, 2),
                        eps=attrs.get("epsilon", 1e-5))


def _reshape(inputs, attrs):
    x, shape = inputs[0], _ints(inputs[1])
    if not attrs.get("allowzero", 0):
        shape = [x.shape[i] if s == 0 else s for i, s in enumerate(shape)]
    return x.reshape(*shape)


def _constant_of_shape(inputs, attrs):
    from onnx import numpy_helper

    value = numpy_helper.to_array(attrs["value"]) if "value" in attrs else np.zeros(1, np.float32)
    return dl.tensor(np.full(_ints(inputs[0]), value.reshape(-1)[0], dtype=value.dtype))


_INT_RANGES = {"int8": (-128, 127), "uint8": (0, 255), "int32": (-2**31, 2**31 - 1)}


def _per_axis(t, x, attrs):
    """A quantization scale or zero point shaped to broadcast against x along `axis`."""
    if t.ndim == 0:
        return t
    shape = [1] * x.ndim
    shape[attrs.get("axis", 1) % x.ndim] = -1
    return t.reshape(*shape)


def _quantize_linear(inputs, attrs):
    x, scale = inputs[0], inputs[1]
    zero = _optional(inputs, 2, dl.zeros((), dtype=dl.uint8))
    low, high = _INT_RANGES[np.dtype(zero._data.dtype).name]
    q = (x / _per_axis(scale, x, attrs)).round() + _per_axis(zero, x, attrs).to(x.dtype)
    return q.clamp(low, high).to(zero.dtype)


def _dequantize_linear(inputs, attrs):
    q, scale = inputs[0], inputs[1]
    zero = _optional(inputs, 2)
    x = q.to(scale.dtype)
    if zero is not None:
        x = x - _per_axis(zero, q, attrs).to(scale.dtype)
    return x * _per_axis(scale, q, attrs)


def _dynamic_quantize_linear(inputs, attrs):
    x = inputs[0]
    low = dl.minimum(x.amin(), dl.zeros((), dtype=x.dtype))
    high = dl.maximum(x.amax(), dl.zeros((), dtype=x.dtype))
    scale = (high - low) / 255
    scale = dl.where(scale == 0, dl.ones((), dtype=x.dtype), scale)
    zero = (-low / scale).round().clamp(0, 255).to(dl.uint8)
    return _quantize_linear([x, scale, zero], {}), scale, zero


def _matmul_integer(inputs, attrs):
    a, b = inputs[0].to(dl.int32), inputs[1].to(dl.int32)
    if _optional(inputs, 2) is not None:
        a = a - inputs[2].to(dl.int32)
    if _optional(inputs, 3) is not None:
        b = b - inputs[3].to(dl.int32)
    return a @ b


def _cast(inputs, attrs):
    from onnx import helper

    return inputs[0].to(from_np(np.dtype(helper.tensor_dtype_to_np_dtype(attrs["to"]))))


def _shape(inputs, attrs):
    shape = list(inputs[0].shape)
    start, end = attrs.get("start", 0), attrs.get("end", len(shape))
    return dl.tensor(np.array(shape[start:end], np.int64))


def _scalar(t):
    return t.item() if isinstance(t, dl.Tensor) else t


_OPS = {
    "Add": lambda i, a: i[0] + i[1], "Sub": lambda i, a: i[0] - i[1],
    "Mul": lambda i, a: i[0] * i[1], "Div": lambda i, a: i[0] / i[1],
    "Pow": lambda i, a: i[0] ** i[1], "MatMul": lambda i, a: i[0] @ i[1],
    "Max": lambda i, a: dl.maximum(i[0], i[1]), "Min": lambda i, a: dl.minimum(i[0], i[1]),
    "Neg": lambda i, a: -i[0], "Abs": lambda i, a: i[0].abs(), "Exp": lambda i, a: i[0].exp(),
    "Log": lambda i, a: i[0].log(), "Sqrt": lambda i, a: i[0].sqrt(),
    "Reciprocal": lambda i, a: i[0].reciprocal(), "Erf": lambda i, a: i[0].erf(),
    "Relu": lambda i, a: F.relu(i[0]), "Sigmoid": lambda i, a: i[0].sigmoid(),
    "Tanh": lambda i, a: i[0].tanh(), "Softplus": lambda i, a: F.softplus(i[0]),
    "LeakyRelu": lambda i, a: F.leaky_relu(i[0], a.get("alpha", 0.01)),
    "Elu": lambda i, a: F.elu(i[0], a.get("alpha", 1.0)),
    "HardSigmoid": lambda i, a: (i[0] * a.get("alpha", 0.2) + a.get("beta", 0.5)).clamp(0, 1),
    "Clip": lambda i, a: i[0].clamp(*(_scalar(_optional(i, j)) for j in (1, 2))),
    "Floor": lambda i, a: i[0].floor(), "Ceil": lambda i, a: i[0].ceil(),
    "Softmax": lambda i, a: F.softmax(i[0], a.get("axis", -1)),
    "LogSoftmax": lambda i, a: F.log_softmax(i[0], a.get("axis", -1)),
    "Gemm": _gemm, "Conv": _conv, "MaxPool": _pool("max"), "AveragePool": _pool("avg"),
    "GlobalAveragePool": lambda i, a: i[0].mean(tuple(range(2, i[0].ndim)), keepdim=True),
    "GlobalMaxPool": lambda i, a: i[0].amax(tuple(range(2, i[0].ndim)), keepdim=True),
    "BatchNormalization": _batch_norm, "LayerNormalization": _layer_norm,
    "Identity": lambda i, a: i[0], "Reshape": _reshape,
    "Flatten": lambda i, a: i[0].reshape(math.prod(i[0].shape[:a.get("axis", 1)]), -1),
    "Transpose": lambda i, a: i[0].permute(*(a.get("perm") or range(i[0].ndim - 1, -1, -1))),
    "Concat": lambda i, a: dl.cat(list(i), a["axis"]),
    "Unsqueeze": lambda i, a: _unsqueeze(i[0], _axes(i, a, 1)),
    "Squeeze": lambda i, a: _squeeze(i[0], _axes(i, a, 1)),
    "Slice": _slice, "Gather": lambda i, a: _gather(i[0], i[1], a.get("axis", 0)),
    "Shape": _shape, "Cast": _cast, "ConstantOfShape": _constant_of_shape,
    "Expand": lambda i, a: i[0].expand(*np.broadcast_shapes(tuple(i[0].shape),
                                                           tuple(_ints(i[1])))),
    "Range": lambda i, a: dl.arange(_scalar(i[0]), _scalar(i[1]), _scalar(i[2]),
                                    dtype=i[0].dtype),
    "Where": lambda i, a: dl.where(i[0], i[1], i[2]),
    "Equal": lambda i, a: i[0] == i[1], "Less": lambda i, a: i[0] < i[1],
    "Greater": lambda i, a: i[0] > i[1], "LessOrEqual": lambda i, a: i[0] <= i[1],
    "GreaterOrEqual": lambda i, a: i[0] >= i[1], "Not": lambda i, a: ~i[0],
    "And": lambda i, a: i[0] & i[1], "Or": lambda i, a: i[0] | i[1],
    "IsNaN": lambda i, a: i[0].isnan(),
    "ReduceMean": _reduce(lambda x, d, k: x.mean(d, keepdim=k)),
    "ReduceSum": _reduce(lambda x, d, k: x.sum(d, keepdim=k)),
    "ReduceMax": _reduce(lambda x, d, k: x.amax(d, keepdim=k)),
    "ReduceMin": _reduce(lambda x, d, k: x.amin(d, keepdim=k)),
    "ReduceProd": _reduce(lambda x, d, k: _prod(x, d, k)),
    "ConvTranspose": _conv_transpose, "Pad": _pad, "Constant": _constant, "Split": _split,
    "Trilu": _trilu, "Tile": lambda i, a: dl.tile(i[0], *_ints(i[1])),
    "Einsum": lambda i, a: dl.einsum(_text(a["equation"]), *i),
    "CumSum": lambda i, a: _cumsum(i[0], int(_scalar(i[1])), a),
    "Sign": lambda i, a: i[0].sign(), "Round": lambda i, a: i[0].round(),
    "IsInf": lambda i, a: i[0].isinf(), "Sin": lambda i, a: i[0].sin(),
    "Cos": lambda i, a: i[0].cos(),
    "Mod": lambda i, a: dl.fmod(i[0], i[1]) if a.get("fmod", 0) else dl.remainder(i[0], i[1]),
    "Selu": lambda i, a: _selu(i[0], a),
    "Dropout": lambda i, a: i[0],
    "LSTM": _recurrent("LSTM"), "GRU": _recurrent("GRU"), "RNN": _recurrent("RNN"),
    "ArgMax": lambda i, a: i[0].argmax(a.get("axis", 0), keepdim=bool(a.get("keepdims", 1))),
    "ArgMin": lambda i, a: i[0].argmin(a.get("axis", 0), keepdim=bool(a.get("keepdims", 1))),
    **{op: (lambda name: lambda i, a: getattr(i[0], name)())(op.lower()) for op in
       ("Acos", "Acosh", "Asin", "Asinh", "Atan", "Atanh", "Cosh", "Sinh", "Tan")},
    "HardSwish": lambda i, a: F.hardswish(i[0]),
    "Xor": lambda i, a: dl.logical_xor(i[0], i[1]),
    "BitwiseAnd": lambda i, a: i[0] & i[1], "BitwiseOr": lambda i, a: i[0] | i[1],
    "BitwiseXor": lambda i, a: i[0] ^ i[1], "BitwiseNot": lambda i, a: ~i[0],
    "ReduceLogSumExp": _reduce(lambda x, d, k: x.logsumexp(d, keepdim=k)),
    "LpPool": _lp_pool,
    "QuantizeLinear": _quantize_linear, "DequantizeLinear": _dequantize_linear,
    "DynamicQuantizeLinear": _dynamic_quantize_linear, "MatMulInteger": _matmul_integer,
}


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else value


def _prod(x, dims, keep):
    for d in sorted((d % x.ndim for d in dims), reverse=True):
        x = x.prod(d, keepdim=keep)
    return x


def _cumsum(x, axis, attrs):
    if attrs.get("reverse", 0):
        return _cumsum(x.flip(axis), axis, {"exclusive": attrs.get("exclusive", 0)}).flip(axis)
    out = dl.cumsum(x, axis)
    return out - x if attrs.get("exclusive", 0) else out


_SELU = (1.67326319217681884765625, 1.05070102214813232421875)


def _selu(x, attrs):
    if (attrs.get("alpha", _SELU[0]), attrs.get("gamma", _SELU[1])) == _SELU:
        return F.selu(x)
    return F.elu(x, attrs["alpha"]) * attrs["gamma"]


def _unsqueeze(x, axes):
    for a in sorted(a % (x.ndim + len(axes)) for a in axes):
        x = x.unsqueeze(a)
    return x


def _squeeze(x, axes):
    axes = [i for i, n in enumerate(x.shape) if n == 1] if axes is None else \
        sorted((a % x.ndim for a in axes), reverse=True)
    for a in sorted(axes, reverse=True):
        x = x.squeeze(a)
    return x


def _gather(x, index, axis):
    if axis == 0 and x.ndim == 2 and index.dtype in (dl.int64, dl.int32):
        return F.embedding(index, x)
    return x.index_select(axis, index.reshape(-1)).reshape(
        *x.shape[:axis], *index.shape, *x.shape[axis + 1:])


SUPPORTED = tuple(sorted(_OPS))
"""The ONNX ops `OnnxGraph` runs (the default domain)."""


class OnnxGraph(Module):
    """The graph of an `onnx.ModelProto` as a module: `forward(*inputs)` takes the graph's
    inputs in order and returns its output (a tuple when there are several)."""

    def __init__(self, model):
        super().__init__()
        graph = model.graph
        unknown = sorted({n.op_type for n in graph.node if n.op_type not in _OPS or
                          n.domain not in ("", "ai.onnx")})
        if unknown:
            raise ExportError(f"onnx.load: the model uses ops {unknown}, which dl.free does not "
                              f"import; supported: {', '.join(SUPPORTED)}")
        from onnx import numpy_helper

        self._names: dict[str, str] = {}
        for init in graph.initializer:
            array = numpy_helper.to_array(init)
            attr = self._attribute_for(init.name)
            if array.dtype.kind == "f":
                self.register_parameter(attr, Parameter(dl.tensor(array.copy())))
            else:
                self.register_buffer(attr, dl.tensor(array.copy()))
        initialized = set(self._names)
        self.input_names = [i.name for i in graph.input if i.name not in initialized]
        self.output_names = [o.name for o in graph.output]
        self._nodes = []
        for n in graph.node:  # Constant nodes become buffers, made once
            if n.op_type == "Constant":
                attr = self._attribute_for(n.output[0])
                self.register_buffer(attr, _constant([], _attrs(n)))
            else:
                self._nodes.append((n.op_type, list(n.input), list(n.output), _attrs(n)))

    def get_config(self) -> dict:
        """Refused: a model file rebuilds a module from JSON-sized arguments, and an
        OnnxGraph's argument is the ONNX model itself, whose file format is the one to keep it
        in."""
        raise CheckpointError(
            "dl.save: an OnnxGraph (a module loaded from ONNX) is saved as ONNX: "
            "dl.onnx.export(module, example_inputs, path); or save its weights with "
            "dl.save(module.state_dict(), path) and load them into dl.onnx.load(original) "
            "with load_state_dict")

    def _attribute_for(self, name: str) -> str:
        """The attribute holding ONNX value `name`: "p_" and the name, dots as
        underscores."""
        attr = "p_" + "".join(c if c.isalnum() else "_" for c in name)
        while attr in self._names.values():
            attr += "_"
        self._names[name] = attr
        return attr

    def forward(self, *inputs):
        if len(inputs) != len(self.input_names):
            raise TypeError(f"OnnxGraph: expected {len(self.input_names)} inputs "
                            f"({', '.join(self.input_names)}), got {len(inputs)}")
        values = {name: getattr(self, attr) for name, attr in self._names.items()}
        values.update(zip(self.input_names, inputs, strict=True))
        for op, ins, outs, attrs in self._nodes:
            args = [values[i] if i else None for i in ins]
            result = _OPS[op](args, attrs)
            if not isinstance(result, tuple | list):
                result = (result,)
            for name, value in zip(outs, result, strict=False):
                if name:
                    values[name] = value
        result = tuple(values[o] for o in self.output_names)
        return result[0] if len(result) == 1 else result
