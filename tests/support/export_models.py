"""Models shared by the ONNX export and import tests: a batch-norm model given running
statistics, a recurrent layer's outputs as a flat tuple, a Transformer encoder with a
padding mask."""

from __future__ import annotations

import dlfree
import dlfree.nn as nn

import numpy as np


def trained(model, x):
    """`model` in eval mode after one training-mode call on a shifted `x`, so that its batch
    norms hold running statistics other than their defaults."""
    model.train()
    with dlfree.no_grad():
        model(x * 2.0 + 0.5)
    return model.eval()


class Sequence(nn.Module):
    """The outputs and final states of a recurrent layer, flattened to a tuple."""

    def __init__(self, rnn):
        super().__init__()
        self.rnn = rnn

    def forward(self, x):
        out, state = self.rnn(x)
        return (out, *state) if isinstance(state, tuple) else (out, state)


class Encoder(nn.Module):
    """Two Transformer encoder layers (width 16, 4 heads) taking a key padding mask."""

    def __init__(self):
        super().__init__()
        layer = nn.TransformerEncoderLayer(16, 4, dim_feedforward=32, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2)

    def forward(self, x, padding):
        return self.encoder(x, src_key_padding_mask=padding)


def padding_mask(lengths, size):
    """A (batch, size) bool mask, True past each row's length."""
    return dlfree.tensor(np.arange(size)[None, :] >= np.array(lengths)[:, None])
