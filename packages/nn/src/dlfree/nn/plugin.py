"""The hook implementations through which dlfree-nn registers what it provides,
exactly as a third-party plugin would (entry point `nn` in the `dlfree` group)."""

from __future__ import annotations

from dlfree import hookimpl

from . import (
    attention,
    capsules,
    causal_lm,
    containers,
    geometric,
    graph,
    layers,
    onnx_graph,
    recurrent,
    transformer,
)
from .init import INITIALIZERS

# Modules built from other modules or from config alone, registered beside the layers
_STRUCTURAL = (
    (containers, ("Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict",
                  "Identity")),
    (recurrent, ("RNN", "RNNCell", "LSTM", "LSTMCell", "GRU", "GRUCell")),
    (attention, ("MultiheadAttention",)),
    (transformer, ("TransformerEncoderLayer", "TransformerEncoder", "TransformerDecoderLayer",
                   "TransformerDecoder", "Transformer")),
    (causal_lm, ("CausalTransformer",)),
    (geometric, geometric.LAYERS),
    (capsules, capsules.LAYERS),
    (onnx_graph, ("OnnxGraph",)),
)


@hookimpl
def dlfree_register_layers(register):
    for name in layers.LAYERS:
        register(getattr(layers, name))
    for module, names in _STRUCTURAL:
        for name in names:
            register(getattr(module, name))
    # under "graph.<class>", so a user's own layer called Gate or Loop never clashes
    for name in graph.NODES:
        register(getattr(graph, name), f"graph.{name}")


@hookimpl
def dlfree_register_losses(register):
    for name in layers.LOSSES:
        register(getattr(layers, name))
    for name in capsules.LOSSES:
        register(getattr(capsules, name))


@hookimpl
def dlfree_register_initializers(register):
    for name, fn in INITIALIZERS.items():
        register(fn, name)
