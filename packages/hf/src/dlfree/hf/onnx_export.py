"""`export_onnx`: a text model as an ONNX graph of (input_ids, attention_mask), both int64
with batch and sequence axes dynamic, its outputs named by the model's output fields
(last_hidden_state, logits, ...). What `dlfree hf export-onnx` writes."""

from __future__ import annotations

import inspect

import dlfree as dl
from dlfree import Tensor, nn

from .auto import architecture_for

__all__ = ["export_onnx", "exportable_heads", "INPUT_NAMES"]

INPUT_NAMES = ["input_ids", "attention_mask"]
DYNAMIC_AXES = {0: "batch", 1: "sequence"}
# Heads that read input_ids of shape (batch, choices, sequence), not (batch, sequence).
_NOT_TOKEN_ROWS = {"multiple_choice"}


def exportable_heads(model_type: str) -> dict[str, type]:
    """The family's heads (by head name) that run on input_ids and attention_mask of shape
    (batch, sequence) alone: not an encoder–decoder's, which also need decoder inputs,
    nor an image model's."""
    heads = architecture_for(model_type).heads
    return {head: cls for head, cls in heads.items()
            if head not in _NOT_TOKEN_ROWS and _reads_tokens_only(cls)}


def _reads_tokens_only(cls) -> bool:
    parameters = inspect.signature(cls.forward).parameters
    return {"input_ids", "attention_mask"} <= set(parameters) \
        and "decoder_input_ids" not in parameters


class TokenModel(nn.Module):
    """The ONNX graph's signature around a model: (input_ids, attention_mask) in, the
    model's output `fields` out as a tuple."""

    def __init__(self, model, fields: list[str]):
        super().__init__()
        self.model, self.fields = model, fields

    def forward(self, input_ids, attention_mask):
        out = self.model(input_ids=input_ids, attention_mask=attention_mask)
        return tuple(out[field] for field in self.fields)


def example_inputs(vocab_size: int, batch: int, length: int) -> tuple[Tensor, Tensor]:
    """(input_ids, attention_mask) to trace at: tokens from a fixed seed, and the first
    row's first third padded, so that the graph holds the masking of padding."""
    generator = dl.Generator().manual_seed(0)
    ids = dl.randint(0, vocab_size, (batch, length), generator=generator)
    mask = dl.ones(batch, length, dtype=dl.int64)
    mask[0, : length // 3] = 0
    return ids, mask


def tensor_fields(model, inputs) -> list[str]:
    """The names of the tensors among the model's outputs for `inputs` (a cache or a
    tuple of hidden states is no graph output)."""
    ids, mask = inputs
    with dl.no_grad():
        out = model(input_ids=ids, attention_mask=mask)
    # a ModelOutput iterates over its values, as a tuple does: its names are keys()
    return [name for name in out.keys() if isinstance(out[name], Tensor)]  # noqa: SIM118


def export_onnx(model, f, batch_size: int = 2, sequence_length: int = 16,
                opset_version: int = 17):
    """Write `model` (a head of `exportable_heads`) to `f` (a path, written atomically, or
    a binary file) as ONNX, traced at `batch_size` sequences of `sequence_length` tokens;
    the graph takes any batch and length. Returns the `onnx.ModelProto`."""
    inputs = example_inputs(model.config.vocab_size, batch_size, sequence_length)
    fields = tensor_fields(model, inputs)
    return dl.onnx.export(TokenModel(model, fields), inputs, f, input_names=INPUT_NAMES,
                          output_names=fields,
                          dynamic_axes={name: DYNAMIC_AXES for name in INPUT_NAMES},
                          opset_version=opset_version)
