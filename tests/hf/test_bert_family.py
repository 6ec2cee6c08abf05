"""BERT, RoBERTa, DistilBERT, XLM-RoBERTa and ALBERT with every head against transformers:
outputs with padded inputs, hidden states, float64 loading, losses, gradients through tied
embeddings."""

from __future__ import annotations

import copy

import dlfree as dl
from dlfree import hf
from dlfree.hf.models import distilbert

import numpy as np
import pytest

pytest.importorskip("transformers")


def dl_class(oracle, family, head):
    return getattr(hf, oracle.hf_class(family, head).__name__)


@pytest.mark.parametrize("sharded", [False, True], ids=["single", "sharded"])
def test_outputs_match_transformers(oracle, encoder_family, encoder_head, sharded):
    folder, theirs = oracle.checkpoint(encoder_family, encoder_head, sharded)
    assert sharded == (folder / "model.safetensors.index.json").is_file()
    model = dl_class(oracle, encoder_family, encoder_head).from_pretrained(folder)
    assert model.load_report == ([], [])
    assert not any(m.training for m in model.modules()), "from_pretrained gives eval mode"
    inputs = oracle.inputs(encoder_family)
    ours = oracle.run_dl(model, inputs, output_hidden_states=True)
    expected = oracle.run_hf(theirs, inputs, output_hidden_states=True)
    oracle.assert_same_outputs(ours, expected, encoder_head)
    runs = 7 if encoder_family == "albert" else 3  # the input and each layer run's output
    assert len(ours.hidden_states) == len(expected.hidden_states) == runs
    for k, (a, b) in enumerate(zip(ours.hidden_states, expected.hidden_states)):
        oracle.assert_close(a, b, what=f"hidden_states[{k}]")
    if encoder_head == "base" and encoder_family not in ("distilbert", "deberta-v2"):
        oracle.assert_close(ours.pooler_output, expected.pooler_output, what="pooler_output")


def test_float64_load(oracle, encoder_family):
    folder, theirs = oracle.checkpoint(encoder_family, "masked_lm")
    model = dl_class(oracle, encoder_family, "masked_lm").from_pretrained(folder,
                                                                          dtype="float64")
    assert {p.dtype for p in model.parameters()} == {dl.float64}
    inputs = oracle.inputs(encoder_family)
    ours = oracle.run_dl(model, inputs)
    expected = oracle.run_hf(copy.deepcopy(theirs).double(), inputs)
    assert ours.logits.dtype == dl.float64
    oracle.assert_close(ours.logits, expected.logits, atol=1e-10)


def test_padding_does_not_change_real_tokens(oracle, encoder_family):
    folder, _ = oracle.checkpoint(encoder_family, "base")
    model = dl_class(oracle, encoder_family, "base").from_pretrained(folder)
    inputs = oracle.inputs(encoder_family)
    padded = oracle.run_dl(model, inputs).last_hidden_state
    alone = oracle.run_dl(model, {k: v[1:, :4] for k, v in inputs.items()}).last_hidden_state
    oracle.assert_close(padded[1:, :4], alone, atol=1e-5, what="padded vs unpadded")


def test_mask_forms_agree(oracle, encoder_family):
    folder, _ = oracle.checkpoint(encoder_family, "token_classification")
    model = dl_class(oracle, encoder_family, "token_classification").from_pretrained(folder)
    inputs = oracle.inputs(encoder_family)
    per_key = oracle.run_dl(model, inputs).logits
    square = np.repeat(inputs["attention_mask"][:, None, :], 7, axis=1)  # (batch, L, S)
    with_square = oracle.run_dl(model, {**inputs, "attention_mask": square}).logits
    if encoder_family == "deberta-v2":  # a 2-D mask also masks padded queries there
        with_square, per_key = with_square[1:, :4], per_key[1:, :4]
    oracle.assert_close(with_square, per_key, atol=1e-6, what="3-D mask")
    with dl.no_grad():  # NumPy masks and ids are accepted as they are
        raw = model(inputs["input_ids"], attention_mask=inputs["attention_mask"]).logits
    without_types = {k: v for k, v in inputs.items() if k != "token_type_ids"}
    oracle.assert_close(raw, oracle.run_dl(model, without_types).logits, atol=0)


def test_output_fields_by_name_and_position(oracle):
    folder, _ = oracle.checkpoint("bert", "question_answering")
    out = oracle.run_dl(hf.BertForQuestionAnswering.from_pretrained(folder),
                        oracle.inputs("bert"))
    assert out.keys() == ["start_logits", "end_logits"]  # unset fields are left out
    assert out[0] is out.start_logits and out["end_logits"] is out.end_logits
    assert out.to_tuple() == (out.start_logits, out.end_logits)
    with pytest.raises(KeyError, match="no field 'loss' set; it has start_logits"):
        out["loss"]


# ------------------------------------------------------------------------- losses
PROBLEMS = {  # problem type: (num_labels, labels)
    "regression": (1, np.array([0.5, -1.25], dtype=np.float32)),
    "single_label_classification": (3, np.array([2, 0])),
    "multi_label_classification": (3, np.array([[1, 0, 1], [0, 1, 1]], dtype=np.float32)),
}


@pytest.mark.parametrize("problem", list(PROBLEMS))
def test_sequence_classification_loss(oracle, encoder_family, problem, tmp_path):
    num_labels, labels = PROBLEMS[problem]
    theirs = oracle.model(encoder_family, "sequence_classification", num_labels=num_labels)
    theirs.save_pretrained(tmp_path)
    model = dl_class(oracle, encoder_family, "sequence_classification").from_pretrained(tmp_path)
    inputs = oracle.inputs(encoder_family)
    ours = oracle.run_dl(model, {**inputs, "labels": labels})
    expected = oracle.run_hf(theirs, {**inputs, "labels": labels})
    if encoder_family != "deberta-v2":  # DeBERTa applies its own rule, leaving it unset
        assert theirs.config.problem_type == problem  # the rule inferred the same problem
    oracle.assert_close(ours.logits, expected.logits)
    oracle.assert_close(ours.loss, expected.loss, atol=1e-5, what="loss")


def test_token_and_masked_lm_losses_ignore_minus_100(oracle, encoder_family):
    inputs = oracle.inputs(encoder_family)
    for head, classes in (("token_classification", 3), ("masked_lm", 99)):
        folder, theirs = oracle.checkpoint(encoder_family, head)
        model = dl_class(oracle, encoder_family, head).from_pretrained(folder)
        labels = np.random.default_rng(1).integers(0, classes, size=(2, 7))
        labels[1, 4:] = -100
        ours = oracle.run_dl(model, {**inputs, "labels": labels})
        expected = oracle.run_hf(theirs, {**inputs, "labels": labels})
        oracle.assert_close(ours.loss, expected.loss, atol=1e-5, what=f"{head} loss")


def test_question_answering_loss(oracle, encoder_family):
    folder, theirs = oracle.checkpoint(encoder_family, "question_answering")
    model = dl_class(oracle, encoder_family, "question_answering").from_pretrained(folder)
    # the 30 lies past the sequence: clamped to its length and ignored, as transformers does
    spans = {"start_positions": np.array([1, 30]), "end_positions": np.array([3, 2])}
    inputs = {**oracle.inputs(encoder_family), **spans}
    ours = oracle.run_dl(model, inputs)
    expected = oracle.run_hf(theirs, inputs)
    oracle.assert_close(ours.loss, expected.loss, atol=1e-5, what="span loss")


def test_gradients_through_tied_embeddings(oracle, encoder_family):
    folder, theirs = oracle.checkpoint(encoder_family, "masked_lm")
    theirs = copy.deepcopy(theirs)
    model = dl_class(oracle, encoder_family, "masked_lm").from_pretrained(folder)
    base = getattr(model, model.base_model_prefix)
    decoder = {"bert": lambda: model.cls.predictions.decoder,
               "roberta": lambda: model.lm_head.decoder,
               "xlm-roberta": lambda: model.lm_head.decoder,
               "albert": lambda: model.predictions.decoder,
               "deberta-v2": lambda: model.cls.predictions.decoder,
               "distilbert": lambda: model.vocab_projector}[encoder_family]()
    assert decoder.weight is base.embeddings.word_embeddings.weight
    inputs = oracle.inputs(encoder_family)
    labels = np.random.default_rng(2).integers(0, 99, size=(2, 7))
    model(**{k: dl.tensor(v) for k, v in inputs.items()}, labels=dl.tensor(labels)).loss.backward()
    torch = oracle.torch
    theirs(**{k: torch.as_tensor(v) for k, v in inputs.items()},
           labels=torch.as_tensor(labels)).loss.backward()
    their_base = getattr(theirs, theirs.base_model_prefix)
    oracle.assert_close(base.embeddings.word_embeddings.weight.grad,
                        their_base.embeddings.word_embeddings.weight.grad, atol=1e-5,
                        what="word embedding gradient (input and decoder use)")


# --------------------------------------------------------------- construction
def test_sinusoidal_positions_match_transformers(oracle):
    theirs = oracle.model("distilbert", "base", sinusoidal_pos_embds=True)
    config = hf.DistilBertConfig.from_dict(theirs.config.to_dict())
    model = hf.DistilBertModel(config)
    oracle.assert_close(model.embeddings.position_embeddings.weight,
                        theirs.embeddings.position_embeddings.weight, atol=1e-6)
    np.testing.assert_allclose(distilbert.sinusoidal_table(3, 4)[2],
                               [np.sin(2), np.cos(2), np.sin(2 / 100), np.cos(2 / 100)])


def test_training_mode_applies_dropout(oracle):
    folder, _ = oracle.checkpoint("bert", "base")
    model = hf.BertModel.from_pretrained(folder)
    inputs = oracle.inputs("bert")
    assert np.array_equal(oracle.run_dl(model, inputs).last_hidden_state.numpy(),
                          oracle.run_dl(model, inputs).last_hidden_state.numpy())
    model.train()
    dl.manual_seed(0)
    first = oracle.run_dl(model, inputs).last_hidden_state.numpy()
    second = oracle.run_dl(model, inputs).last_hidden_state.numpy()
    assert not np.allclose(first, second)


@pytest.mark.parametrize("bad, error, words", [
    (np.ones((2, 3), dtype=np.float32), dl.DTypeError, "integer token ids"),
    (np.ones(3, dtype=np.int64), dl.ShapeError, "(batch, sequence)"),
    (np.full((1, 65), 5), dl.ShapeError, "max_position_embeddings"),
])
def test_bad_input_ids(oracle, encoder_family, bad, error, words):
    folder, _ = oracle.checkpoint(encoder_family, "base")
    model = dl_class(oracle, encoder_family, "base").from_pretrained(folder)
    if encoder_family == "deberta-v2" and words == "max_position_embeddings":
        assert model(dl.tensor(bad)).last_hidden_state.shape[1] == 65  # relative positions only
        return
    with pytest.raises(error, match=words.replace("(", r"\(").replace(")", r"\)")):
        model(dl.tensor(bad))


def test_bad_attention_mask_shape(oracle):
    folder, _ = oracle.checkpoint("bert", "base")
    model = hf.BertModel.from_pretrained(folder)
    with pytest.raises(dl.ShapeError, match=r"attention_mask must have shape \(batch, sequence"):
        model(dl.tensor(np.ones((2, 5), dtype=np.int64)), dl.ones(2, 4))


def test_question_answering_needs_two_labels():
    config = hf.BertConfig(vocab_size=10, hidden_size=8, num_hidden_layers=1,
                           num_attention_heads=2, intermediate_size=8, num_labels=3)
    with pytest.raises(ValueError, match="num_labels must be 2"):
        hf.BertForQuestionAnswering(config)
