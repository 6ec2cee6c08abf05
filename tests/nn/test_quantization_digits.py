"""Quantization-aware training on scikit-learn's 8x8 digits keeps the float model's held-out
accuracy within one point, for an MLP and for the examples' CNN (Conv-ReLU fused); exported
in QDQ form, ONNX Runtime runs it with int8 kernels and predicts as dl.free's fake-quantized
model on at least 99 % of the held-out digits."""

import importlib.util
import io
import tempfile
from pathlib import Path

import dlfree as dl
from dlfree import nn, optim
from dlfree.data.datasets import Digits
from dlfree.nn import quantization as Q

import numpy as np
import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "train_digits.py"


def _small_cnn(channels):
    spec = importlib.util.spec_from_file_location("train_digits", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.small_cnn(channels)


def _data(images):
    """(x_train, y_train, x_test, y_test), 80/20 with a fixed seed, standardised."""
    digits = Digits()
    x = digits.data.astype(np.float32) / 16
    y = np.asarray(digits.targets, dtype=np.int64)
    order = np.random.default_rng(0).permutation(len(x))
    cut = int(0.8 * len(x))
    train, test = order[:cut], order[cut:]
    x = (x - x[train].mean()) / x[train].std()
    x = x.reshape(-1, 1, 8, 8) if images else x.reshape(len(x), -1)
    return x[train], y[train], x[test], y[test]


def _fit(model, x, y, epochs, lr, seed=0):
    opt = optim.AdamW(model.parameters(), lr=lr)
    rng = np.random.default_rng(seed)
    model.train()
    for _ in range(epochs):
        for idx in np.array_split(rng.permutation(len(x)), len(x) // 64):
            loss = nn.functional.cross_entropy(model(dl.tensor(x[idx])), dl.tensor(y[idx]))
            opt.zero_grad()
            loss.backward()
            opt.step()
    return model


def _accuracy(model, x, y):
    model.eval()
    with dl.no_grad():
        return float((model(dl.tensor(x)).numpy().argmax(1) == y).mean())


def _qat_vs_float(model, groups, images, epochs, qat_epochs):
    xtr, ytr, xte, yte = _data(images)
    dl.manual_seed(0)
    model = _fit(model, xtr, ytr, epochs, 3e-3)
    float_acc = _accuracy(model, xte, yte)
    fused = Q.fuse_modules(model.eval(), groups)
    qat = Q.prepare_qat(nn.Sequential(Q.QuantStub(), fused).train())
    qat = Q.convert(_fit(qat, xtr, ytr, qat_epochs, 5e-4, seed=1))
    qat_acc = _accuracy(qat, xte, yte)
    fake_quantized = [m for m in qat.modules() if isinstance(m, Q.FakeQuantize)]
    assert fake_quantized and all(not m.observer_enabled for m in fake_quantized)
    _assert_onnx_runtime_int8_agrees(qat, xte, int8_ops=3 if images else 2)
    return float_acc, qat_acc


def _assert_onnx_runtime_int8_agrees(model, x, int8_ops):
    """Export `model` in QDQ form; ONNX Runtime's optimized graph holds `int8_ops` int8
    kernels (QLinearConv, QGemm, QLinearMatMul) and no float Conv/Gemm/MatMul, and its
    predictions on `x` are dl.free's on >= 99 % of the rows."""
    ort = pytest.importorskip("onnxruntime")
    onnx = pytest.importorskip("onnx")
    buffer = io.BytesIO()
    dl.onnx.export(model, dl.tensor(x[:2]), buffer, dynamic_axes={"input_0": {0: "batch"}})
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    with tempfile.TemporaryDirectory() as folder:
        options.optimized_model_filepath = str(Path(folder) / "optimized.onnx")
        session = ort.InferenceSession(buffer.getvalue(), options,
                                       providers=["CPUExecutionProvider"])
        ops = [n.op_type for n in onnx.load(options.optimized_model_filepath).graph.node]
    assert sum(op in ("QLinearConv", "QGemm", "QLinearMatMul") for op in ops) == int8_ops, ops
    assert not {"Conv", "Gemm", "MatMul"} & set(ops), ops
    with dl.no_grad():
        ours = model(dl.tensor(x)).numpy().argmax(1)
    theirs = session.run(None, {"input_0": x})[0].argmax(1)
    assert (ours == theirs).mean() >= 0.99, (ours == theirs).mean()


def test_qat_mlp_on_digits_keeps_accuracy():
    dl.manual_seed(0)
    mlp = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))
    float_acc, qat_acc = _qat_vs_float(mlp, [["0", "1"]], images=False, epochs=4, qat_epochs=1)
    assert float_acc > 0.9
    assert qat_acc >= float_acc - 0.01, (float_acc, qat_acc)


def test_qat_cnn_on_digits_keeps_accuracy():
    dl.manual_seed(0)
    cnn = _small_cnn(16)
    float_acc, qat_acc = _qat_vs_float(cnn, [["0", "1"], ["3", "4"]], images=True, epochs=6,
                                       qat_epochs=2)
    assert float_acc > 0.95
    assert qat_acc >= float_acc - 0.01, (float_acc, qat_acc)
