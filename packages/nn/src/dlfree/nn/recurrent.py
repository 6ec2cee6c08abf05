"""Recurrent layers over whole sequences (`RNN`, `LSTM`, `GRU`) and their one-step cells
(`RNNCell`, `LSTMCell`, `GRUCell`), with torch.nn's arguments, weight names and initialisation.
The sequence layers also take packed sequences (`nn.utils.rnn.PackedSequence`).
"""

from __future__ import annotations

import math
import numbers
import warnings

import dlfree as dl
from dlfree import DTypeError, ShapeError
from dlfree import functional as F
from dlfree.ops.recurrent import recurrence

import numpy as np

from . import init
from .layers._common import check_count, empty_parameter
from .module import Module
from .utils.rnn import PackedSequence, pack_padded_sequence, pad_packed_sequence

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


# ------------------------------------------------------------------ sequence layers
def _check_dropout(dropout, layer: str) -> float:
    if isinstance(dropout, bool) or not isinstance(dropout, numbers.Real) or \
            not 0 <= dropout <= 1:
        raise ValueError(f"{layer}: dropout must be a number in [0, 1] (the probability of "
                         f"zeroing an element), got {dropout!r}")
    return float(dropout)


def _check_flag(value, name: str, layer: str) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{layer}: {name} must be a bool, got {type(value).__name__}")
    return value


class RNNBase(Module):
    """What `RNN`, `LSTM` and `GRU` share: one weight set per layer and direction named as
    torch names them (`weight_ih_l0`, `weight_hh_l0_reverse`, `bias_ih_l1`, `weight_hr_l0`),
    all drawn from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)), and the loop over layers.

    `mode` is "RNN_TANH", "RNN_RELU", "LSTM" or "GRU". Each layer-direction computes the
    input's share of its gates for all time steps with one GEMM, then runs the recurrence
    (one GEMM per step). `dropout` applies between layers, in training mode only.
    """

    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, proj_size: int = 0, device=None, dtype=None):
        super().__init__()
        name = {"RNN_TANH": "RNN", "RNN_RELU": "RNN"}.get(mode, mode)
        if mode not in _GATES:
            raise ValueError(f"RNNBase: unknown mode {mode!r}; valid: {', '.join(_GATES)}")
        self.mode = mode
        self.input_size = check_count(input_size, "input_size", name)
        self.hidden_size = check_count(hidden_size, "hidden_size", name)
        self.num_layers = check_count(num_layers, "num_layers", name)
        self.bias = _check_flag(bias, "bias", name)
        self.batch_first = _check_flag(batch_first, "batch_first", name)
        self.dropout = _check_dropout(dropout, name)
        self.bidirectional = _check_flag(bidirectional, "bidirectional", name)
        self.proj_size = check_count(proj_size, "proj_size", name, 0)
        if proj_size and mode != "LSTM":
            raise ValueError(f"{name}: proj_size is only supported by LSTM, got {proj_size}")
        if proj_size >= hidden_size:
            raise ValueError(f"{name}: proj_size ({proj_size}) has to be smaller than "
                             f"hidden_size ({hidden_size})")
        if dropout > 0 and num_layers == 1:
            warnings.warn(f"{name}: dropout is applied between recurrent layers, so a non-zero "
                          f"dropout expects num_layers > 1, but got dropout={dropout} and "
                          f"num_layers={num_layers}", UserWarning, stacklevel=3)
        gates = _GATES[mode] * hidden_size
        out_size = proj_size or hidden_size
        self._all_weights = []
        for layer in range(num_layers):
            for direction in range(self._directions):
                suffix = f"_l{layer}" + ("_reverse" if direction else "")
                in_size = input_size if layer == 0 else out_size * self._directions
                shapes = {"weight_ih": (gates, in_size), "weight_hh": (gates, out_size)}
                if bias:
                    shapes.update(bias_ih=(gates,), bias_hh=(gates,))
                if proj_size:
                    shapes["weight_hr"] = (proj_size, hidden_size)
                for kind, shape in shapes.items():
                    setattr(self, kind + suffix,
                            empty_parameter(*shape, device=device, dtype=dtype))
                self._all_weights.append([kind + suffix for kind in shapes])
        self.reset_parameters()

    @property
    def _directions(self) -> int:
        return 2 if self.bidirectional else 1

    @property
    def all_weights(self) -> list:
        """The parameters of each layer-direction, in torch's order."""
        return [[getattr(self, name) for name in names] for names in self._all_weights]

    def reset_parameters(self) -> None:
        bound = 1.0 / math.sqrt(self.hidden_size)
        for weight in self.parameters():
            init.uniform_(weight, -bound, bound)

    def flatten_parameters(self) -> None:
        """Does nothing: torch packs the weights for cuDNN here, dl.free uses them in place."""

    def forward(self, input, hx=None):
        """Run the whole sequence. `input` is (T, B, input_size), (B, T, input_size) when
        `batch_first`, unbatched (T, input_size), or a `PackedSequence` (nn.utils.rnn) of
        sequences of different lengths; `hx` the initial state (zeros when None),
        (num_layers * num_directions, B, hidden) or unbatched without the B dim; an LSTM
        takes and returns (h, c). Returns (output, h_n) or (output, (h_n, c_n)); for packed
        input the output is packed the same way and h_n holds each sequence's state at its
        own last step."""
        name = type(self).__name__
        if isinstance(input, PackedSequence):
            return self._forward_packed(input, hx, name)
        x, batch, unbatched = self._time_major(input, name, self.batch_first)
        h0, c0 = self._initial_state(hx, x, batch, unbatched, name)
        output, state = self._layers(x, h0, c0)
        if self.batch_first and not unbatched:
            output = output.transpose(0, 1)
        if unbatched:
            output, state = output.squeeze(1), [s.squeeze(1) for s in state]
        return output, (tuple(state) if c0 is not None else state[0])

    def _layers(self, x, h0, c0) -> tuple:
        """The stack of layers over time-major x from states h0 (and c0 for an LSTM):
        the last layer's output (T, B, out) and the final states [h_n] or [h_n, c_n]."""
        hidden_finals, cell_finals = [], []
        out_size = self.proj_size or self.hidden_size
        for layer in range(self.num_layers):
            outputs = []
            for direction in range(self._directions):
                index = layer * self._directions + direction
                weights = [getattr(self, n) for n in self._all_weights[index]]
                w_ih, w_hh = weights[:2]
                b_ih, b_hh = weights[2:4] if self.bias else (None, None)
                xs = F.linear(x, w_ih, b_ih)
                y = recurrence(self.mode, xs, h0[index], None if c0 is None else c0[index],
                                w_hh, b_hh, weights[-1] if self.proj_size else None,
                                reverse=bool(direction))
                last = 0 if direction else -1
                hidden_finals.append(y[last, :, :out_size])
                if c0 is not None:
                    cell_finals.append(y[last, :, out_size:])
                    y = y[..., :out_size]
                outputs.append(y)
            x = outputs[0] if len(outputs) == 1 else dl.cat(outputs, -1)
            if self.dropout and self.training and layer < self.num_layers - 1:
                x = F.dropout(x, self.dropout, True)
        state = [dl.stack(hidden_finals)] + ([dl.stack(cell_finals)] if c0 is not None else [])
        return x, state

    def _forward_packed(self, packed: PackedSequence, hx, name: str) -> tuple:
        """Packed input: the sequences of each length run together as one batch over exactly
        their own steps (so the reverse direction starts at each one's end), then the
        outputs are packed as the input was and the states put back in the input's order."""
        padded, lengths = pad_packed_sequence(packed)
        x, batch, _ = self._time_major(padded, name, batch_first=False)
        h0, c0 = self._initial_state(hx, x, batch, False, name)
        by_length: dict[int, list[int]] = {}
        for b, n in enumerate(lengths.tolist()):
            by_length.setdefault(n, []).append(b)
        steps = x.shape[0]
        outputs, states, members = [], [], []
        for n, rows in by_length.items():
            index = dl.tensor(rows, device=x.device)
            out, state = self._layers(x[:n, index], h0[:, index],
                                      None if c0 is None else c0[:, index])
            if n < steps:
                out = dl.cat([out, dl.zeros(steps - n, *out.shape[1:], dtype=out.dtype,
                                            device=out.device)])
            outputs.append(out)
            states.append(state)
            members.extend(rows)
        back = dl.tensor(np.argsort(members), device=x.device)
        output = dl.cat(outputs, 1)[:, back]
        state = [dl.cat([s[i] for s in states], 1)[:, back] for i in range(len(states[0]))]
        output = pack_padded_sequence(output, lengths, enforce_sorted=packed.sorted_indices
                                      is None)
        return output, (tuple(state) if c0 is not None else state[0])

    def _time_major(self, input, name: str, batch_first: bool) -> tuple:
        """The input as (T, B, input_size), the batch size, and whether it was unbatched."""
        if not isinstance(input, dl.Tensor):
            raise TypeError(f"{name}: input must be a Tensor or a PackedSequence, got "
                            f"{type(input).__name__}")
        if input.ndim not in (2, 3) or input.shape[-1] != self.input_size:
            raise ShapeError(f"{name}: expected input of shape (T, B, {self.input_size}), "
                             f"(B, T, {self.input_size}) with batch_first, or unbatched "
                             f"(T, {self.input_size}); got {tuple(input.shape)}")
        if input.shape[1 if input.ndim == 3 and batch_first else 0] == 0:
            raise ShapeError(f"{name}: the input sequence is empty (shape "
                             f"{tuple(input.shape)}); it needs at least one time step")
        weight = self.weight_ih_l0
        if input.dtype != weight.dtype:
            raise DTypeError(f"{name}: input dtype {input.dtype} does not match the weights' "
                             f"{weight.dtype}; convert the input with .to({weight.dtype}) "
                             f"or the model with .to({input.dtype})")
        if input.ndim == 2:
            return input.unsqueeze(1), 1, True
        x = input.transpose(0, 1) if batch_first else input
        return x, x.shape[1], False

    def _initial_state(self, hx, x, batch: int, unbatched: bool, name: str) -> tuple:
        """(h0, c0) as (num_layers * num_directions, B, size) tensors; c0 is None unless an
        LSTM. Missing states are zeros."""
        lstm = self.mode == "LSTM"
        layers = self.num_layers * self._directions
        sizes = [self.proj_size or self.hidden_size] + ([self.hidden_size] if lstm else [])
        if hx is None:
            states = [dl.zeros(layers, batch, size, dtype=x.dtype, device=x.device)
                      for size in sizes]
            return states[0], states[1] if lstm else None
        if lstm and (not isinstance(hx, (tuple, list)) or len(hx) != 2):
            raise TypeError(f"{name}: hx must be a tuple (h0, c0) of tensors, got "
                            f"{type(hx).__name__}")
        states = list(hx) if lstm else [hx]
        for i, (state, size) in enumerate(zip(states, sizes)):
            expected = (layers, size) if unbatched else (layers, batch, size)
            if tuple(state.shape) != expected:
                what = ("h0", "c0")[i] if lstm else "hx"
                raise ShapeError(f"{name}: expected {what} of shape {expected} "
                                 f"(num_layers * num_directions, {'' if unbatched else 'B, '}"
                                 f"size) for input of shape {tuple(x.shape)}, got "
                                 f"{tuple(state.shape)}")
        if unbatched:
            states = [state.unsqueeze(1) for state in states]
        return states[0], states[1] if lstm else None

    def extra_repr(self) -> str:
        text = f"{self.input_size}, {self.hidden_size}"
        for key, default in (("proj_size", 0), ("num_layers", 1), ("bias", True),
                             ("batch_first", False), ("dropout", 0), ("bidirectional", False)):
            if getattr(self, key) != default:
                text += f", {key}={getattr(self, key)}"
        return text


class RNN(RNNBase):
    """An Elman RNN: h_t = tanh(x_t W_ihᵀ + b_ih + h_{t-1} W_hhᵀ + b_hh), or relu with
    nonlinearity="relu", stacked `num_layers` deep, optionally in both directions."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 nonlinearity: str = "tanh", bias: bool = True, batch_first: bool = False,
                 dropout: float = 0.0, bidirectional: bool = False, device=None, dtype=None):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"RNN: unknown nonlinearity {nonlinearity!r}; valid: 'tanh', "
                             "'relu'")
        super().__init__("RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU", input_size,
                         hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         device=device, dtype=dtype)
        self.nonlinearity = nonlinearity

    def extra_repr(self) -> str:
        text = super().extra_repr()
        return text if self.nonlinearity == "tanh" else text + ", nonlinearity='relu'"


class LSTM(RNNBase):
    """A long short-term memory layer (gates i, f, g, o in that order in the weights):
    c_t = f ⊙ c_{t-1} + i ⊙ g, h_t = o ⊙ tanh(c_t), with h_t projected by W_hr to
    `proj_size` features when proj_size > 0."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, proj_size: int = 0, device=None, dtype=None):
        super().__init__("LSTM", input_size, hidden_size, num_layers, bias, batch_first,
                         dropout, bidirectional, proj_size, device=device, dtype=dtype)


class GRU(RNNBase):
    """A gated recurrent unit layer (gates r, z, n in that order in the weights):
    n = tanh(x W_inᵀ + b_in + r ⊙ (h W_hnᵀ + b_hn)), h_t = (1 - z) ⊙ n + z ⊙ h_{t-1}."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, device=None, dtype=None):
        super().__init__("GRU", input_size, hidden_size, num_layers, bias, batch_first,
                         dropout, bidirectional, device=device, dtype=dtype)


# --------------------------------------------------------------------------- cells
class RNNCellBase(Module):
    """What the cells share: weight_ih (G, input_size), weight_hh (G, hidden_size) and,
    with `bias`, bias_ih and bias_hh (G,), all U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))
    at first, for G = num_chunks * hidden_size. A cell runs one time step."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool, num_chunks: int,
                 device=None, dtype=None):
        super().__init__()
        name = type(self).__name__
        self.input_size = check_count(input_size, "input_size", name)
        self.hidden_size = check_count(hidden_size, "hidden_size", name)
        self.bias = _check_flag(bias, "bias", name)
        gates = num_chunks * hidden_size
        self.weight_ih = empty_parameter(gates, input_size, device=device, dtype=dtype)
        self.weight_hh = empty_parameter(gates, hidden_size, device=device, dtype=dtype)
        if bias:
            self.bias_ih = empty_parameter(gates, device=device, dtype=dtype)
            self.bias_hh = empty_parameter(gates, device=device, dtype=dtype)
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        bound = 1.0 / math.sqrt(self.hidden_size)
        for weight in self.parameters():
            init.uniform_(weight, -bound, bound)

    def _step(self, mode: str, input, states: list):
        """One step of `mode` from `states` ([h] or [h, c]; None entries are zeros):
        the recurrence's output for a sequence of length 1, and whether input was unbatched."""
        name = type(self).__name__
        if not isinstance(input, dl.Tensor) or input.ndim not in (1, 2) or \
                input.shape[-1] != self.input_size:
            shape = tuple(input.shape) if isinstance(input, dl.Tensor) else type(input).__name__
            raise ShapeError(f"{name}: expected input of shape (B, {self.input_size}) or "
                             f"unbatched ({self.input_size},), got {shape}")
        if input.dtype != self.weight_ih.dtype:
            raise DTypeError(f"{name}: input dtype {input.dtype} does not match the weights' "
                             f"{self.weight_ih.dtype}")
        unbatched = input.ndim == 1
        x = input.unsqueeze(0) if unbatched else input
        expected = (x.shape[0], self.hidden_size)
        full = []
        for state in states:
            if state is None:
                state = dl.zeros(*expected, dtype=x.dtype, device=x.device)
            elif tuple(state.shape) != expected[unbatched:]:
                raise ShapeError(f"{name}: expected a state of shape {expected[unbatched:]} "
                                 f"for input of shape {tuple(input.shape)}, got "
                                 f"{tuple(state.shape)}")
            elif unbatched:
                state = state.unsqueeze(0)
            full.append(state)
        xs = F.linear(x, self.weight_ih, self.bias_ih).unsqueeze(0)
        y = recurrence(mode, xs, full[0], full[1] if len(full) > 1 else None, self.weight_hh,
                        self.bias_hh, None, reverse=False)
        return y[0], unbatched

    def extra_repr(self) -> str:
        return f"{self.input_size}, {self.hidden_size}" + ("" if self.bias else ", bias=False")


class RNNCell(RNNCellBase):
    """One Elman RNN step: h' = tanh(x W_ihᵀ + b_ih + h W_hhᵀ + b_hh) (or relu)."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 nonlinearity: str = "tanh", device=None, dtype=None):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"RNNCell: unknown nonlinearity {nonlinearity!r}; valid: 'tanh', "
                             "'relu'")
        super().__init__(input_size, hidden_size, bias, 1, device=device, dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        """h' from input (B, input_size) or (input_size,) and hx (zeros when None)."""
        y, unbatched = self._step("RNN_TANH" if self.nonlinearity == "tanh" else "RNN_RELU",
                                  input, [hx])
        return y[0] if unbatched else y

    def extra_repr(self) -> str:
        text = super().extra_repr()
        return text if self.nonlinearity == "tanh" else text + ", nonlinearity='relu'"


class LSTMCell(RNNCellBase):
    """One LSTM step; returns (h', c')."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None,
                 dtype=None):
        super().__init__(input_size, hidden_size, bias, 4, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        """(h', c') from input (B, input_size) or (input_size,) and hx = (h, c) (zeros when
        None)."""
        if hx is not None and (not isinstance(hx, (tuple, list)) or len(hx) != 2):
            raise TypeError(f"LSTMCell: hx must be a tuple (h, c) of tensors, got "
                            f"{type(hx).__name__}")
        y, unbatched = self._step("LSTM", input, list(hx) if hx is not None else [None, None])
        h, c = y[:, :self.hidden_size], y[:, self.hidden_size:]
        return (h[0], c[0]) if unbatched else (h, c)


class GRUCell(RNNCellBase):
    """One GRU step: h' = (1 - z) ⊙ n + z ⊙ h."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None,
                 dtype=None):
        super().__init__(input_size, hidden_size, bias, 3, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        """h' from input (B, input_size) or (input_size,) and hx (zeros when None)."""
        y, unbatched = self._step("GRU", input, [hx])
        return y[0] if unbatched else y
