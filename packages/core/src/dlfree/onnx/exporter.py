"""`export`: trace a model, map each traced node to ONNX nodes through the registered
converters (`dlfree.registry.onnx_ops`), and write the model with the `onnx` package."""

from __future__ import annotations

import io

import numpy as np

from .. import registry
from ..autograd.grad_mode import no_grad
from ..errors import ExportError, PluginError
from ..export import eliminate_dead_code, fold_batch_norm, fold_constants, trace, unflatten_linears
from ..export.symbolic import SymInt
from ..io.atomic import atomic_write
from ..tensor import Tensor
from ..version import __version__
from .context import Context, _to_numpy

OPSETS = range(17, 22)
"""The ONNX opsets `export` writes: 17 (the first with LayerNormalization) to 21."""


def require_onnx():
    """The `onnx` package, or an error saying how to install it."""
    try:
        import onnx
    except ModuleNotFoundError:
        raise ModuleNotFoundError("dlfree.onnx needs the onnx package; install it with: pip "
                                  "install 'dlfree[onnx]'", name="onnx") from None
    return onnx


def export(model, args, f, input_names=None, output_names=None, dynamic_axes=None,
           opset_version: int = 17, do_constant_folding: bool = True, check: bool = True):
    """Write `model(*args)` as an ONNX model to `f` (a path or a binary file object), with
    torch.onnx.export's arguments, and return the `onnx.ModelProto`.

    `args` is a Tensor or a tuple of Tensors (the example inputs). `input_names` and
    `output_names` name the graph's inputs and outputs (default input_0, ..., output_0, ...).
    `dynamic_axes` maps an input or output name to the axes that may vary, as
    {axis: name} or a list of axes (named `<input>_dynamic_axes_<k>`); the graph then follows
    those sizes. A Module is exported in eval mode and put back in the mode it was in.
    With `do_constant_folding` constant subgraphs are evaluated and eval-mode batch norms
    folded into the convolution or linear layer before them. `check` runs onnx.checker.
    An op without an ONNX mapping is an `ExportError` naming it and its layer."""
    onnx = require_onnx()
    if opset_version not in OPSETS:
        raise ValueError(f"onnx.export: opset_version {opset_version} is not supported; valid: "
                         f"{OPSETS.start} to {OPSETS.stop - 1}")
    args = (args,) if isinstance(args, Tensor) else tuple(args)
    input_names = _names(input_names, len(args), "input", "input_names")
    dynamic_dims, output_axes = _dynamic(dynamic_axes, input_names, output_names, args)
    graph = _trace(model, args, dynamic_dims)
    if do_constant_folding:
        graph = fold_batch_norm(fold_constants(graph))
    graph = unflatten_linears(eliminate_dead_code(graph))
    output_names = _names(output_names, len(graph.outputs), "output", "output_names")
    proto = _build(onnx, graph, input_names, output_names, output_axes, opset_version)
    if check:
        onnx.checker.check_model(proto)
    _write(proto, f)
    return proto


def _names(names, count: int, stem: str, what: str) -> list[str]:
    if names is None:
        return [f"{stem}_{i}" for i in range(count)]
    names = list(names)
    if len(names) != count or len(set(names)) != len(names):
        raise ValueError(f"onnx.export: {what} has {len(names)} names {names}; valid: {count} "
                         "distinct names, one per " + ("example input" if stem == "input"
                                                       else "output of the model"))
    return names


def _dynamic(dynamic_axes, input_names, output_names, args) -> tuple[dict, dict]:
    """(trace's dynamic_dims by input index, {output name: {axis: name}})."""
    dims: dict = {}
    outputs: dict = {}
    for name, axes in (dynamic_axes or {}).items():
        if not isinstance(axes, dict):
            axes = {int(a): f"{name}_dynamic_axes_{k + 1}" for k, a in enumerate(axes)}
        if name in input_names:
            i = input_names.index(name)
            for axis in axes:
                if not 0 <= axis < args[i].ndim:
                    raise ValueError(f"onnx.export: dynamic_axes gives axis {axis} of input "
                                     f"{name!r}, which has {args[i].ndim} dims")
            dims[i] = dict(axes)
        elif output_names is not None and name in output_names:
            outputs[name] = dict(axes)
        else:
            valid = list(input_names) + list(output_names or [])
            raise ValueError(f"onnx.export: dynamic_axes names {name!r}, which is neither an "
                             f"input nor an output name; valid: {valid}")
    return dims, outputs


def _trace(model, args, dynamic_dims):
    was_training = getattr(model, "training", None)
    if was_training:
        model.eval()
    try:
        with no_grad():
            return trace(model, *args, dynamic_dims=dynamic_dims)
    finally:
        if was_training:
            model.train()


def _converter(node):
    try:
        return registry.onnx_ops.get(node.op)
    except PluginError:
        where = f" in layer {node.layer}" if node.layer else ""
        raise ExportError(f"onnx.export: op {node.op}{where} has no ONNX mapping; a plugin "
                          "adds one with the dlfree_register_onnx_ops hook (see "
                          "docs/plugins.md)") from None


def _build(onnx, graph, input_names, output_names, output_axes, opset: int):
    from onnx import helper, numpy_helper

    ctx = Context(graph, opset, helper, numpy_helper)
    ctx.names.update(zip(graph.inputs, input_names, strict=True))
    for name in (*graph.parameters, *graph.constants):
        ctx.names[name] = name
    for node in graph.nodes:
        convert = _converter(node)
        ctx.node = node
        ctx.names[node.output] = convert(ctx)
    ctx.node = None
    for value, name in zip(graph.outputs, output_names, strict=True):
        ctx.nodes.append(helper.make_node("Identity", [ctx.names[value]], [name],
                                          name=f"output_{name}"))
    # The parameters are the initializers; every other constant is a Constant node, as
    # torch.onnx writes them, so that an importer can tell weights from constants.
    used = {i for n in ctx.nodes for i in n.input}
    initializers = [numpy_helper.from_array(np.ascontiguousarray(_to_numpy(a)), name)
                    for name, a in graph.parameters.items() if name in used]
    constants = {**{k: _to_numpy(a) for k, a in graph.constants.items()}, **ctx.constants}
    ctx.nodes[:0] = [helper.make_node("Constant", [], [name], name=f"c_{name}",
                                      value=numpy_helper.from_array(np.ascontiguousarray(a)))
                     for name, a in constants.items() if name in used]
    inputs = [helper.make_tensor_value_info(
        name, helper.np_dtype_to_tensor_dtype(np.dtype(graph.dtypes[value])),
        [d if isinstance(d, str) else int(d) for d in shape])
        for name, value, shape in zip(input_names, graph.inputs, graph.input_shapes,
                                      strict=True)]
    outputs = [helper.make_tensor_value_info(
        name, helper.np_dtype_to_tensor_dtype(np.dtype(graph.dtypes[value])),
        _output_dims(graph.shapes[value], output_axes.get(name, {})))
        for name, value in zip(output_names, graph.outputs, strict=True)]
    onnx_graph = helper.make_graph(ctx.nodes, "dlfree", inputs, outputs, initializers)
    proto = helper.make_model(onnx_graph, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name="dlfree", producer_version=__version__)
    proto.ir_version = min(proto.ir_version, 10)  # what current runtimes read
    return proto


def _output_dims(shape, names: dict) -> list:
    dims = []
    for axis, d in enumerate(shape):
        if axis in names:
            dims.append(names[axis])
        elif isinstance(d, SymInt):
            dims.append(d.dims[0] if (d.coeff, d.offset, len(d.dims)) == (1, 0, 1) else str(d))
        else:
            dims.append(int(d))
    return dims


def _write(proto, f) -> None:
    """Serialize to a binary file object, or to a path atomically (`io.atomic_write`: a
    temporary file in the same folder renamed over it), so a failed write leaves no partial
    model behind."""
    if proto.ByteSize() > 2**31 - 1:
        raise ExportError(f"onnx.export: the model is {proto.ByteSize()} bytes, over "
                          "protobuf's 2 GiB limit for one file")
    data = proto.SerializeToString()
    if isinstance(f, io.IOBase) or hasattr(f, "write"):
        f.write(data)
        return
    atomic_write(f, data)
