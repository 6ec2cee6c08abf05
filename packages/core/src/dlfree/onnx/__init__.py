"""ONNX: `export` writes a traced dl.free model as an ONNX graph that ONNX Runtime (or any
engine reading ONNX) runs; `load` reads an ONNX model back as a dl.free module.

The op mappings are plugins: the core registers its own through the
`dlfree_register_onnx_ops` hook, as a third party adds mappings for its ops. Needs the
optional `onnx` package (`pip install 'dlfree[onnx]'`)."""

from __future__ import annotations

from .context import Context
from .exporter import OPSETS, export
from .loading import load

__all__ = ["export", "load", "Context", "OPSETS", "converters"]


def converters() -> dict:
    """The core's converters by op name, what the core's plugin registers."""
    from .ops_layers import CONVERTERS as layers
    from .ops_math import CONVERTERS as math
    from .ops_quant import CONVERTERS as quant
    from .ops_shape import CONVERTERS as shape

    return {**math, **shape, **layers, **quant}
