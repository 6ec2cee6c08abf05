"""nn.utils.rnn packed sequences and RNN/LSTM/GRU on packed input, against torch: the packed
data, padding back, outputs, final states and gradients; forward tolerance 1e-5,
gradients 1e-4 (float32); gradcheck in float64 for the packing itself."""

from __future__ import annotations

import dlfree as dl
from dlfree.autograd import gradcheck
from dlfree.nn.utils import rnn

import numpy as np
import pytest
import torch
from torch.nn.utils import rnn as trnn

from support.torch_copy import FWD_TOL, GRAD_TOL, torch_to_dl

LENGTHS = [2, 5, 3, 5]  # unsorted, with a tie


def _padded(seed=0, steps=5, batch=4, features=3):
    a = np.random.default_rng(seed).standard_normal((steps, batch, features)).astype(np.float32)
    return dl.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)


@pytest.mark.parametrize("batch_first", [False, True])
def test_pack_and_pad_round_trip_as_torch(batch_first):
    leaf, tleaf = _padded()
    x, tx = (leaf.transpose(0, 1), tleaf.transpose(0, 1)) if batch_first else (leaf, tleaf)
    ours = rnn.pack_padded_sequence(x, LENGTHS, batch_first, enforce_sorted=False)
    theirs = trnn.pack_padded_sequence(tx, LENGTHS, batch_first, enforce_sorted=False)
    assert ours.batch_sizes.tolist() == theirs.batch_sizes.tolist()
    np.testing.assert_array_equal(ours.data.detach().numpy(), theirs.data.detach().numpy())
    assert ours.sorted_indices.tolist() == theirs.sorted_indices.tolist()
    padded, lengths = rnn.pad_packed_sequence(ours, batch_first, padding_value=-1.0,
                                              total_length=6)
    tpadded, tlengths = trnn.pad_packed_sequence(theirs, batch_first, padding_value=-1.0,
                                                 total_length=6)
    np.testing.assert_array_equal(padded.detach().numpy(), tpadded.detach().numpy())
    assert lengths.tolist() == tlengths.tolist()
    weights = np.arange(padded.numel(), dtype=np.float32).reshape(padded.shape)
    (padded * dl.tensor(weights)).sum().backward()
    (tpadded * torch.tensor(weights)).sum().backward()
    np.testing.assert_array_equal(leaf.grad.numpy(), tleaf.grad.numpy())


def test_sorted_packing_pad_sequence_and_pack_sequence():
    seqs = [np.full((n, 2), n, np.float32) for n in (4, 2, 1)]
    ours = rnn.pack_sequence([dl.tensor(s) for s in seqs])
    theirs = trnn.pack_sequence([torch.tensor(s) for s in seqs])
    assert ours.sorted_indices is None and theirs.sorted_indices is None
    np.testing.assert_array_equal(ours.data.numpy(), theirs.data.numpy())
    for side in ("right", "left"):
        np.testing.assert_array_equal(
            rnn.pad_sequence([dl.tensor(s) for s in seqs], True, 9.0, side).numpy(),
            trnn.pad_sequence([torch.tensor(s) for s in seqs], True, 9.0, side).numpy())
    back = rnn.unpack_sequence(ours)
    assert [b.shape[0] for b in back] == [4, 2, 1]
    with pytest.raises(ValueError, match="not in decreasing order.*enforce_sorted=False"):
        rnn.pack_padded_sequence(dl.ones(3, 2, 1), [1, 3])


def test_packing_gradcheck():
    x = dl.randn(4, 3, 2, dtype=dl.float64, requires_grad=True)
    assert gradcheck(lambda t: rnn.pad_packed_sequence(
        rnn.pack_padded_sequence(t, [2, 4, 1], enforce_sorted=False))[0], (x,))


@pytest.mark.parametrize("layer, kwargs", [
    ("RNN", {}), ("LSTM", {"num_layers": 2}), ("GRU", {"bidirectional": True}),
    ("LSTM", {"bidirectional": True, "proj_size": 2, "batch_first": True}),
])
def test_recurrent_layers_take_packed_input_as_torch(layer, kwargs):
    torch.manual_seed(0)
    theirs = getattr(torch.nn, layer)(3, 4, **kwargs)
    ours = getattr(dl.nn, layer)(3, 4, **kwargs)
    torch_to_dl(theirs, ours)
    leaf, tleaf = _padded()
    first = kwargs.get("batch_first", False)
    x, tx = (leaf.transpose(0, 1), tleaf.transpose(0, 1)) if first else (leaf, tleaf)
    out, state = ours(rnn.pack_padded_sequence(x, LENGTHS, first, enforce_sorted=False))
    tout, tstate = theirs(trnn.pack_padded_sequence(tx, LENGTHS, first, enforce_sorted=False))
    np.testing.assert_allclose(out.data.detach().numpy(), tout.data.detach().numpy(), **FWD_TOL)
    assert out.batch_sizes.tolist() == tout.batch_sizes.tolist()
    states = state if isinstance(state, tuple) else (state,)
    tstates = tstate if isinstance(tstate, tuple) else (tstate,)
    for s, ts in zip(states, tstates):
        np.testing.assert_allclose(s.detach().numpy(), ts.detach().numpy(), **FWD_TOL)
    padded, _ = rnn.pad_packed_sequence(out)
    tpadded, _ = trnn.pad_packed_sequence(tout)
    (padded.square().sum() + states[0].sum()).backward()
    (tpadded.square().sum() + tstates[0].sum()).backward()
    np.testing.assert_allclose(leaf.grad.numpy(), tleaf.grad.numpy(), **GRAD_TOL)
    for name, p in theirs.named_parameters():
        np.testing.assert_allclose(getattr(ours, name).grad.numpy(), p.grad.numpy(),
                                   err_msg=name, **GRAD_TOL)


def test_packed_input_with_initial_state_in_the_callers_order():
    torch.manual_seed(1)
    theirs, ours = torch.nn.GRU(3, 4), dl.nn.GRU(3, 4)
    torch_to_dl(theirs, ours)
    x, tx = _padded(2)
    h0 = np.random.default_rng(3).standard_normal((1, 4, 4)).astype(np.float32)
    out, h = ours(rnn.pack_padded_sequence(x, LENGTHS, enforce_sorted=False), dl.tensor(h0))
    tout, th = theirs(trnn.pack_padded_sequence(tx, LENGTHS, enforce_sorted=False),
                      torch.tensor(h0))
    np.testing.assert_allclose(h.detach().numpy(), th.detach().numpy(), **FWD_TOL)
    np.testing.assert_allclose(out.data.detach().numpy(), tout.data.detach().numpy(), **FWD_TOL)
