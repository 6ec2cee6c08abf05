"""ForMultipleChoice for every BERT-family model against transformers: (batch, choices,
sequence) inputs with padding, the loss over the choices, gradients through the word
embeddings, the Auto class, and export to transformers."""

from __future__ import annotations

import copy

import dlfree as dl
from dlfree import hf

import numpy as np
import pytest

pytest.importorskip("transformers")

CHOICES = 3
HEAD = "multiple_choice"


def choice_inputs(oracle, family) -> dict[str, np.ndarray]:
    """Two questions of three choices each, every choice a padded pair of sequences: the
    oracle's (2, 7) inputs drawn with a seed per choice, stacked on axis 1."""
    rows = [oracle.inputs(family, seed=k) for k in range(CHOICES)]
    return {name: np.stack([row[name] for row in rows], axis=1) for name in rows[0]}


def test_logits_loss_and_auto_class_match_transformers(oracle, encoder_family):
    folder, theirs = oracle.checkpoint(encoder_family, HEAD)
    model = hf.AutoModelForMultipleChoice.from_pretrained(folder)
    assert type(model).__name__ == type(theirs).__name__
    assert model.load_report == ([], [])
    inputs = {**choice_inputs(oracle, encoder_family), "labels": np.array([2, 0])}
    ours = oracle.run_dl(model, inputs, output_hidden_states=True)
    expected = oracle.run_hf(theirs, inputs, output_hidden_states=True)
    assert tuple(ours.logits.shape) == (2, CHOICES)
    oracle.assert_close(ours.logits, expected.logits, what="logits")
    oracle.assert_close(ours.loss, expected.loss, atol=1e-5, what="loss")
    oracle.assert_close(ours.hidden_states[-1], expected.hidden_states[-1], what="last layer")


def test_gradients_through_the_word_embeddings(oracle, encoder_family):
    folder, theirs = oracle.checkpoint(encoder_family, HEAD)
    theirs = copy.deepcopy(theirs)
    model = hf.AutoModelForMultipleChoice.from_pretrained(folder)
    inputs = choice_inputs(oracle, encoder_family)
    labels = np.array([1, 2])
    model(**{k: dl.tensor(v) for k, v in inputs.items()}, labels=dl.tensor(labels)).loss.backward()
    torch = oracle.torch
    theirs(**{k: torch.as_tensor(v) for k, v in inputs.items()},
           labels=torch.as_tensor(labels)).loss.backward()
    ours = getattr(model, model.base_model_prefix).embeddings.word_embeddings.weight.grad
    their_base = getattr(theirs, theirs.base_model_prefix)
    oracle.assert_close(ours, their_base.embeddings.word_embeddings.weight.grad, atol=1e-4,
                        what="word embedding gradient")


def test_transformers_loads_the_export(oracle, encoder_family, tmp_path):
    config = hf.AutoConfig.for_model(encoder_family,
                                     **oracle.config(encoder_family).to_dict())
    dl.manual_seed(0)
    model = hf.AutoModelForMultipleChoice.from_config(config).eval()
    model.save_pretrained(tmp_path)
    auto = oracle.transformers.AutoModelForMultipleChoice
    theirs, info = auto.from_pretrained(tmp_path, output_loading_info=True)
    assert type(theirs).__name__ == type(model).__name__
    assert not any(info[k] for k in ("missing_keys", "unexpected_keys", "mismatched_keys",
                                     "error_msgs")), info
    inputs = choice_inputs(oracle, encoder_family)
    oracle.assert_close(oracle.run_dl(model, inputs).logits,
                        oracle.run_hf(theirs.eval(), inputs).logits, what="logits")


def test_inputs_must_have_a_choices_axis(oracle):
    folder, _ = oracle.checkpoint("bert", HEAD)
    model = hf.BertForMultipleChoice.from_pretrained(folder)
    with pytest.raises(dl.ShapeError, match=r"\(batch, choices, sequence\), got \(2, 7\)"):
        model(oracle.inputs("bert")["input_ids"])
