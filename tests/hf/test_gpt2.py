"""GPT-2 against transformers: logits of the base model, the LM head and the sequence
classifier with and without left padding, the loss, Conv1D weights transposed on load and
back on export (transformers loads the export), tied and untied heads, and bad configs."""

from __future__ import annotations

import dlfree as dl
from dlfree.hf.models.gpt2 import (
    GPT2Config,
    GPT2ForSequenceClassification,
    GPT2LMHeadModel,
    GPT2Model,
)

import numpy as np
import pytest
import safetensors.numpy

from support.hf import (
    ATOL,
    PAD,
    VOCAB,
    assert_classifier_logits_match,
    assert_hidden_states_match,
    assert_lm_logits_match,
    assert_lm_loss_matches,
    assert_loss_gradients_match,
    padded_batch,
    run_dl,
    run_hf,
)

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytestmark = pytest.mark.usefixtures("one_torch_thread")

CONV1D_WEIGHTS = ("c_attn.weight", "c_proj.weight", "c_fc.weight")  # (in, out) in transformers


def hf_config(**changes):
    fields = dict(vocab_size=VOCAB, n_embd=32, n_layer=2, n_head=4, n_positions=16,
                  initializer_range=0.2, bos_token_id=1, eos_token_id=2, pad_token_id=PAD,
                  num_labels=3)
    fields.update(changes)
    return transformers.GPT2Config(**fields)


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    """{name: (folder, transformers model)} saved once for the module."""
    made = {}
    for name, cls, changes in [("lm", transformers.GPT2LMHeadModel, {}),
                               ("lm_untied", transformers.GPT2LMHeadModel,
                                {"tie_word_embeddings": False}),
                               ("classifier", transformers.GPT2ForSequenceClassification, {})]:
        torch.manual_seed(len(made))
        model = cls(hf_config(**changes)).eval()
        folder = tmp_path_factory.mktemp(f"gpt2-{name}")
        model.save_pretrained(folder)
        made[name] = (folder, model)
    return made


def batch(padding: str):
    """Two rows of seven tokens; the second padded by three (left or right) unless "none"."""
    return padded_batch(padding, length=7, pads=3, seed=7)


@pytest.mark.parametrize("padding", ["none", "left", "right"])
@pytest.mark.parametrize("name", ["lm", "lm_untied"])
def test_lm_logits_match_transformers(checkpoints, name, padding):
    folder, theirs = checkpoints[name]
    ours = GPT2LMHeadModel.from_pretrained(folder)
    assert_lm_logits_match(ours, theirs, *batch(padding))


def test_tying_follows_the_config(checkpoints):
    tied = GPT2LMHeadModel.from_pretrained(checkpoints["lm"][0])
    untied = GPT2LMHeadModel.from_pretrained(checkpoints["lm_untied"][0])
    assert tied.lm_head.weight is tied.transformer.wte.weight
    assert untied.lm_head.weight is not untied.transformer.wte.weight
    np.testing.assert_array_equal(untied.lm_head.weight.detach().numpy(),
                                  checkpoints["lm_untied"][1].lm_head.weight.detach().numpy())


def test_base_model_and_hidden_states(checkpoints):
    folder, theirs = checkpoints["lm"]
    ours = GPT2Model.from_pretrained(folder)  # the LM checkpoint, "transformer." dropped
    assert_hidden_states_match(ours, theirs.transformer, *batch("left"))


def test_conv1d_weights_are_transposed(checkpoints):
    folder, theirs = checkpoints["lm"]
    ours = GPT2LMHeadModel.from_pretrained(folder)
    for name in ("attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj"):
        hf_weight = theirs.get_parameter(f"transformer.h.1.{name}.weight").detach().numpy()
        mine = ours.get_parameter(f"transformer.h.1.{name}.weight").detach().numpy()
        np.testing.assert_array_equal(mine, hf_weight.T)


@pytest.mark.parametrize("padding", ["left", "right"])
def test_sequence_classification_pools_the_last_real_token(checkpoints, padding):
    folder, theirs = checkpoints["classifier"]
    ours = GPT2ForSequenceClassification.from_pretrained(folder)
    assert_classifier_logits_match(ours, theirs, *batch(padding))


def test_lm_loss_matches_transformers(checkpoints):
    folder, theirs = checkpoints["lm"]
    ours = GPT2LMHeadModel.from_pretrained(folder)
    assert_lm_loss_matches(ours, theirs, *batch("right"))


def test_loss_gradients_match_transformers(checkpoints):
    """Fine-tuning sees the same gradients (those of Conv1D weights transposed)."""
    folder, theirs = checkpoints["lm"]
    ours = GPT2LMHeadModel.from_pretrained(folder)
    assert_loss_gradients_match(ours, theirs, *batch("left"), transposed=CONV1D_WEIGHTS)


@pytest.mark.parametrize("name", ["lm", "lm_untied"])
def test_export_loads_in_transformers(checkpoints, name, tmp_path):
    folder, theirs = checkpoints[name]
    GPT2LMHeadModel.from_pretrained(folder).save_pretrained(tmp_path)
    written = safetensors.numpy.load_file(tmp_path / "model.safetensors")
    assert written["transformer.h.0.attn.c_attn.weight"].shape == (32, 96)  # Conv1D (in, out)
    assert ("lm_head.weight" in written) == (name == "lm_untied")
    reloaded, info = transformers.GPT2LMHeadModel.from_pretrained(tmp_path,
                                                                  output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"], info
    ids, mask = batch("none")
    np.testing.assert_allclose(run_hf(reloaded.eval(), ids, mask).logits.numpy(),
                               run_hf(theirs, ids, mask).logits.numpy(), rtol=0, atol=1e-6)


def test_auto_classes_dispatch_on_model_type(checkpoints):
    """GPT-2 is a registered architecture: the Auto classes pick it from config.json."""
    from dlfree import hf

    folder, theirs = checkpoints["lm"]
    lm = hf.AutoModelForCausalLM.from_pretrained(folder)
    assert type(lm) is GPT2LMHeadModel
    assert type(hf.AutoModel.from_pretrained(folder)) is GPT2Model
    classifier = hf.AutoModelForSequenceClassification.from_pretrained(folder)
    assert type(classifier) is GPT2ForSequenceClassification
    ids, mask = batch("none")
    np.testing.assert_allclose(run_dl(lm, ids, mask).logits.numpy(),
                               run_hf(theirs, ids, mask).logits.numpy(), rtol=0, atol=ATOL)


def test_config_reads_transformers_names_and_aliases(checkpoints):
    config = GPT2Config.from_pretrained(checkpoints["lm"][0])
    assert (config.hidden_size, config.num_hidden_layers, config.num_attention_heads,
            config.max_position_embeddings) == (32, 2, 4, 16)
    assert config.activation_function == "gelu_new"


@pytest.mark.parametrize("fields, message", [
    ({"n_embd": 30, "n_head": 4}, "divisible by n_head"),
    ({"add_cross_attention": True}, "add_cross_attention"),
    ({"activation_function": "swiglu"}, "activation_function"),
    ({"attn_pdrop": 1.5}, "attn_pdrop"),
])
def test_bad_config_is_refused(fields, message):
    with pytest.raises(ValueError, match=message):
        GPT2Config.from_dict(fields)


def test_too_long_input_is_refused(checkpoints):
    model = GPT2LMHeadModel.from_pretrained(checkpoints["lm"][0])
    with dl.no_grad(), pytest.raises(dl.ShapeError, match="n_positions"):
        model(dl.zeros(1, 17, dtype=dl.int64))
