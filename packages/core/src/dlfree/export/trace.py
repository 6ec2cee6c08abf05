"""`trace`: record the ops of one call of a model or function into a `Graph`."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

from ..tensor import Tensor
from ..tracing_state import TRACING
from .graph import Graph, Node


class TracerWarning(UserWarning):
    """A traced call converted a tensor to a Python value: the graph holds the value seen
    in this call, so control flow or shapes that depend on it are frozen."""


class _Tracer:
    """The recorder installed in `TRACING.hook` while `trace` runs the call."""

    def __init__(self, names: dict):
        self.names = names  # id(tensor) -> value name
        self.keep: list = []  # the recorded tensors, alive so that their ids stay unique
        self.nodes: list[Node] = []
        self.constants: dict = {}

    def name_of(self, t: Tensor) -> str:
        name = self.names.get(id(t))
        if name is None:
            name = f"const_{len(self.constants)}"
            self.constants[name] = t._data
            self.names[id(t)] = name
            self.keep.append(t)
        return name

    def record(self, cls, inputs, params, result) -> None:
        ins = [self.name_of(t) for t in inputs]
        out = f"v{len(self.nodes)}"
        self.names[id(result)] = out
        self.keep.append(result)
        self.nodes.append(Node(cls.__name__.lower(), cls, dict(params), ins, out))
        baked = cls.data_attributes(params)
        if baked:
            filename, lineno = _user_frame()
            warnings.warn_explicit(
                f"trace: op {cls.__name__.lower()} was given arrays computed outside the "
                f"graph ({', '.join(baked)}); the graph keeps this call's values, so its "
                "output is right for the traced input only", TracerWarning, filename, lineno)

    def python_value(self, tensor: Tensor) -> None:
        filename, lineno = _user_frame()
        warnings.warn_explicit(
            "trace: a tensor was converted to a Python value (bool/int/float/item) during "
            "tracing; the graph keeps this call's value, so control flow depending on it "
            "will not follow other inputs", TracerWarning, filename, lineno)


def trace(model_or_fn, *example_inputs, dynamic_dims=None) -> Graph:
    """Run `model_or_fn(*example_inputs)` once and record its ops into a `Graph`.

    `dynamic_dims` maps an input's index to {dim: name} for dims that may vary between calls
    (e.g. {0: {0: "batch"}}); they appear by name in `Graph.input_shapes`. A model's
    parameters and buffers become the graph's parameters by their qualified names."""
    if TRACING.hook is not None:
        raise RuntimeError("trace: already tracing on this thread; nested trace is not "
                           "supported")
    for i, x in enumerate(example_inputs):
        if not isinstance(x, Tensor):
            raise TypeError(f"trace: example input {i} is a {type(x).__name__}; valid: Tensor")
    dynamic_dims = dynamic_dims or {}
    for index, dims in dynamic_dims.items():
        if not 0 <= index < len(example_inputs):
            raise ValueError(f"trace: dynamic_dims names input {index}; valid: 0 to "
                             f"{len(example_inputs) - 1}")
        for d in dims:
            if not 0 <= d < example_inputs[index].ndim:
                raise ValueError(f"trace: dynamic_dims names dim {d} of input {index}, which "
                                 f"has {example_inputs[index].ndim} dims")
    names: dict = {}
    parameters: dict = {}
    if hasattr(model_or_fn, "named_parameters"):
        for name, p in list(model_or_fn.named_parameters()) + list(
                model_or_fn.named_buffers()):
            names[id(p)] = name
            parameters[name] = p._data
    input_names = [f"input_{i}" for i in range(len(example_inputs))]
    for name, x in zip(input_names, example_inputs):
        names[id(x)] = name
    tracer = _Tracer(names)
    TRACING.hook = tracer
    try:
        out = model_or_fn(*example_inputs)
    finally:
        TRACING.hook = None
    outs = out if isinstance(out, (tuple, list)) else (out,)
    for i, o in enumerate(outs):
        if not isinstance(o, Tensor):
            raise TypeError(f"trace: output {i} is a {type(o).__name__}; valid: Tensor or a "
                            "tuple of Tensors")
    output_names = [tracer.name_of(o) for o in outs]
    used = {n for node in tracer.nodes for n in node.inputs} | set(output_names)
    shapes = [tuple(dynamic_dims.get(i, {}).get(d, n) for d, n in enumerate(x.shape))
              for i, x in enumerate(example_inputs)]
    return Graph(input_names, output_names, shapes,
                 [tuple(x.shape) for x in example_inputs], tracer.nodes,
                 {k: v for k, v in parameters.items() if k in used}, tracer.constants,
                 example_inputs[0].device if example_inputs else None)


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
