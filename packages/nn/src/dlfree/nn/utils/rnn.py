"""Packed sequences, as torch.nn.utils.rnn: a batch of sequences of different lengths
stored time step by time step without padding, so `RNN`/`LSTM`/`GRU` stop each sequence
at its own end (and start the reverse direction there).

`data` holds, for each time step t, the t-th element of every sequence longer than t, the
sequences in decreasing order of length; `batch_sizes[t]` says how many there are. With
`enforce_sorted=False` the sequences may come in any order: `sorted_indices` records the
order used and `unsorted_indices` the way back.
"""

from __future__ import annotations

from typing import NamedTuple

import dlfree as dl
from dlfree import ShapeError, Tensor

import numpy as np

__all__ = ["PackedSequence", "pack_padded_sequence", "pad_packed_sequence", "pad_sequence",
           "pack_sequence", "unpad_sequence", "unpack_sequence"]


class PackedSequence(NamedTuple):
    """`data` (sum of lengths, *), `batch_sizes` (T,) int64 on the CPU, and the orders
    `sorted_indices` / `unsorted_indices` (None when the input was already sorted)."""

    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Tensor | None = None
    unsorted_indices: Tensor | None = None

    def to(self, *args, **kwargs) -> PackedSequence:
        """The same packing with `data` converted (dtype/device); the indices stay."""
        return self._replace(data=self.data.to(*args, **kwargs))

    @property
    def is_cuda(self) -> bool:
        return self.data.is_cuda


def _lengths(lengths, batch: int, fn: str) -> np.ndarray:
    values = np.asarray(lengths.tolist() if isinstance(lengths, Tensor) else lengths)
    if values.ndim != 1 or values.shape[0] != batch or values.dtype.kind not in "iu":
        raise ShapeError(f"{fn}: lengths must be {batch} integers (one per sequence), got "
                         f"{values.tolist()}")
    if batch and values.min() <= 0:
        raise ValueError(f"{fn}: every length must be at least 1, got {values.tolist()}")
    return values.astype(np.int64)


def _positions(sorted_lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Time and (sorted) batch index of each element of `data`, and the batch sizes."""
    steps = int(sorted_lengths[0]) if len(sorted_lengths) else 0
    batch_sizes = (sorted_lengths[None, :] > np.arange(steps)[:, None]).sum(1)
    times = np.repeat(np.arange(steps), batch_sizes)
    rows = np.concatenate([np.arange(n) for n in batch_sizes]) if steps else np.zeros(0, int)
    return times, rows, batch_sizes


def pack_padded_sequence(input: Tensor, lengths, batch_first: bool = False,
                         enforce_sorted: bool = True) -> PackedSequence:
    """Pack a padded batch, (T, B, *) or (B, T, *) with `batch_first`, whose sequence b has
    `lengths[b]` valid steps. With `enforce_sorted` the lengths must decrease."""
    fn = "pack_padded_sequence"
    x = input.transpose(0, 1) if batch_first else input
    if x.ndim < 2:
        raise ShapeError(f"{fn}: input must have a time and a batch dimension, got shape "
                         f"{tuple(input.shape)}")
    values = _lengths(lengths, x.shape[1], fn)
    if values.size and values.max() > x.shape[0]:
        raise ValueError(f"{fn}: a length of {values.max()} exceeds the {x.shape[0]} time "
                         "steps of the input")
    if enforce_sorted:
        if np.any(np.diff(values) > 0):
            raise ValueError(f"{fn}: lengths {values.tolist()} are not in decreasing order; "
                             "sort the batch or pass enforce_sorted=False")
        order = None
    else:
        order = np.argsort(-values, kind="stable")
    sorted_lengths = values if order is None else values[order]
    times, rows, batch_sizes = _positions(sorted_lengths)
    columns = rows if order is None else order[rows]
    data = x[dl.tensor(times, device=x.device), dl.tensor(columns, device=x.device)]
    return _packed(data, batch_sizes, order)


def _packed(data: Tensor, batch_sizes: np.ndarray, order: np.ndarray | None) -> PackedSequence:
    if order is None:
        return PackedSequence(data, dl.tensor(batch_sizes, dtype=dl.int64))
    return PackedSequence(data, dl.tensor(batch_sizes, dtype=dl.int64),
                          dl.tensor(order, dtype=dl.int64, device=data.device),
                          dl.tensor(np.argsort(order), dtype=dl.int64, device=data.device))


def _sorted_lengths(sequence: PackedSequence) -> np.ndarray:
    sizes = np.asarray(sequence.batch_sizes.tolist(), dtype=np.int64)
    return (sizes[None, :] > np.arange(int(sizes[0]) if sizes.size else 0)[:, None]).sum(1)


def pad_packed_sequence(sequence: PackedSequence, batch_first: bool = False,
                        padding_value: float = 0.0, total_length: int | None = None
                        ) -> tuple[Tensor, Tensor]:
    """Undo `pack_padded_sequence`: the padded batch (T, B, *) (or (B, T, *)) in the original
    order and the lengths (B,) int64. `total_length` pads to that many steps."""
    data = sequence.data
    sorted_lengths = _sorted_lengths(sequence)
    steps = len(sequence.batch_sizes)
    if total_length is not None:
        if total_length < steps:
            raise ValueError(f"pad_packed_sequence: total_length={total_length} is shorter "
                             f"than the longest sequence ({steps} steps)")
        steps = total_length
    times, rows, _ = _positions(sorted_lengths)
    batch = len(sorted_lengths)
    where = np.full((steps, batch), data.shape[0], dtype=np.int64)  # the padding row
    where[times, rows] = np.arange(len(times))
    order = None if sequence.sorted_indices is None else \
        np.asarray(sequence.unsorted_indices.tolist())
    if order is not None:
        where, sorted_lengths = where[:, order], sorted_lengths[order]
    pad = dl.full((1, *data.shape[1:]), padding_value, dtype=data.dtype, device=data.device)
    padded = dl.cat([data, pad])[dl.tensor(where, device=data.device)]
    if batch_first:
        padded = padded.transpose(0, 1)
    return padded, dl.tensor(sorted_lengths, dtype=dl.int64)


def pad_sequence(sequences, batch_first: bool = False, padding_value: float = 0.0,
                 padding_side: str = "right") -> Tensor:
    """Stack tensors (L_i, *) into (T, B, *) (or (B, T, *)), padding each to the longest."""
    sequences = list(sequences)
    if not sequences:
        raise ValueError("pad_sequence: no sequences given")
    if padding_side not in ("right", "left"):
        raise ValueError(f"pad_sequence: padding_side must be 'right' or 'left', got "
                         f"{padding_side!r}")
    longest = max(s.shape[0] for s in sequences)
    padded = []
    for s in sequences:
        pad = dl.full((longest - s.shape[0], *s.shape[1:]), padding_value, dtype=s.dtype,
                      device=s.device)
        padded.append(dl.cat([s, pad] if padding_side == "right" else [pad, s]))
    return dl.stack(padded, 0 if batch_first else 1)


def pack_sequence(sequences, enforce_sorted: bool = True) -> PackedSequence:
    """Pack a list of tensors (L_i, *) directly."""
    sequences = list(sequences)
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpad_sequence(padded_sequences: Tensor, lengths, batch_first: bool = False) -> list:
    """The list of sequences (L_i, *) inside a padded batch."""
    x = padded_sequences if batch_first else padded_sequences.transpose(0, 1)
    return [x[b, :int(n)] for b, n in enumerate(_lengths(lengths, x.shape[0], "unpad_sequence"))]


def unpack_sequence(packed_sequences: PackedSequence) -> list:
    """The list of sequences (L_i, *) inside a packed batch, in the original order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
