"""`trace`: record the ops of one call of a model or function into a `Graph`.

Dynamic dims are recovered by tracing again: once with each dynamic dim one larger, and
once with all of them two larger (a check). The traces must record the same ops; an int
that differs between them (a reshape's target, a slice's bound, a value's size) is fitted
to a `SymInt` of the dims, so the graph (and an ONNX export) follows other sizes."""

from __future__ import annotations

import inspect
import sys
import warnings
from pathlib import Path

from ..tensor import Tensor
from ..tracing_state import TRACING
from .graph import Graph, Node
from .symbolic import NotAffine, SymInt, fit, has_symbols, rebuild


class TracerWarning(UserWarning):
    """A traced call converted a tensor to a Python value: the graph holds the value seen
    in this call, so control flow or shapes that depend on it are frozen."""


class _Tracer:
    """The recorder installed in `TRACING.hook` while `trace` runs the call."""

    def __init__(self, names: dict, warn: bool):
        self.names = names  # id(tensor) -> value name
        self.keep: list = []  # the recorded tensors, alive so that their ids stay unique
        self.nodes: list[Node] = []
        self.constants: dict = {}
        self.values: dict = {}  # value name -> (shape, dtype)
        self.layers: list[str] = [""]
        self.warn = warn

    def name_of(self, t: Tensor) -> str:
        name = self.names.get(id(t))
        if name is None:
            name = f"const_{len(self.constants)}"
            self.constants[name] = t._data
            self.names[id(t)] = name
            self.keep.append(t)
        self.values.setdefault(name, (tuple(t.shape), t._data.dtype))
        return name

    def _output(self, result: Tensor) -> str:
        out = f"v{len(self.nodes)}"
        self.names[id(result)] = out
        self.keep.append(result)
        self.values[out] = (tuple(result.shape), result._data.dtype)
        return out

    def record(self, cls, inputs, params, result) -> None:
        ins = [self.name_of(t) for t in inputs]
        self.nodes.append(Node(cls.__name__.lower(), cls, dict(params), ins,
                               self._output(result), layer=self.layers[-1]))
        baked = cls.data_attributes(params)
        if baked and self.warn:
            filename, lineno = _user_frame()
            warnings.warn_explicit(
                f"trace: op {cls.__name__.lower()} was given arrays computed outside the "
                f"graph ({', '.join(baked)}); the graph keeps this call's values, so its "
                "output is right for the traced input only", TracerWarning, filename, lineno)

    def record_call(self, fn, args, kwargs):
        """Run a `recorded` op untraced and record it as one node."""
        TRACING.hook = None
        try:
            result = fn(*args, **kwargs)
        finally:
            TRACING.hook = self
        bound = inspect.signature(fn).bind(*args, **kwargs)
        bound.apply_defaults()
        arg_names, inputs, attributes = [], [], {}
        for name, value in bound.arguments.items():
            if isinstance(value, Tensor):
                arg_names.append(name)
                inputs.append(self.name_of(value))
            else:
                attributes[name] = value
        if not isinstance(result, Tensor):
            raise TypeError(f"trace: {fn.__name__} returned a {type(result).__name__} while "
                            "tracing; valid: ops recorded whole return one Tensor (call it "
                            "without return_indices)")
        self.nodes.append(Node(fn.__name__, fn, attributes, inputs, self._output(result),
                               tuple(arg_names), layer=self.layers[-1]))
        return result

    def python_value(self, tensor: Tensor) -> None:
        if not self.warn:
            return
        filename, lineno = _user_frame()
        warnings.warn_explicit(
            "trace: a tensor was converted to a Python value (bool/int/float/item) during "
            "tracing; the graph keeps this call's value, so control flow depending on it "
            "will not follow other inputs", TracerWarning, filename, lineno)


def trace(model_or_fn, *example_inputs, dynamic_dims=None) -> Graph:
    """Run `model_or_fn(*example_inputs)` and record its ops into a `Graph`.

    `dynamic_dims` maps an input's index to {dim: name} for dims that may vary between calls
    (e.g. {0: {0: "batch"}}); they appear by name in `Graph.input_shapes`, and the graph
    runs at other sizes of them. A model's parameters and buffers become the graph's
    parameters by their qualified names. The output may be a Tensor or a (nested) tuple or
    list of Tensors; the graph's outputs are them in order, flattened."""
    if TRACING.hook is not None:
        raise RuntimeError("trace: already tracing on this thread; nested trace is not "
                           "supported")
    for i, x in enumerate(example_inputs):
        if not isinstance(x, Tensor):
            raise TypeError(f"trace: example input {i} is a {type(x).__name__}; valid: Tensor")
    symbols = _symbols(example_inputs, dynamic_dims or {})
    base = _record(model_or_fn, example_inputs, warn=True)
    graph = _graph(base, example_inputs, symbols, model_or_fn)
    if symbols:
        names = list(symbols)
        sizes = [{n: symbols[n][1] for n in names}]
        for n in names:
            sizes.append({**sizes[0], n: sizes[0][n] + 1})
        sizes.append({n: s + 2 for n, s in sizes[0].items()})
        runs = [base] + [_record(model_or_fn, _resized(example_inputs, symbols, s), warn=False)
                         for s in sizes[1:]]
        _make_symbolic(graph, runs, sizes)
    return graph


def _symbols(inputs, dynamic_dims) -> dict:
    """{dim name: ([(input index, dim), ...], size)} from `dynamic_dims`, checked."""
    symbols: dict = {}
    for index, dims in dynamic_dims.items():
        if not 0 <= index < len(inputs):
            raise ValueError(f"trace: dynamic_dims names input {index}; valid: 0 to "
                             f"{len(inputs) - 1}")
        for d, name in dims.items():
            if not 0 <= d < inputs[index].ndim:
                raise ValueError(f"trace: dynamic_dims names dim {d} of input {index}, which "
                                 f"has {inputs[index].ndim} dims")
            places, size = symbols.setdefault(name, ([], inputs[index].shape[d]))
            if inputs[index].shape[d] != size:
                raise ValueError(f"trace: dynamic dim {name} has size {size} and "
                                 f"{inputs[index].shape[d]} in the example inputs; valid: "
                                 "one size per name")
            places.append((index, d))
    return symbols


def _resized(inputs, symbols, sizes) -> list:
    """The example inputs grown along their dynamic dims to `sizes` by repeating their last
    slice, so that indices, masks and token ids stay valid."""
    arrays = [x._data for x in inputs]
    for name, (places, size) in symbols.items():
        for index, d in places:
            a = arrays[index]
            xp = inputs[index]._device.xp
            extra = xp.take(a, [a.shape[d] - 1] * (sizes[name] - size), axis=d)
            arrays[index] = xp.concatenate([a, extra], axis=d)
    return [Tensor._make(a, x._device) for a, x in zip(arrays, inputs)]


def _record(model_or_fn, inputs, warn: bool) -> _Tracer:
    """One traced call: the tracer holding its nodes, constants and values."""
    names: dict = {}
    for name, p in _named_state(model_or_fn):
        names[id(p)] = name
    for i, x in enumerate(inputs):
        names[id(x)] = f"input_{i}"
    tracer = _Tracer(names, warn)
    for name, x in enumerate(inputs):
        tracer.values[f"input_{name}"] = (tuple(x.shape), x._data.dtype)
    handles = _track_layers(model_or_fn, tracer)
    TRACING.hook = tracer
    try:
        out = model_or_fn(*inputs)
    finally:
        TRACING.hook = None
        for h in handles:
            h.remove()
    outs = list(_flatten(out))
    tracer.outputs = [tracer.name_of(o) for o in outs]
    return tracer


def _named_state(model) -> list:
    if not hasattr(model, "named_parameters"):
        return []
    return list(model.named_parameters()) + list(model.named_buffers())


def _track_layers(model, tracer) -> list:
    """Forward hooks keeping `tracer.layers` at the qualified name of the running module."""
    if not hasattr(model, "named_modules"):
        return []
    handles = []
    for name, module in model.named_modules():
        if not name:
            continue

        def enter(_module, _args, name=name):
            tracer.layers.append(name)

        def leave(_module, _args, _output):
            tracer.layers.pop()

        handles.append(module.register_forward_pre_hook(enter))
        handles.append(module.register_forward_hook(leave))
    return handles


def _flatten(out, path="output"):
    if isinstance(out, Tensor):
        yield out
    elif isinstance(out, tuple | list):
        for i, o in enumerate(out):
            yield from _flatten(o, f"{path}[{i}]")
    else:
        raise TypeError(f"trace: {path} is a {type(out).__name__}; valid: Tensor or a (nested) "
                        "tuple of Tensors")


def _graph(tracer: _Tracer, inputs, symbols, model) -> Graph:
    used = {n for node in tracer.nodes for n in node.inputs} | set(tracer.outputs)
    shapes = [list(x.shape) for x in inputs]
    for name, (places, _) in symbols.items():
        for index, d in places:
            shapes[index][d] = name
    parameters = {k: p._data for k, p in _named_state(model) if k in used}
    return Graph([f"input_{i}" for i in range(len(inputs))], tracer.outputs,
                 [tuple(s) for s in shapes], [tuple(x.shape) for x in inputs], tracer.nodes,
                 parameters, tracer.constants, inputs[0].device if inputs else None,
                 {k: v[0] for k, v in tracer.values.items()},
                 {k: v[1] for k, v in tracer.values.items()})


def _make_symbolic(graph: Graph, runs: list, sizes: list) -> None:
    """Compare the traces and turn what followed the dynamic dims into SymInts, in place."""
    base = runs[0]
    for k, run in enumerate(runs[1:], 1):
        if len(run.nodes) != len(base.nodes) or any(
                a.op != b.op for a, b in zip(base.nodes, run.nodes)):
            at = next((i for i, (a, b) in enumerate(zip(base.nodes, run.nodes))
                       if a.op != b.op), min(len(base.nodes), len(run.nodes)))
            raise ValueError(f"trace: the call records different ops at sizes {sizes[k]} "
                             f"than at {sizes[0]} (from node {at}); valid: dynamic dims that "
                             "do not change the code path")
    for i, node in enumerate(graph.nodes):
        where = f"op {node.op} (node {i}{', layer ' + node.layer if node.layer else ''})"
        attributes = [r.nodes[i].attributes for r in runs]
        symbolic = _fit_tree(attributes, sizes, where)
        if has_symbols(symbolic):
            node.symbolic = symbolic
    for name in list(graph.shapes):
        seen = [r.values.get(name) for r in runs]
        if any(s is None or len(s[0]) != len(seen[0][0]) for s in seen):
            continue
        graph.shapes[name] = tuple(
            _fit_int([s[0][d] for s in seen], sizes, f"dim {d} of value {name}")
            for d in range(len(seen[0][0])))
    for name in list(graph.constants):
        shape = graph.shapes[name]
        if not any(isinstance(d, SymInt) for d in shape):
            continue
        arrays = [r.constants.get(name) for r in runs]
        fill = _uniform(arrays)
        ramp = None if fill is not None else _ramp(arrays, graph.device.xp)
        if fill is None and ramp is None:
            reader = next((n for n in graph.nodes if name in n.inputs), None)
            where = "" if reader is None else f", read by op {reader.op}" + \
                (f" in layer {reader.layer}" if reader.layer else "")
            raise ValueError(f"trace: a tensor made inside the call{where} has shape "
                             f"{shape}, which follows the dynamic dims and holds values other "
                             "than a fill or a range; valid: tensors computed from the inputs "
                             "by ops, full/zeros/ones, arange, or fixed dims")
        array = graph.constants.pop(name)
        if fill is not None:
            op, fn = "full", full
            attributes = {"shape": tuple(array.shape), "fill_value": fill}
            symbolic = {"shape": shape}
        else:
            op, fn = "arange", arange
            attributes = {"start": ramp[0], "step": ramp[1], "size": array.shape[0]}
            symbolic = {"size": shape[0]}
        attributes.update(dtype=array.dtype, device=graph.device)
        graph.nodes.insert(0, Node(op, fn, attributes, [], name, (), {**attributes, **symbolic}))


def full(shape, fill_value, dtype, device) -> Tensor:
    """A uniform tensor: the node a trace puts where the call made one whose shape follows
    the dynamic dims (the zeros of a default recurrent state, say)."""
    return Tensor._make(device.xp.full(shape, fill_value, dtype=dtype), device)


def arange(start, step, size, dtype, device) -> Tensor:
    """start + step * [0, size): the node a trace puts where the call made a range whose
    length follows the dynamic dims (position ids, say)."""
    return Tensor._make((start + step * device.xp.arange(size)).astype(dtype), device)


def _uniform(arrays: list):
    """The one value every array holds, or None when they hold several."""
    first = arrays[0]
    if any(a is None for a in arrays) or first.size == 0:
        return None
    value = first.reshape(-1)[0].item()
    same = all(bool((a == value).all()) for a in arrays)
    return value if same else None


def _ramp(arrays: list, xp):
    """(start, step) when every array is the 1-d range start + step * k, else None."""
    first = arrays[0]
    if any(a is None or a.ndim != 1 or a.shape[0] < 2 for a in arrays):
        return None
    start, step = first[0].item(), (first[1] - first[0]).item()
    for a in arrays:
        if not bool((a == (start + step * xp.arange(a.shape[0])).astype(a.dtype)).all()):
            return None
    return start, step


def _fit_int(values, sizes, where):
    try:
        return fit(values, sizes)
    except NotAffine as e:
        raise ValueError(f"trace: {where} {e}; valid: sizes a * dim + b or a * dim1 * dim2 "
                         "+ b of the dynamic dims, or fixed") from None


def _fit_tree(values: list, sizes: list, where: str):
    """The SymInt-bearing version of one attribute seen in every trace."""
    first = values[0]
    if isinstance(first, bool) or first is None or isinstance(first, str | float | type):
        return first
    if isinstance(first, int):
        return _fit_int(values, sizes, where)
    if isinstance(first, tuple | list):
        if any(not isinstance(v, type(first)) or len(v) != len(first) for v in values):
            return first
        return rebuild(first, [_fit_tree([v[j] for v in values], sizes, where)
                               for j in range(len(first))])
    if isinstance(first, dict):
        return {k: _fit_tree([v[k] for v in values], sizes, where) for k in first}
    if isinstance(first, slice):
        parts = [_fit_tree([getattr(v, p) for v in values], sizes, where)
                 for p in ("start", "stop", "step")]
        return slice(*parts)
    return first


def _user_frame() -> tuple[str, int]:
    """The file and line of the innermost caller outside dl.free's own packages."""
    import dlfree

    roots = [str(Path(p).resolve()) for p in dlfree.__path__]
    frame = sys._getframe(1)
    while frame is not None:
        filename = str(Path(frame.f_code.co_filename).resolve())
        if not any(filename.startswith(r) for r in roots):
            return frame.f_code.co_filename, frame.f_lineno
        frame = frame.f_back
    return "<unknown>", 0
