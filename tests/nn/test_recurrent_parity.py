"""RNN, LSTM, GRU and their cells against torch.nn: forward outputs, final states and the
gradients of the input, the initial states and every weight, after copying the weights
torch -> dl.free and dl.free -> torch (float32: forward 1e-5, gradients 1e-4). Double
backward is compared in float64 (1e-10), where it is exact up to rounding."""

from __future__ import annotations

import dlfree as dl
from dlfree.nn import recurrent

import numpy as np
import pytest
import torch

from support.specs import Float
from support.torch_copy import assert_same_state, check_pair, dl_to_torch, to_numpy, torch_to_dl

# torch's own notice that its CPU kernel falls back for projected LSTMs
pytestmark = pytest.mark.filterwarnings("ignore:LSTM with projections is not supported")

T, B, IN, H, P = 5, 3, 4, 6, 3


def _flat(out) -> list:
    """(output, h_n) or (output, (h_n, c_n)) as a flat list."""
    output, state = out
    return [output, *state] if isinstance(state, tuple) else [output, state]


def _pair(layer: str, *args, **kwargs):
    return getattr(recurrent, layer)(*args, **kwargs), getattr(torch.nn, layer)(*args, **kwargs)


def _copy(direction: str, ours, theirs) -> None:
    if direction == "torch_to_dl":
        torch_to_dl(theirs, ours)
    else:
        dl_to_torch(ours, theirs)
    assert_same_state(ours, theirs)


# (id, layer, constructor kwargs, input shape, whether h0 (and c0) are given)
SEQUENCE_CASES = [
    ("rnn_2layer_bidirectional_h0", "RNN", {"num_layers": 2, "bidirectional": True},
     (T, B, IN), True),
    ("rnn_relu_batch_first", "RNN", {"nonlinearity": "relu", "batch_first": True},
     (B, T, IN), True),
    ("rnn_no_bias_no_h0", "RNN", {"bias": False, "num_layers": 2}, (T, B, IN), False),
    ("rnn_unbatched", "RNN", {"bidirectional": True}, (T, IN), True),
    ("lstm_2layer_bidirectional_h0", "LSTM", {"num_layers": 2, "bidirectional": True},
     (T, B, IN), True),
    ("lstm_batch_first_no_h0", "LSTM", {"batch_first": True}, (B, T, IN), False),
    ("lstm_no_bias", "LSTM", {"bias": False, "num_layers": 2}, (T, B, IN), True),
    ("lstm_proj_bidirectional", "LSTM",
     {"proj_size": P, "num_layers": 2, "bidirectional": True}, (T, B, IN), True),
    ("lstm_unbatched", "LSTM", {"num_layers": 2}, (T, IN), True),
    ("lstm_unbatched_batch_first_no_h0", "LSTM", {"batch_first": True}, (T, IN), False),
    ("gru_2layer_bidirectional_h0", "GRU", {"num_layers": 2, "bidirectional": True},
     (T, B, IN), True),
    ("gru_batch_first_no_bias", "GRU", {"batch_first": True, "bias": False}, (B, T, IN),
     True),
    ("gru_no_h0", "GRU", {}, (T, B, IN), False),
    ("gru_unbatched", "GRU", {"bidirectional": True, "num_layers": 2}, (T, IN), True),
]


def _state_specs(layer: str, kwargs: dict, input_shape: tuple) -> list:
    layers = kwargs.get("num_layers", 1) * (2 if kwargs.get("bidirectional") else 1)
    batch = () if len(input_shape) == 2 else (B,)
    specs = [Float((layers, *batch, kwargs.get("proj_size") or H))]
    if layer == "LSTM":
        specs.append(Float((layers, *batch, H)))
    return specs


def _sequence_call(layer: str, with_state: bool):
    if not with_state:
        return lambda module, x: _flat(module(x))
    if layer == "LSTM":
        return lambda module, x, h, c: _flat(module(x, (h, c)))
    return lambda module, x, h: _flat(module(x, h))


@pytest.mark.usefixtures("kernel_path")  # the LSTM's float32 backward step: NumPy and numba
@pytest.mark.parametrize("direction", ["torch_to_dl", "dl_to_torch"])
@pytest.mark.parametrize("case", SEQUENCE_CASES, ids=[c[0] for c in SEQUENCE_CASES])
def test_sequence_layers_match_torch(case, direction, device):
    _, layer, kwargs, input_shape, with_state = case
    ours, theirs = _pair(layer, IN, H, **kwargs)
    _copy(direction, ours, theirs)
    ours.to(device)
    specs = [Float(input_shape)] + (_state_specs(layer, kwargs, input_shape) if with_state
                                    else [])
    check_pair(ours, theirs, specs, call=_sequence_call(layer, with_state), device=device)


@pytest.mark.parametrize("layer", ["RNN", "LSTM", "GRU"])
def test_dropout_between_layers_is_off_in_eval(layer):
    ours, theirs = _pair(layer, IN, H, num_layers=3, dropout=0.5)
    torch_to_dl(theirs, ours)
    ours.eval(), theirs.eval()
    check_pair(ours, theirs, [Float((T, B, IN))], call=lambda m, x: _flat(m(x)))


@pytest.mark.parametrize("layer", ["RNN", "LSTM", "GRU"])
def test_dropout_one_zeroes_the_input_of_later_layers_in_training(layer):
    # p = 1 is the one train-mode dropout whose masks are known: every element is dropped
    ours, theirs = _pair(layer, IN, H, num_layers=2, dropout=1.0)
    torch_to_dl(theirs, ours)
    check_pair(ours, theirs, [Float((T, B, IN))], call=lambda m, x: _flat(m(x)))


def test_train_mode_dropout_acts_only_between_layers_and_follows_the_seed():
    model = recurrent.LSTM(IN, H, num_layers=2, dropout=0.5)
    x = dl.randn(T, B, IN)
    model.eval()
    _, (h_eval, _) = model(x)
    model.train()
    dl.manual_seed(7)
    out_a, (h_a, c_a) = model(x)
    dl.manual_seed(7)
    out_b, _ = model(x)
    dl.manual_seed(8)
    out_c, _ = model(x)
    assert tuple(out_a.shape) == (T, B, H) and tuple(h_a.shape) == tuple(c_a.shape) == (2, B, H)
    np.testing.assert_array_equal(to_numpy(out_a), to_numpy(out_b))
    assert not np.allclose(to_numpy(out_a), to_numpy(out_c))
    # the first layer sees no dropout: its final state is the eval one
    np.testing.assert_allclose(to_numpy(h_a[0]), to_numpy(h_eval[0]), rtol=1e-6, atol=1e-6)
    assert np.abs(to_numpy(h_a[1]) - to_numpy(h_eval[1])).max() > 1e-3


def test_dropout_with_one_layer_warns_as_torch_does():
    with pytest.warns(UserWarning, match="num_layers"):
        recurrent.GRU(IN, H, dropout=0.2)


# (id, layer, constructor kwargs, batched, whether hx is given)
CELL_CASES = [
    ("rnn_cell_tanh", "RNNCell", {}, True, True),
    ("rnn_cell_relu_unbatched", "RNNCell", {"nonlinearity": "relu"}, False, True),
    ("rnn_cell_no_bias_no_hx", "RNNCell", {"bias": False}, True, False),
    ("lstm_cell", "LSTMCell", {}, True, True),
    ("lstm_cell_unbatched_no_hx", "LSTMCell", {}, False, False),
    ("lstm_cell_no_bias", "LSTMCell", {"bias": False}, True, True),
    ("gru_cell", "GRUCell", {}, True, True),
    ("gru_cell_unbatched", "GRUCell", {}, False, True),
    ("gru_cell_no_bias_no_hx", "GRUCell", {"bias": False}, True, False),
]


@pytest.mark.parametrize("direction", ["torch_to_dl", "dl_to_torch"])
@pytest.mark.parametrize("case", CELL_CASES, ids=[c[0] for c in CELL_CASES])
def test_cells_match_torch(case, direction, device):
    _, layer, kwargs, batched, with_state = case
    ours, theirs = _pair(layer, IN, H, **kwargs)
    _copy(direction, ours, theirs)
    ours.to(device)
    batch = (B,) if batched else ()
    specs = [Float((*batch, IN))]
    if with_state:
        specs += [Float((*batch, H))] * (2 if layer == "LSTMCell" else 1)
    if not with_state:
        call = None
    elif layer == "LSTMCell":
        def call(module, x, h, c):
            return module(x, (h, c))
    else:
        def call(module, x, h):
            return module(x, h)
    check_pair(ours, theirs, specs, call=call, device=device)


@pytest.mark.parametrize("layer,kwargs", [("RNN", {"nonlinearity": "relu"}), ("GRU", {}),
                                          ("LSTM", {"proj_size": P})])
def test_double_backward_matches_torch(layer, kwargs):
    ours, theirs = _pair(layer, IN, H, bidirectional=True, **kwargs)
    theirs.double()
    ours.to(dl.float64)
    torch_to_dl(theirs, ours)
    x = np.random.default_rng(0).standard_normal((T, B, IN))
    ours_x, theirs_x = dl.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    (ours_g,) = dl.autograd.grad((ours(ours_x)[0] ** 2).sum(), ours_x, create_graph=True)
    (theirs_g,) = torch.autograd.grad((theirs(theirs_x)[0] ** 2).sum(), theirs_x,
                                      create_graph=True)
    np.testing.assert_allclose(to_numpy(ours_g), to_numpy(theirs_g), rtol=1e-10, atol=1e-10)
    (ours_g ** 2).sum().backward()
    (theirs_g ** 2).sum().backward()
    np.testing.assert_allclose(to_numpy(ours_x.grad), to_numpy(theirs_x.grad), rtol=1e-10,
                               atol=1e-10)
    for (name, p), q in zip(theirs.named_parameters(), ours.parameters()):
        np.testing.assert_allclose(to_numpy(q.grad), to_numpy(p.grad), rtol=1e-10,
                                   atol=1e-10, err_msg=name)


def test_state_dict_names_and_order_match_torch():
    ours, theirs = _pair("LSTM", IN, H, num_layers=2, bidirectional=True, proj_size=P)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert [[tuple(p.shape) for p in ws] for ws in ours.all_weights] == \
        [[tuple(p.shape) for p in ws] for ws in theirs.all_weights]
    assert repr(ours) == repr(theirs)
    for layer in ("RNNCell", "LSTMCell", "GRUCell"):
        ours, theirs = _pair(layer, IN, H, bias=False)
        assert list(ours.state_dict()) == list(theirs.state_dict())
        assert repr(ours) == repr(theirs)


@pytest.mark.parametrize("layer", ["RNN", "LSTM", "GRU", "RNNCell", "LSTMCell", "GRUCell"])
def test_initialisation_is_uniform_within_one_over_sqrt_hidden(layer):
    dl.manual_seed(0)
    model = getattr(recurrent, layer)(IN, 64)
    bound = 1 / np.sqrt(64)
    values = np.concatenate([to_numpy(p).ravel() for p in model.parameters()])
    assert np.abs(values).max() <= bound
    # U(-b, b) has mean 0 and standard deviation b / sqrt(3)
    assert abs(values.mean()) < 0.05 * bound
    assert abs(values.std() - bound / np.sqrt(3)) < 0.05 * bound


def test_rebuilds_from_its_recorded_config():
    model = recurrent.LSTM(IN, H, num_layers=2, batch_first=True, proj_size=P,
                           bidirectional=True)
    config = model.get_config()
    assert config["proj_size"] == P and config["batch_first"] is True
    twin = recurrent.LSTM(**config)
    twin.load_state_dict(model.state_dict())
    x = dl.randn(B, T, IN)
    np.testing.assert_array_equal(to_numpy(twin(x)[0]), to_numpy(model(x)[0]))


def test_model_file_round_trip(tmp_path):
    model = recurrent.GRU(IN, H, num_layers=2, bidirectional=True, dtype=dl.float64)
    dl.save(model, tmp_path / "gru.safetensors")
    loaded = dl.load(tmp_path / "gru.safetensors")
    assert type(loaded) is recurrent.GRU and loaded.get_config() == model.get_config()
    x = dl.randn(T, B, IN, dtype=dl.float64)
    for ours, theirs in zip(_flat(loaded(x)), _flat(model(x))):
        np.testing.assert_array_equal(to_numpy(ours), to_numpy(theirs))


@pytest.mark.parametrize("build,call,error,match", [
    (lambda: recurrent.GRU(IN, H), lambda m: m(dl.randn(T, B, IN + 1)), dl.ShapeError,
     "input of shape"),
    (lambda: recurrent.GRU(IN, H), lambda m: m(dl.randn(B, IN, 2, 2)), dl.ShapeError,
     "input of shape"),
    (lambda: recurrent.RNN(IN, H, batch_first=True), lambda m: m(dl.randn(B, 0, IN)),
     dl.ShapeError, "at least one time step"),
    (lambda: recurrent.RNN(IN, H, num_layers=2), lambda m: m(dl.randn(T, B, IN), dl.zeros(1, B, H)),
     dl.ShapeError, r"hx of shape \(2, 3, 6\)"),
    (lambda: recurrent.LSTM(IN, H), lambda m: m(dl.randn(T, B, IN), dl.zeros(1, B, H)),
     TypeError, r"tuple \(h0, c0\)"),
    (lambda: recurrent.LSTM(IN, H),
     lambda m: m(dl.randn(T, IN), (dl.zeros(1, H), dl.zeros(1, 1, H))), dl.ShapeError,
     "c0 of shape"),
    (lambda: recurrent.LSTM(IN, H), lambda m: m(dl.randn(T, B, IN, dtype=dl.float64)),
     dl.DTypeError, "does not match"),
    (lambda: recurrent.GRUCell(IN, H), lambda m: m(dl.randn(B, IN), dl.zeros(B + 1, H)),
     dl.ShapeError, "state of shape"),
    (lambda: recurrent.LSTMCell(IN, H), lambda m: m(dl.randn(B, IN, 1)), dl.ShapeError,
     "input of shape"),
    (lambda: recurrent.RNN(IN, H, nonlinearity="sigmoid"), None, ValueError, "nonlinearity"),
    (lambda: recurrent.RNNCell(IN, H, nonlinearity="gelu"), None, ValueError, "nonlinearity"),
    (lambda: recurrent.LSTM(IN, H, proj_size=H), None, ValueError, "smaller than hidden_size"),
    (lambda: recurrent.RNNBase("GRU", IN, H, proj_size=2), None, ValueError,
     "only supported by LSTM"),
    (lambda: recurrent.GRU(IN, H, dropout=1.5), None, ValueError, r"\[0, 1\]"),
    (lambda: recurrent.GRU(IN, 0), None, ValueError, "hidden_size"),
    (lambda: recurrent.GRU(IN, H, bidirectional=1), None, TypeError, "bidirectional"),
])
def test_bad_arguments_raise_clear_errors(build, call, error, match):
    with pytest.raises(error, match=match):
        call(build()) if call is not None else build()
