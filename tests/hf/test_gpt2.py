"""GPT-2 against transformers: logits of the base model, the LM head and the sequence
classifier with and without left padding, the loss, Conv1D weights transposed on load and
back on export (transformers loads the export), tied and untied heads, and bad configs."""

from __future__ import annotations

import numpy as np
import pytest
import safetensors.numpy

import dlfree as dl
from dlfree.hf.models.gpt2 import (
    GPT2Config,
    GPT2ForSequenceClassification,
    GPT2LMHeadModel,
    GPT2Model,
)

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

VOCAB, PAD = 99, 0
ATOL = 1e-4  # float32, logits of order one (initializer_range 0.2)
CONV1D_WEIGHTS = ("c_attn.weight", "c_proj.weight", "c_fc.weight")  # (in, out) in transformers


def hf_config(**changes):
    fields = dict(vocab_size=VOCAB, n_embd=32, n_layer=2, n_head=4, n_positions=16,
                  initializer_range=0.2, bos_token_id=1, eos_token_id=2, pad_token_id=PAD,
                  num_labels=3)
    fields.update(changes)
    return transformers.GPT2Config(**fields)


@pytest.fixture(scope="module", autouse=True)
def one_torch_thread():
    """The oracle on one thread: on a busy machine torch's idle workers spin and make each
    tiny call take milliseconds; the previous setting comes back after the module."""
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


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
    ids = np.random.default_rng(7).integers(3, VOCAB, size=(2, 7))
    mask = np.ones_like(ids)
    if padding == "left":
        ids[1, :3], mask[1, :3] = PAD, 0
    elif padding == "right":
        ids[1, 4:], mask[1, 4:] = PAD, 0
    return ids, mask


def run_hf(model, ids, mask, **kwargs):
    with torch.no_grad():
        return model(torch.as_tensor(ids), attention_mask=torch.as_tensor(mask), **kwargs)


def run_dl(model, ids, mask, **kwargs):
    with dl.no_grad():
        return model(dl.tensor(ids), attention_mask=dl.tensor(mask), **kwargs)


def assert_real_tokens_close(ours, theirs, mask, atol=ATOL):
    """Equal at every position that is not padding (what a padded position computes is
    never read: real tokens do not attend to it)."""
    ours, theirs = ours.numpy(), theirs.numpy()
    assert ours.shape == theirs.shape
    real = mask.astype(bool)
    np.testing.assert_allclose(ours[real], theirs[real], rtol=0, atol=atol)


@pytest.mark.parametrize("padding", ["none", "left", "right"])
@pytest.mark.parametrize("name", ["lm", "lm_untied"])
def test_lm_logits_match_transformers(checkpoints, name, padding):
    folder, theirs = checkpoints[name]
    ours = GPT2LMHeadModel.from_pretrained(folder)
    assert not ours.load_report.missing_keys and not ours.load_report.unexpected_keys
    ids, mask = batch(padding)
    expected = run_hf(theirs, ids, mask).logits
    assert float(expected.abs().max()) > 0.5  # so that ATOL is a tight bound
    assert_real_tokens_close(run_dl(ours, ids, mask).logits, expected, mask)


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
    ids, mask = batch("left")
    expected = run_hf(theirs.transformer, ids, mask, output_hidden_states=True)
    got = run_dl(ours, ids, mask, output_hidden_states=True)
    assert_real_tokens_close(got.last_hidden_state, expected.last_hidden_state, mask)
    assert len(got.hidden_states) == len(expected.hidden_states) == 3
    for mine, reference in zip(got.hidden_states, expected.hidden_states):
        assert_real_tokens_close(mine, reference, mask)


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
    ids, mask = batch(padding)
    expected = run_hf(theirs, ids, mask).logits.numpy()
    got = run_dl(ours, ids, mask).logits.numpy()
    assert got.shape == (2, 3)
    np.testing.assert_allclose(got, expected, rtol=0, atol=ATOL)


def test_lm_loss_matches_transformers(checkpoints):
    folder, theirs = checkpoints["lm"]
    ours = GPT2LMHeadModel.from_pretrained(folder)
    ids, mask = batch("right")
    labels = np.where(mask == 1, ids, -100)
    expected = run_hf(theirs, ids, mask, labels=torch.as_tensor(labels)).loss.item()
    got = run_dl(ours, ids, mask, labels=dl.tensor(labels)).loss.item()
    assert got == pytest.approx(expected, abs=1e-5)


def test_loss_gradients_match_transformers(checkpoints):
    """Fine-tuning sees the same gradients (those of Conv1D weights transposed)."""
    folder, theirs = checkpoints["lm"]
    ours = GPT2LMHeadModel.from_pretrained(folder)
    ids, mask = batch("left")
    labels = np.where(mask == 1, ids, -100)
    theirs.zero_grad()
    theirs(torch.as_tensor(ids), attention_mask=torch.as_tensor(mask),
           labels=torch.as_tensor(labels)).loss.backward()
    ours(dl.tensor(ids), attention_mask=dl.tensor(mask), labels=dl.tensor(labels)).loss.backward()
    expected = dict(theirs.named_parameters())
    for name, param in ours.named_parameters():
        reference = expected[name].grad.numpy()
        if name.endswith(CONV1D_WEIGHTS):
            reference = reference.T
        np.testing.assert_allclose(param.grad.numpy(), reference, rtol=0,
                                   atol=1e-5 * max(1.0, np.abs(reference).max()), err_msg=name)
    theirs.zero_grad()


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
