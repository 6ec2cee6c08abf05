"""The `dlfree export onnx` command: a model file written by `dl.save` to an ONNX file,
traced at example inputs of the shapes given, added to the `dlfree` command by the core's
plugin (`builtin_plugins.py`)."""

from __future__ import annotations

import argparse
import inspect
import re
from pathlib import Path

from ..cli import reports_errors
from ..errors import DLFreeError

__all__ = ["register_commands", "summary", "check_output_path"]

# The dtypes an example input may have: floating ones are filled with normal samples,
# the others with zeros (valid indices for an embedding, a false mask).
DTYPES = ("float32", "float64", "float16", "int64", "int32", "bool")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

_DESCRIPTION = """\
Write a model file saved by dl.save(model, path) as an ONNX model. The model is traced at
example inputs of the shapes given, one --input-shape per argument of its forward, in order:
random normal values for floating dtypes, zeros for the others. The axes are fixed at those
sizes unless --dynamic makes them vary, e.g. --dynamic 0:batch for the batch axis of every
input (the outputs' axes follow). The file is written atomically: a failed export leaves
no partial file. Bad input ends with a message on stderr and exit status 1 (2 for bad flags).

example:
  dlfree export onnx net.safetensors net.onnx --input-shape 1,1,8,8 --dynamic 0:batch"""


def register_commands(cli) -> None:
    """Add `export` and its `onnx` subcommand to the `dlfree` command's subparsers."""
    export = cli.add_parser("export", help="write a model file in another format: onnx",
                            description="Write a dl.free model file in another format.")
    formats = export.add_subparsers(dest="export_format", metavar="{onnx}", required=True)
    onnx = formats.add_parser("onnx", help="a model file (dl.save) as an ONNX model",
                              description=_DESCRIPTION,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    onnx.add_argument("model", metavar="MODEL_FILE", help="a model file written by dl.save")
    onnx.add_argument("out", metavar="OUT", help="the ONNX file to write, e.g. model.onnx")
    onnx.add_argument("--input-shape", dest="shapes", action="append", required=True,
                      type=parse_shape, metavar="D,D,...",
                      help="the shape of one example input, e.g. 1,3,224,224; repeat it for "
                           "each argument of the model's forward, in order")
    onnx.add_argument("--dtype", dest="dtypes", action="append", choices=DTYPES,
                      help="the dtype of one input, repeated in the order of --input-shape "
                           "(one per input, or none: all float32)")
    onnx.add_argument("--dynamic", action="append", type=parse_dynamic, default=[],
                      metavar="[INPUT:]AXIS:NAME",
                      help="let AXIS vary, named NAME in the ONNX graph: in every input "
                           "(0:batch), or in the input named INPUT (input_1:1:sequence); "
                           "repeatable; default: every axis fixed")
    onnx.add_argument("--input-names", type=_names, metavar="NAME,...",
                      help="the graph's input names (default input_0, input_1, ...)")
    onnx.add_argument("--output-names", type=_names, metavar="NAME,...",
                      help="the graph's output names (default output_0, output_1, ...)")
    onnx.add_argument("--opset", type=int, default=17,
                      help="the ONNX opset to write, 17 to 21 (default 17)")
    onnx.set_defaults(func=cmd_onnx)


def parse_shape(text: str) -> tuple[int, ...]:
    """`1,3,8,8` as (1, 3, 8, 8); anything but comma-separated positive sizes is refused."""
    parts = text.split(",")
    if not all(p.strip().isdigit() and int(p) > 0 for p in parts):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a shape; valid: comma-separated positive sizes, e.g. 1,3,224,224")
    return tuple(int(p) for p in parts)


def parse_dynamic(text: str) -> tuple[str | None, int, str]:
    """`AXIS:NAME` (every input) or `INPUT:AXIS:NAME` as (input name or None, axis, name)."""
    parts = text.split(":")
    valid = len(parts) in (2, 3) and parts[-2].isdigit() and _NAME.fullmatch(parts[-1]) \
        and (len(parts) == 2 or _NAME.fullmatch(parts[0]))
    if not valid:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a dynamic axis; valid: AXIS:NAME or INPUT:AXIS:NAME, e.g. "
            "0:batch or input_0:1:sequence")
    return (parts[0] if len(parts) == 3 else None), int(parts[-2]), parts[-1]


def _names(text: str) -> list[str]:
    names = text.split(",")
    if not all(_NAME.fullmatch(n) for n in names):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a list of names; valid: comma-separated names such as x,mask")
    return names


# a missing onnx package is bad input too: the message says how to install it
_reports_errors = reports_errors(lambda args: f"export {args.export_format}",
                                 (DLFreeError, ValueError, OSError, ModuleNotFoundError))


@_reports_errors
def cmd_onnx(args) -> int:
    from ..io import load
    from .exporter import export

    check_output_path(args.out)  # the flags first, then the model file: quick errors first
    dtypes = _input_dtypes(args.dtypes, len(args.shapes))
    names = _input_names(args.input_names, len(args.shapes))
    axes = _dynamic_axes(args.dynamic, dict(zip(names, args.shapes, strict=True)))
    model = _model(load(args.model), args.model)
    _check_arity(model, len(args.shapes), args.model)
    proto = export(model, _example_inputs(args.shapes, dtypes), args.out, input_names=names,
                   output_names=args.output_names, dynamic_axes=axes, opset_version=args.opset)
    print(summary(proto, args.out))
    return 0


def check_output_path(out) -> None:
    """Refuse an output path that is a folder or lies in a folder that does not exist,
    before any work is done."""
    path = Path(out)
    if path.is_dir():
        raise ValueError(f"{out} is a folder; give the path of the ONNX file to write")
    if not path.parent.is_dir():
        raise ValueError(f"{out}: the folder {path.parent} does not exist")


def _input_dtypes(dtypes, count: int) -> list[str]:
    if dtypes is None:
        return ["float32"] * count
    if len(dtypes) != count:
        raise ValueError(f"{len(dtypes)} --dtype for {count} --input-shape; give one --dtype "
                         "per input, in the same order, or none (all float32)")
    return dtypes


def _input_names(names, count: int) -> list[str]:
    if names is None:
        return [f"input_{i}" for i in range(count)]
    if len(names) != count or len(set(names)) != count:
        raise ValueError(f"--input-names {','.join(names)} for {count} --input-shape; give "
                         "one distinct name per input")
    return names


def _model(loaded, path):
    """The module a file holds, or an error saying it holds something else."""
    from ..io.architecture import is_module

    if not is_module(loaded):
        raise ValueError(f"{path} holds a {type(loaded).__name__}, not a model; a model file "
                         "is written by dl.save(model, path)")
    return loaded


def _check_arity(model, count: int, path) -> None:
    """Refuse a number of inputs that the model's forward cannot be called with."""
    signature = inspect.signature(model.forward)
    try:
        signature.bind(*range(count))
    except TypeError:
        raise ValueError(f"{path}: {type(model).__name__}.forward{signature} cannot take "
                         f"{count} input{'s' if count != 1 else ''}; give one --input-shape "
                         "per argument of forward") from None


def _example_inputs(shapes, dtypes) -> list:
    """Inputs to trace at: normal samples (from a fixed seed) for floating dtypes, zeros
    for integer and boolean ones."""
    from ..creation import randn, zeros
    from ..dtypes import as_dtype
    from ..random import Generator

    generator = Generator().manual_seed(0)
    return [randn(*shape, generator=generator, dtype=as_dtype(dtype))
            if dtype.startswith("float") else zeros(*shape, dtype=as_dtype(dtype))
            for shape, dtype in zip(shapes, dtypes, strict=True)]


def _dynamic_axes(specs, shapes: dict) -> dict:
    """The exporter's dynamic_axes ({input name: {axis: name}}) for the --dynamic specs,
    given the inputs' shapes by name."""
    axes: dict = {}
    for which, axis, dim in specs:
        spec = f"--dynamic {which + ':' if which else ''}{axis}:{dim}"
        if which is not None and which not in shapes:
            raise ValueError(f"{spec} names the input {which!r}; the inputs are "
                             f"{', '.join(shapes)}")
        for name in shapes if which is None else [which]:
            if axis >= len(shapes[name]):
                raise ValueError(f"{spec}: input {name!r} has no axis {axis} (its shape is "
                                 f"{','.join(map(str, shapes[name]))})")
            axes.setdefault(name, {})[axis] = dim
    return axes


def summary(proto, path) -> str:
    """One line on what was written: the inputs and outputs with dtypes and shapes (a
    dynamic axis by its name), the node count and the opset."""
    graph = proto.graph
    opset = next(o.version for o in proto.opset_import if o.domain in ("", "ai.onnx"))
    return (f"wrote {path}: inputs {_values(graph.input)}; outputs {_values(graph.output)}; "
            f"{len(graph.node)} nodes, opset {opset}")


def _values(infos) -> str:
    from onnx import helper

    def one(info) -> str:
        tensor = info.type.tensor_type
        dims = ",".join(d.dim_param or str(d.dim_value) for d in tensor.shape.dim)
        return f"{info.name} {helper.tensor_dtype_to_np_dtype(tensor.elem_type).name}[{dims}]"

    return ", ".join(one(info) for info in infos)
