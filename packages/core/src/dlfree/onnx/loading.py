"""`load`: an ONNX model read back as a dl.free module. The module class (`OnnxGraph`)
belongs to dlfree-nn, the package of modules; the core finds it through the layers registry
as it finds any layer, so the core imports nothing from dlfree-nn."""

from __future__ import annotations

import os

from ..errors import CheckpointError


def load(source):
    """An ONNX model (a path, bytes or an `onnx.ModelProto`) as a dl.free module whose
    parameters are the model's float initializers: call it with the graph's inputs, train it
    as any module. An op outside the supported subset is refused by name
    (`dlfree.errors.ExportError`); a file that is not a valid ONNX model is a
    `CheckpointError`."""
    import onnx

    from .. import registry

    if isinstance(source, onnx.ModelProto):
        model = source
    else:
        raw = isinstance(source, bytes | bytearray)
        what = "the bytes given" if raw else os.fspath(source)
        try:
            model = onnx.load_from_string(bytes(source)) if raw else onnx.load(what)
            onnx.checker.check_model(model)
        except FileNotFoundError:
            raise
        except Exception as error:  # protobuf's DecodeError, onnx's ValidationError
            raise CheckpointError(f"onnx.load: {what} is not a valid ONNX model: "
                                  f"{error}") from error
    return registry.layers.get("OnnxGraph")(model)
