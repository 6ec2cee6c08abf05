"""Every layer, activation and loss of dlfree-nn round-trips through a model file: the
same class, constructor config, state and outputs after `dl.save` + `dl.load`; and every
registered layer and loss name is covered by one of the parity tables."""

from __future__ import annotations

import dlfree as dl
import dlfree.nn as nn
from dlfree.nn import capsules, geometric
from dlfree.nn.graph import NODES

import numpy as np
import pytest

from support.nn_tables import ACTIVATION_ROWS, LAYER_ROWS, LOSS_ROWS, build_loss
from support.torch_copy import build_inputs

CASES = (
    [(f"layer-{row.id}", lambda row=row: row.build()[0], row.inputs, row.call)
     for row in LAYER_ROWS]
    + [(f"activation-{i}-{name}", lambda n=name, a=args, k=kw: getattr(nn, n)(*a, **k), (spec,),
        None) for i, (name, args, kw, spec) in enumerate(ACTIVATION_ROWS)]
    + [(f"loss-{i}-{row[0]}", lambda row=row: build_loss(row[0], row[1])[0], row[2],
        row[3] if len(row) > 3 else None) for i, row in enumerate(LOSS_ROWS)]
)


def _outputs(module, inputs, call):
    with dl.no_grad():
        out = call(module, *inputs) if call else module(*inputs)
    return [o.detach().numpy() for o in (out if isinstance(out, tuple | list) else [out])
            if isinstance(o, dl.Tensor)]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_model_file_round_trip(case, tmp_path):
    _, build, specs, call = case
    dl.manual_seed(0)
    module = build()
    module.eval()
    path = tmp_path / "m.safetensors"
    dl.save(module, path)
    loaded = dl.load(path)
    assert type(loaded) is type(module) and not loaded.training
    assert repr(loaded) == repr(module)
    saved, again = module.state_dict(), loaded.state_dict()
    assert list(saved) == list(again)
    for key in saved:
        np.testing.assert_array_equal(again[key].numpy(), saved[key].numpy(), err_msg=key)
    inputs, _ = build_inputs(specs)
    for a, b in zip(_outputs(module, inputs, call), _outputs(loaded, inputs, call)):
        np.testing.assert_array_equal(a, b)


def test_every_registered_layer_and_loss_is_in_a_table():
    covered = ({row.layer for row in LAYER_ROWS} | {name for name, *_ in ACTIVATION_ROWS}
               | {row[0] for row in LOSS_ROWS})
    for kind in ("layers", "losses"):
        table = getattr(dl.registry, kind)
        ours = [n for n in table.names() if table.provider(n)["distribution"] == "dlfree-nn"]
        containers = {"Sequential", "ModuleList", "ModuleDict", "ParameterList",
                      "ParameterDict", "Identity"}
        tested_elsewhere = containers | {"RNN", "LSTM", "GRU", "RNNCell", "LSTMCell", "GRUCell",
                                         "MultiheadAttention", "TransformerEncoderLayer",
                                         "TransformerEncoder", "TransformerDecoderLayer",
                                         "TransformerDecoder", "Transformer",
                                         # tests/nn/test_causal_transformer.py
                                         "CausalTransformer",
                                         # their first call decides their shapes
                                         # (tests/nn/test_lazy_layers.py)
                                         "LazyLinear", "LazyConv1d", "LazyConv2d", "LazyConv3d"}
        # checked against PyG in tests/nn/geometric/ and against the paper's equations in
        # tests/nn/test_capsules.py, model files included
        tested_elsewhere |= set(geometric.LAYERS) | set(capsules.LAYERS) | set(capsules.LOSSES)
        tested_elsewhere |= {f"graph.{name}" for name in NODES}  # tests/nn/graph
        tested_elsewhere |= {"OnnxGraph"}  # tests/export/test_onnx_load.py
        missing = sorted(set(ours) - covered - tested_elsewhere)
        assert not missing, f"{kind} without a parity row: {missing}"
