"""`dlfree.onnx.export`: ONNX Runtime runs the exported graphs to dl.free's outputs (float32
1e-5 relative, 1e-4 for transformer stacks), at two batch sizes and sequence lengths
through dynamic axes; onnx.checker passes; unmapped ops are named with their layer; a
plugin's mapping is used."""

from __future__ import annotations

import io

import dlfree
import dlfree.nn as nn
from dlfree.errors import ExportError

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from support.export_models import Encoder, Sequence, padding_mask, trained


def _session(model, args, **kwargs):
    buffer = io.BytesIO()
    proto = dlfree.onnx.export(model, args, buffer, **kwargs)
    onnx.checker.check_model(proto)
    session = ort.InferenceSession(buffer.getvalue(), providers=["CPUExecutionProvider"])
    return proto, session


def _agree(model, session, calls, rtol=1e-5, atol=1e-6):
    names = [i.name for i in session.get_inputs()]
    for args in calls:
        got = session.run(None, {n: np.asarray(a) for n, a in zip(names, args, strict=True)})
        with dlfree.no_grad():
            want = model(*args)
        want = want if isinstance(want, tuple) else (want,)
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            np.testing.assert_allclose(g, np.asarray(w), rtol=rtol, atol=atol)


def _batch(name="input_0", dims=("batch",)):
    return {name: dict(enumerate(dims))}


def test_mlp_runs_in_onnx_runtime_at_two_batch_sizes():
    dlfree.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4)).eval()
    proto, session = _session(model, dlfree.randn(3, 8), input_names=["x"],
                              output_names=["logits"], dynamic_axes={"x": {0: "batch"}})
    dims = proto.graph.input[0].type.tensor_type.shape.dim
    assert [d.dim_param or d.dim_value for d in dims] == ["batch", 8]
    assert proto.graph.output[0].name == "logits"
    _agree(model, session, [(dlfree.randn(3, 8),), (dlfree.randn(11, 8),)])


def test_digits_cnn_with_batch_norm_folded_into_its_convolutions():
    dlfree.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                          nn.MaxPool2d(2), nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16),
                          nn.ReLU(), nn.AvgPool2d(2), nn.Flatten(), nn.Linear(16 * 2 * 2, 10),
                          nn.LogSoftmax(-1))
    model = trained(model, dlfree.randn(16, 1, 8, 8))
    proto, session = _session(model, dlfree.randn(2, 1, 8, 8), dynamic_axes=_batch())
    ops = [n.op_type for n in proto.graph.node]
    assert "BatchNormalization" not in ops and ops.count("Conv") == 2
    _agree(model, session, [(dlfree.randn(2, 1, 8, 8),), (dlfree.randn(7, 1, 8, 8),)])


class _ResidualBlock(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)
        self.pool = nn.AdaptiveAvgPool2d(1)

    def forward(self, x):
        y = self.bn1(self.conv1(x)).relu()
        y = self.bn2(self.conv2(y))
        return self.pool((x + y).relu()).flatten(1)


def test_resnet_block_with_folded_batch_norms_and_a_residual():
    dlfree.manual_seed(0)
    model = trained(_ResidualBlock(6), dlfree.randn(8, 6, 6, 6))
    proto, session = _session(model, dlfree.randn(2, 6, 6, 6), dynamic_axes=_batch())
    assert "BatchNormalization" not in {n.op_type for n in proto.graph.node}
    _agree(model, session, [(dlfree.randn(2, 6, 6, 6),), (dlfree.randn(5, 6, 6, 6),)])


@pytest.mark.parametrize("layer", [nn.LSTM, nn.GRU, nn.RNN])
def test_recurrent_layers_as_onnx_nodes_bidirectional_two_layers(layer):
    dlfree.manual_seed(0)
    model = Sequence(layer(5, 7, num_layers=2, bidirectional=True, batch_first=True)).eval()
    proto, session = _session(model, dlfree.randn(2, 4, 5),
                              dynamic_axes=_batch(dims=("batch", "time")))
    onnx_op = {nn.LSTM: "LSTM", nn.GRU: "GRU", nn.RNN: "RNN"}[layer]
    assert [n.op_type for n in proto.graph.node].count(onnx_op) == 4
    _agree(model, session, [(dlfree.randn(2, 4, 5),), (dlfree.randn(3, 9, 5),)], atol=1e-5)


def test_transformer_encoder_with_a_padding_mask_at_two_batches_and_lengths():
    dlfree.manual_seed(0)
    model = Encoder().eval()
    axes = {"x": {0: "batch", 1: "seq"}, "padding": {0: "batch", 1: "seq"}}
    _, session = _session(model, (dlfree.randn(2, 5, 16), padding_mask([5, 3], 5)),
                          input_names=["x", "padding"], dynamic_axes=axes)
    _agree(model, session, [(dlfree.randn(2, 5, 16), padding_mask([5, 3], 5)),
                            (dlfree.randn(4, 9, 16), padding_mask([9, 1, 4, 7], 9))], rtol=1e-4,
           atol=1e-5)


def test_causal_attention_follows_the_sequence_length():
    dlfree.manual_seed(0)

    class Causal(nn.Module):
        def forward(self, q, k, v):
            return nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)

    axes = {n: {2: "seq"} for n in ("q", "k", "v")}
    args = tuple(dlfree.randn(2, 3, 5, 4) for _ in range(3))
    _, session = _session(Causal(), args, input_names=["q", "k", "v"], dynamic_axes=axes)
    _agree(Causal(), session, [args, tuple(dlfree.randn(2, 3, 8, 4) for _ in range(3))])


_ACTIVATIONS = [nn.ReLU(), nn.GELU(), nn.GELU("tanh"), nn.SiLU(), nn.Tanh(), nn.Sigmoid(),
                nn.LeakyReLU(0.2), nn.ELU(0.7), nn.SELU(), nn.CELU(1.3), nn.Hardtanh(-0.5, 2.0),
                nn.Hardsigmoid(), nn.Hardswish(), nn.Mish(), nn.Softplus(2.0, 3.0),
                nn.Softmax(-1), nn.LogSoftmax(1), nn.ReLU6(), nn.Softsign()]


@pytest.mark.parametrize("activation", _ACTIVATIONS, ids=lambda m: type(m).__name__)
def test_activations(activation):
    dlfree.manual_seed(0)
    x = dlfree.randn(4, 6) * 3.0
    _, session = _session(activation, x)
    _agree(activation, session, [(x,)], atol=1e-6)


def test_norms_pools_and_transposed_convolutions():
    dlfree.manual_seed(0)
    model = nn.Sequential(nn.Conv1d(3, 4, 3, stride=2, dilation=2), nn.GroupNorm(2, 4),
                          nn.ConvTranspose1d(4, 6, 3, stride=2, output_padding=1),
                          nn.InstanceNorm1d(6, affine=True), nn.MaxPool1d(2, ceil_mode=False),
                          nn.AvgPool1d(3, stride=1, padding=1, count_include_pad=False),
                          nn.LayerNorm(8), nn.AdaptiveMaxPool1d(1)).eval()
    x = dlfree.randn(2, 3, 17)
    _, session = _session(model, x, dynamic_axes=_batch())
    _agree(model, session, [(x,), (dlfree.randn(5, 3, 17),)], atol=1e-5)


def test_math_reductions_comparisons_and_indexing():
    class Mix(nn.Module):
        def forward(self, x, ids):
            y = (x.exp().log1p() - x.abs().sqrt().rsqrt()) / 3.0 + x.pow(2)
            picked = nn.functional.embedding(ids, x)  # rows of x
            stats = y.mean(1, keepdim=True) + y.var(0).sum() + y.amax(-1, keepdim=True)
            flags = ((x > 0.1) & (x <= 1.5)) | x.isnan()
            out = dlfree.where(flags, y, stats).flip(1)[:, 1:4].cumsum(1)
            return out.argmax(-1), out, picked.sum(-1), y.clamp(-1, 1).floor()

    dlfree.manual_seed(0)
    x, ids = dlfree.randn(5, 6), dlfree.tensor([[0, 4], [2, 2]])
    _, session = _session(Mix(), (x, ids), dynamic_axes={"input_1": {0: "n", 1: "m"}})
    _agree(Mix(), session, [(x, ids), (x, dlfree.tensor([[1, 3, 0]]))], atol=1e-5)


def test_float16_model_exports_in_float16():
    dlfree.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.LayerNorm(16), nn.Linear(16, 4))
    model = model.half().eval()
    x = dlfree.randn(3, 8).half()
    proto, session = _session(model, x)
    assert proto.graph.input[0].type.tensor_type.elem_type == onnx.TensorProto.FLOAT16
    _agree(model, session, [(x,)], rtol=2e-3, atol=2e-3)  # float16's own resolution


def test_opset_18_writes_reduction_axes_as_inputs():
    dlfree.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 4), nn.LayerNorm(4))

    class Mean(nn.Module):
        def forward(self, x):
            return model(x).mean(-1)

    proto, session = _session(Mean().eval(), dlfree.randn(3, 4), opset_version=18)
    reduce = next(n for n in proto.graph.node if n.op_type == "ReduceMean")
    assert len(reduce.input) == 2 and "axes" not in {a.name for a in reduce.attribute}
    _agree(Mean().eval(), session, [(dlfree.randn(3, 4),)])


class Cube(dlfree.autograd.Function):
    """x ** 3: an op the core has no ONNX mapping for."""

    saves = (0,)

    def forward(self, x):
        return x * x * x

    def backward(self, g):
        (x,) = self.saved_tensors
        return (g * 3 * x * x,)


class _CubeLayer(nn.Module):
    def forward(self, x):
        return Cube.apply(x)


def test_an_unmapped_op_is_named_with_its_layer():
    model = nn.Sequential(nn.Linear(3, 3), _CubeLayer())
    with pytest.raises(ExportError, match=r"op cube in layer 1 has no ONNX mapping"):
        dlfree.onnx.export(model, dlfree.randn(2, 3), io.BytesIO())


def test_a_plugin_adds_a_mapping_through_the_hook():
    def cube_to_onnx(ctx):
        x = ctx.inputs[0]
        return ctx.add("Mul", [ctx.add("Mul", [x, x]), x])

    class Plugin:
        @dlfree.hookimpl
        def dlfree_register_onnx_ops(register):
            register(cube_to_onnx, "cube")

    name = dlfree.plugins.register(Plugin)
    try:
        model = nn.Sequential(nn.Linear(3, 3), _CubeLayer()).eval()
        _, session = _session(model, dlfree.randn(2, 3))
        _agree(model, session, [(dlfree.randn(2, 3),)])
        assert dlfree.registry.onnx_ops.provider("cube")["plugin"] == name
    finally:
        dlfree.plugins.unregister(name)


def test_training_mode_restored_and_path_written_atomically(tmp_path):
    model = nn.Sequential(nn.Linear(3, 3), nn.Dropout(0.5))
    path = tmp_path / "model.onnx"
    dlfree.onnx.export(model, dlfree.randn(2, 3), path)
    assert model.training and model[1].training
    assert [p.name for p in tmp_path.iterdir()] == ["model.onnx"]
    assert onnx.load(path).graph.node
    with pytest.raises(ExportError, match="has no ONNX mapping"):
        dlfree.onnx.export(_CubeLayer(), dlfree.randn(2, 3), tmp_path / "bad.onnx")
    assert [p.name for p in tmp_path.iterdir()] == ["model.onnx"]


def test_bad_arguments_say_what_is_valid():
    model = nn.Linear(3, 3)
    with pytest.raises(ValueError, match="opset_version 12 is not supported; valid: 17"):
        dlfree.onnx.export(model, dlfree.randn(2, 3), io.BytesIO(), opset_version=12)
    with pytest.raises(ValueError, match="neither an input nor an output name"):
        dlfree.onnx.export(model, dlfree.randn(2, 3), io.BytesIO(), dynamic_axes={"y": [0]})
    with pytest.raises(ValueError, match="input_names has 2 names"):
        dlfree.onnx.export(model, dlfree.randn(2, 3), io.BytesIO(), input_names=["a", "b"])
