"""Quantized models through ONNX: a fake-quantized (QAT or calibrated) model exports in QDQ
form, which ONNX Runtime runs with int8 kernels (QLinearConv, QGemm) and which agrees with
dl.free's fake-quantized model within one output quantization step; a dynamically quantized
model exports as DynamicQuantizeLinear + MatMulInteger (ONNX Runtime's
DynamicQuantizeMatMul). Both forms import back through `dlfree.onnx.load` and compute what
their ONNX nodes define (ONNX Runtime running the nodes unfused)."""

from __future__ import annotations

import io

import dlfree
import dlfree.nn as nn
from dlfree.nn import quantization as Q

import numpy as np
import onnx
import pytest

ort = pytest.importorskip("onnxruntime")


def _export(model, x):
    buffer = io.BytesIO()
    proto = dlfree.onnx.export(model, x, buffer, dynamic_axes={"input_0": {0: "batch"}})
    return proto, buffer.getvalue()


def _optimized_ops(data, tmp_path) -> list[str]:
    """The op types of the graph ONNX Runtime runs after its (extended) optimizations."""
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    options.optimized_model_filepath = str(tmp_path / "optimized.onnx")
    ort.InferenceSession(data, options, providers=["CPUExecutionProvider"])
    return [n.op_type for n in onnx.load(options.optimized_model_filepath).graph.node]


def _run(data, x, optimize=True):
    """ONNX Runtime's output; without `optimize` it runs each node as written (QDQ nodes as
    such, not fused into int8 kernels), the reference semantics of the ONNX ops."""
    options = ort.SessionOptions()
    if not optimize:
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(data, options, providers=["CPUExecutionProvider"])
    return session.run(None, {"input_0": x.numpy()})[0]


def _qat_cnn(qconfig):
    dlfree.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 8, 3),
                          nn.Flatten(), nn.Linear(8 * 6 * 6, 10))
    model = Q.fuse_modules(model.eval(), [["0", "1"]])
    model = Q.prepare_qat(nn.Sequential(Q.QuantStub(), model).train(), qconfig)
    for _ in range(4):
        model(dlfree.randn(16, 1, 8, 8))
    return Q.convert(model)


def _output_step(model) -> float:
    """The scale of the model's last fake quantizer: one step of its output grid."""
    scale, _ = [m for m in model.modules() if isinstance(m, Q.FakeQuantize)][-1] \
        .calculate_qparams()
    return float(scale)


@pytest.mark.parametrize("qconfig", [Q.default_qat_qconfig, Q.default_per_channel_qat_qconfig],
                         ids=["per-tensor", "per-channel"])
def test_qat_model_exports_as_qdq_and_runs_on_int8_kernels(qconfig, tmp_path):
    model = _qat_cnn(qconfig)
    proto, data = _export(model, dlfree.randn(2, 1, 8, 8))
    ops = [n.op_type for n in proto.graph.node]
    # the input and two activations are quantized; the three weights are stored as int8
    assert ops.count("QuantizeLinear") == 4 and ops.count("DequantizeLinear") == 7
    int8 = [t for t in (n.attribute[0].t for n in proto.graph.node if n.op_type == "Constant")
            if t.data_type == onnx.TensorProto.INT8 and len(t.dims) > 1]
    assert len(int8) == 3
    if qconfig is Q.default_per_channel_qat_qconfig:
        weights = [n for n in proto.graph.node if n.op_type == "DequantizeLinear"
                   and any(a.name == "axis" for a in n.attribute)]
        assert len(weights) == 3
    optimized = _optimized_ops(data, tmp_path)
    assert optimized.count("QLinearConv") == 2 and "QGemm" in optimized
    assert "Conv" not in optimized and "Gemm" not in optimized
    step = _output_step(model)
    for batch in (3, 32):
        x = dlfree.randn(batch, 1, 8, 8)
        with dlfree.no_grad():
            want = model(x).numpy()
        got = _run(data, x)
        # int8 kernels requantize their accumulators: at most one output step apart
        assert np.abs(got - want).max() <= step * 1.001
        assert (got.argmax(1) == want.argmax(1)).mean() >= 0.9


def test_calibrated_model_exports_as_qdq():
    dlfree.manual_seed(0)
    model = nn.Sequential(nn.Linear(12, 24), nn.ReLU(), nn.Linear(24, 5))
    prepared = Q.prepare(nn.Sequential(Q.QuantStub(), model).eval())
    Q.calibrate(prepared, [dlfree.randn(32, 12) for _ in range(4)])
    model = Q.convert(prepared)
    _, data = _export(model, dlfree.randn(2, 12))
    x = dlfree.randn(64, 12)
    with dlfree.no_grad():
        want = model(x).numpy()
    np.testing.assert_allclose(_run(data, x), want, rtol=0, atol=_output_step(model) * 1.001)


@pytest.mark.parametrize("spec", [None, {nn.Linear: Q.per_channel_dynamic_qconfig}],
                         ids=["per-tensor", "per-channel"])
def test_dynamically_quantized_linears_export_to_onnx_dynamic_form(spec, tmp_path):
    dlfree.manual_seed(0)
    float_model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 8, bias=False))
    model = Q.quantize_dynamic(float_model, spec)
    proto, data = _export(model, dlfree.randn(2, 32))
    ops = [n.op_type for n in proto.graph.node]
    assert ops.count("DynamicQuantizeLinear") == 2 and ops.count("MatMulInteger") == 2
    assert _optimized_ops(data, tmp_path).count("DynamicQuantizeMatMul") == 2
    x = dlfree.randn(256, 32)
    with dlfree.no_grad():
        exact, ours = float_model(x).numpy(), model(x).numpy()
    got = _run(data, x)
    ours_error, onnx_error = np.abs(ours - exact), np.abs(got - exact)
    # ONNX's input grid (0..255) is twice as fine as dl.free's (0..127, torch's): its error
    # against the float model is smaller on average, and both are small
    assert onnx_error.mean() < ours_error.mean()
    assert ours_error.max() < 0.05 * np.abs(exact).max()
    assert np.abs(got - ours).max() < 2 * ours_error.max()


def test_quantized_graphs_import_and_run_as_their_onnx_nodes_define():
    qat = _qat_cnn(Q.default_per_channel_qat_qconfig)
    dynamic = Q.quantize_dynamic(nn.Sequential(nn.Linear(16, 8), nn.Tanh(), nn.Linear(8, 3)))
    for model, shape in ((qat, (5, 1, 8, 8)), (dynamic, (7, 16))):
        _, data = _export(model, dlfree.randn(2, *shape[1:]))
        loaded = dlfree.onnx.load(data)
        x = dlfree.randn(*shape)
        with dlfree.no_grad():
            got = loaded(x).numpy()
        np.testing.assert_allclose(got, _run(data, x, optimize=False), rtol=1e-5, atol=1e-6)
