"""`dlfree.onnx.load`: an ONNX model as a dl.free module. Round trips (dl.free → ONNX →
dl.free) give the original model's outputs (float32, 1e-5 relative; 1e-4 for transformer
stacks) at sizes other than the exported one; a model torch exported loads and matches
torch; the loaded parameters train; unknown ops and damaged files are refused."""

from __future__ import annotations

import io
import warnings

import dlfree
import dlfree.nn as nn
from dlfree.errors import CheckpointError, ExportError

import numpy as np
import pytest
from onnx import TensorProto, helper

from support.export_models import Encoder, Sequence, padding_mask, trained


def _round_trip(model, args, **kwargs):
    buffer = io.BytesIO()
    dlfree.onnx.export(model, args, buffer, **kwargs)
    return dlfree.onnx.load(buffer.getvalue())


def _same(model, loaded, calls, rtol=1e-5, atol=1e-6):
    for args in calls:
        with dlfree.no_grad():
            want, got = model(*args), loaded(*args)
        want = want if isinstance(want, tuple) else (want,)
        got = got if isinstance(got, tuple) else (got,)
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=rtol, atol=atol)


def test_mlp_round_trip_at_two_batch_sizes_from_a_file(tmp_path):
    dlfree.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 4), nn.LogSoftmax(-1))
    model.eval()
    path = tmp_path / "mlp.onnx"
    dlfree.onnx.export(model, dlfree.randn(3, 8), path, dynamic_axes={"input_0": {0: "b"}})
    loaded = dlfree.onnx.load(path)
    assert isinstance(loaded, nn.Module)
    assert sum(p.numel() for p in loaded.parameters()) == \
        sum(p.numel() for p in model.parameters())
    _same(model, loaded, [(dlfree.randn(3, 8),), (dlfree.randn(10, 8),)])


def test_digits_cnn_round_trip():
    dlfree.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                          nn.MaxPool2d(2), nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(),
                          nn.AvgPool2d(2), nn.Flatten(), nn.Linear(16 * 2 * 2, 10))
    model = trained(model, dlfree.randn(16, 1, 8, 8))
    loaded = _round_trip(model, dlfree.randn(2, 1, 8, 8),
                         dynamic_axes={"input_0": {0: "batch"}})
    _same(model, loaded, [(dlfree.randn(2, 1, 8, 8),), (dlfree.randn(5, 1, 8, 8),)],
          atol=1e-5)


def test_transposed_convolutions_norms_and_pools_round_trip():
    dlfree.manual_seed(0)
    model = nn.Sequential(nn.Conv1d(3, 4, 3, stride=2, dilation=2), nn.GroupNorm(2, 4),
                          nn.ConvTranspose1d(4, 6, 3, stride=2, output_padding=1),
                          nn.MaxPool1d(2), nn.AvgPool1d(3, stride=1, padding=1,
                                                        count_include_pad=False),
                          nn.LayerNorm(8), nn.SELU(), nn.Hardswish()).eval()
    loaded = _round_trip(model, dlfree.randn(2, 3, 17))
    _same(model, loaded, [(dlfree.randn(2, 3, 17),)], atol=1e-5)


@pytest.mark.parametrize("layer", [nn.LSTM, nn.GRU, nn.RNN])
def test_recurrent_nodes_round_trip_bidirectional_two_layers(layer):
    dlfree.manual_seed(0)
    model = Sequence(layer(5, 7, num_layers=2, bidirectional=True, batch_first=True)).eval()
    loaded = _round_trip(model, dlfree.randn(2, 4, 5),
                         dynamic_axes={"input_0": {0: "batch", 1: "time"}})
    _same(model, loaded, [(dlfree.randn(2, 4, 5),), (dlfree.randn(3, 9, 5),)], atol=1e-5)


def test_transformer_encoder_with_padding_round_trip():
    dlfree.manual_seed(0)
    model = Encoder().eval()
    axes = {"x": {0: "batch", 1: "seq"}, "padding": {0: "batch", 1: "seq"}}
    loaded = _round_trip(model, (dlfree.randn(2, 5, 16), padding_mask([5, 3], 5)),
                         input_names=["x", "padding"], dynamic_axes=axes)
    _same(model, loaded, [(dlfree.randn(2, 5, 16), padding_mask([5, 3], 5)),
                          (dlfree.randn(3, 7, 16), padding_mask([7, 2, 4], 7))],
          rtol=1e-4, atol=1e-5)


def test_a_model_torch_exported_loads_and_matches_torch():
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.BatchNorm2d(4),
                              torch.nn.ReLU(), torch.nn.MaxPool2d(2), torch.nn.Flatten(),
                              torch.nn.Linear(4 * 4 * 4, 5), torch.nn.Softmax(-1)).eval()
    buffer = io.BytesIO()
    x = torch.randn(2, 3, 8, 8)
    with warnings.catch_warnings():  # the TorchScript exporter: no onnxscript needed
        warnings.simplefilter("ignore", DeprecationWarning)
        torch.onnx.export(net, (x,), buffer, dynamo=False, input_names=["x"],
                          dynamic_axes={"x": {0: "batch"}}, opset_version=17)
    loaded = dlfree.onnx.load(buffer.getvalue())
    for batch in (2, 6):
        x = torch.randn(batch, 3, 8, 8)
        with torch.no_grad():
            want = net(x).numpy()
        got = loaded(dlfree.tensor(x.numpy()))
        np.testing.assert_allclose(np.asarray(got.detach()), want, rtol=1e-5, atol=1e-6)


def test_a_loaded_model_fine_tunes_and_saves(tmp_path):
    dlfree.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 1))
    loaded = _round_trip(model.eval(), dlfree.randn(2, 4), dynamic_axes={"input_0": {0: "b"}})
    x = dlfree.randn(64, 4)
    y = (x[:, :1] * 2.0 - x[:, 1:2]).detach()
    params = list(loaded.parameters())
    assert params and all(p.requires_grad for p in params)
    optimizer = dlfree.optim.SGD(params, lr=0.1)
    losses = []
    for _ in range(30):
        loss = ((loaded(x) - y) ** 2).mean()
        optimizer.zero_grad()
        loss.backward()
        assert all(p.grad is not None for p in params)
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0]
    # the tuned weights save as a state_dict file and restore into a fresh load
    dlfree.save(loaded.state_dict(), tmp_path / "tuned.safetensors")
    fresh = _round_trip(model, dlfree.randn(2, 4), dynamic_axes={"input_0": {0: "b"}})
    fresh.load_state_dict(dlfree.load(tmp_path / "tuned.safetensors"))
    np.testing.assert_array_equal(np.asarray(fresh(x).detach()), np.asarray(loaded(x).detach()))
    # the tuned model exports to ONNX again; a whole-model file is refused, saying so
    again = _round_trip(loaded.eval(), dlfree.randn(2, 4), dynamic_axes={"input_0": {0: "b"}})
    np.testing.assert_allclose(np.asarray(again(x).detach()), np.asarray(loaded(x).detach()),
                               rtol=1e-6, atol=1e-6)
    with pytest.raises(CheckpointError, match=r"saved as ONNX: dl.onnx.export"):
        dlfree.save(loaded, tmp_path / "tuned.dlf")
    assert not (tmp_path / "tuned.dlf").exists()


def _model(node, inputs, outputs):
    graph = helper.make_graph([node], "g", inputs, outputs)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_an_unknown_op_is_refused_by_name():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
    model = _model(helper.make_node("Hardmax", ["x"], ["y"]), [x], [y])
    with pytest.raises(ExportError, match=r"Hardmax.*supported: .*Conv"):
        dlfree.onnx.load(model.SerializeToString())


def test_damaged_files_are_checkpoint_errors(tmp_path):
    dlfree.manual_seed(0)
    buffer = io.BytesIO()
    dlfree.onnx.export(nn.Linear(3, 2).eval(), dlfree.randn(1, 3), buffer)
    path = tmp_path / "cut.onnx"
    path.write_bytes(buffer.getvalue()[: len(buffer.getvalue()) // 2])
    with pytest.raises(CheckpointError, match="cut.onnx"):
        dlfree.onnx.load(path)
    with pytest.raises(CheckpointError, match="not a valid ONNX model"):
        dlfree.onnx.load(b"\x00\x01 not onnx")
    with pytest.raises(FileNotFoundError):
        dlfree.onnx.load(tmp_path / "missing.onnx")


class _Maths(nn.Module):
    """Elementwise functions, reductions, arg picks, a cast and an Lp pool in one graph."""

    def forward(self, x):
        y = x.asin() + x.acos() * x.atan() + x.tan() - x.sinh() + x.cosh() + x.asinh()
        y = y + x.atanh() + (x + 2.0).acosh() + dlfree.nn.functional.hardswish(x * 4)
        pooled = dlfree.nn.functional.lp_pool1d(x.abs(), 2, 2)
        picks = x.argmin(-1, keepdim=True) + x.argmax(-1, keepdim=True)
        return y.logsumexp(-1), pooled, picks, (x > 0).to(dlfree.float32).sum(-1)


def test_maths_ops_round_trip_against_onnx_runtime():
    ort = pytest.importorskip("onnxruntime")
    dlfree.manual_seed(0)
    x = dlfree.rand(3, 8) * 1.8 - 0.9
    buffer = io.BytesIO()
    dlfree.onnx.export(_Maths(), x, buffer, dynamic_axes={"input_0": {0: "b"}})
    loaded = dlfree.onnx.load(buffer.getvalue())
    session = ort.InferenceSession(buffer.getvalue(), providers=["CPUExecutionProvider"])
    for batch in (3, 5):
        x = dlfree.rand(batch, 8) * 1.8 - 0.9
        want = session.run(None, {"input_0": x.numpy()})
        got = loaded(x)
        assert len(got) == len(want) == 4
        for g, w in zip(got, want, strict=True):
            assert np.asarray(g).dtype == w.dtype
            np.testing.assert_allclose(np.asarray(g), w, rtol=1e-5, atol=1e-5)
