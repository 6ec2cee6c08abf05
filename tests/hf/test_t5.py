"""T5 against transformers on tiny random models: the original T5 (ReLU, tied head, decoder
output scaled) and a v1.1 / Flan-T5 layout (gated GELU, its own LM head saved as the hub's
v1.1 checkpoints are) — outputs with padding, losses, gradients, export both ways, the
relative-position buckets, and generation token for token (greedy and beam search)."""

from __future__ import annotations

import copy
import json

import dlfree as dl
from dlfree import hf
from dlfree.hf.generation import EncoderDecoderCache
from dlfree.hf.models.t5 import relative_position_bucket

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

VOCAB = 99
SHAPE = dict(vocab_size=VOCAB, d_model=32, d_kv=8, d_ff=37, num_heads=4, num_layers=2,
             relative_attention_num_buckets=8, relative_attention_max_distance=20,
             decoder_start_token_id=0)
VARIANTS = {"t5": dict(feed_forward_proj="relu"), "v1_1": dict(feed_forward_proj="gated-gelu")}
HF_HEADS = {"seq2seq_lm": "T5ForConditionalGeneration", "base": "T5Model",
            "encoder": "T5EncoderModel"}


def _save_v1_1(model, folder) -> None:
    """Save as the hub's v1.1 checkpoints are: `tie_word_embeddings: false`, no
    scale_decoder_outputs key, and lm_head.weight beside shared.weight."""
    model.config.save_pretrained(folder)
    config = json.loads((folder / "config.json").read_text())
    config.pop("scale_decoder_outputs", None)
    config["tie_word_embeddings"] = False
    (folder / "config.json").write_text(json.dumps(config))
    from safetensors.torch import save_file

    state = {k: v.contiguous() for k, v in model.state_dict().items()
             if not k.endswith("embed_tokens.weight")}
    save_file(state, folder / "model.safetensors", metadata={"format": "pt"})


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory, one_torch_thread):
    """variant: (folder, transformers T5ForConditionalGeneration loaded from it). The shared
    table is drawn small (std 0.05, not 1) so that greedy decoding does not just repeat the
    start token."""
    made = {}
    for variant, changes in VARIANTS.items():
        torch.manual_seed(0)
        config = transformers.T5Config(**SHAPE, **changes)
        model = transformers.T5ForConditionalGeneration(config).eval()
        with torch.no_grad():
            model.shared.weight.mul_(0.05)
            if variant == "v1_1":
                model.lm_head.weight = torch.nn.Parameter(torch.randn(VOCAB, 32))
        folder = tmp_path_factory.mktemp(variant)
        if variant == "v1_1":
            _save_v1_1(model, folder)
        else:
            model.save_pretrained(folder)
        theirs = transformers.T5ForConditionalGeneration.from_pretrained(folder).eval()
        made[variant] = folder, theirs
    assert made["v1_1"][1].lm_head.weight is not made["v1_1"][1].shared.weight
    return made


@pytest.fixture(params=list(VARIANTS))
def variant(request):
    return request.param


def inputs(seed: int = 0, batch: int = 3) -> dict[str, np.ndarray]:
    """Prompts of nine tokens, the second padded after six; decoder inputs of five."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(2, VOCAB, size=(batch, 9))
    mask = np.ones((batch, 9), dtype=np.int64)
    mask[1, 6:] = 0
    ids[1, 6:] = 0
    return {"input_ids": ids, "attention_mask": mask,
            "decoder_input_ids": rng.integers(2, VOCAB, size=(batch, 5))}


def run_hf(model, values: dict, **kwargs):
    with torch.no_grad():
        return model(**{k: torch.as_tensor(v) for k, v in values.items()}, **kwargs)


def run_dl(model, values: dict, **kwargs):
    with dl.no_grad():
        return model(**{k: dl.tensor(v) for k, v in values.items()}, **kwargs)


def close(actual, expected, atol: float = 1e-4, what: str = "") -> None:
    actual = actual.numpy() if isinstance(actual, dl.Tensor) else np.asarray(actual)
    expected = expected.detach().numpy()
    assert actual.shape == expected.shape, what
    np.testing.assert_allclose(actual, expected, rtol=0, atol=atol, err_msg=what)


# ------------------------------------------------------------------------ forward
def test_logits_and_hidden_states_match_transformers(checkpoints, variant):
    folder, theirs = checkpoints[variant]
    model = hf.AutoModelForSeq2SeqLM.from_pretrained(folder)
    assert type(model) is hf.T5ForConditionalGeneration
    assert model.load_report == ([], [])
    tied = variant == "t5"
    assert (model.lm_head.weight is model.shared.weight) == tied
    assert model.config.scale_decoder_outputs == tied
    values = inputs()
    ours = run_dl(model, values, output_hidden_states=True)
    expected = run_hf(theirs, values, output_hidden_states=True)
    close(ours.logits, expected.logits, what="logits")
    close(ours.encoder_last_hidden_state, expected.encoder_last_hidden_state, what="encoder")
    for name in ("encoder_hidden_states", "decoder_hidden_states"):
        assert len(getattr(ours, name)) == len(getattr(expected, name))
        for k, (a, b) in enumerate(zip(getattr(ours, name), getattr(expected, name))):
            close(a, b, what=f"{name}[{k}]")


@pytest.mark.parametrize("head", ["base", "encoder"])
def test_base_and_encoder_models(head, tmp_path):
    # a decoder deeper than the encoder (transformers' generate cannot run one: its cache is
    # sized by num_layers, so the generation tests keep the stacks equal)
    torch.manual_seed(1)
    config = transformers.T5Config(**SHAPE, num_decoder_layers=3)
    theirs = getattr(transformers, HF_HEADS[head])(config).eval()
    theirs.save_pretrained(tmp_path)
    model = getattr(hf, HF_HEADS[head]).from_pretrained(tmp_path)
    assert model.load_report == ([], [])
    values = inputs()
    if head == "encoder":
        values.pop("decoder_input_ids")
    close(run_dl(model, values).last_hidden_state, run_hf(theirs, values).last_hidden_state)


def test_loss_from_labels(checkpoints, variant):
    folder, theirs = checkpoints[variant]
    model = hf.T5ForConditionalGeneration.from_pretrained(folder)
    values = inputs()
    del values["decoder_input_ids"]  # made from the labels, shifted right
    labels = np.random.default_rng(3).integers(2, VOCAB, size=(3, 6))
    labels[2, 4:] = -100
    ours = run_dl(model, {**values, "labels": labels})
    expected = run_hf(theirs, {**values, "labels": labels})
    close(ours.logits, expected.logits, what="logits")
    close(ours.loss, expected.loss, atol=1e-5, what="loss")


def test_gradients_match_transformers(checkpoints, variant):
    folder, theirs = checkpoints[variant]
    theirs = copy.deepcopy(theirs)
    model = hf.T5ForConditionalGeneration.from_pretrained(folder)
    values = inputs()
    labels = np.random.default_rng(4).integers(2, VOCAB, size=(3, 5))
    model(**{k: dl.tensor(v) for k, v in values.items()}, labels=dl.tensor(labels)).loss.backward()
    theirs(**{k: torch.as_tensor(v) for k, v in values.items()},
           labels=torch.as_tensor(labels)).loss.backward()
    close(model.shared.weight.grad, theirs.shared.weight.grad, what="shared embeddings")
    ours_bias = model.decoder.block[0].layer[0].SelfAttention.relative_attention_bias
    their_bias = theirs.decoder.block[0].layer[0].SelfAttention.relative_attention_bias
    close(ours_bias.weight.grad, their_bias.weight.grad, what="position bias table")


def test_relative_position_buckets_match_transformers():
    relative = np.arange(-60, 61)[None, :] - np.arange(0, 5)[:, None]
    for bidirectional in (True, False):
        expected = transformers.models.t5.modeling_t5.T5Attention._relative_position_bucket(
            torch.as_tensor(relative), bidirectional=bidirectional, num_buckets=32,
            max_distance=128)
        ours = relative_position_bucket(dl.tensor(relative), bidirectional, 32, 128)
        np.testing.assert_array_equal(ours.numpy(), expected.numpy())


def test_cached_decoding_equals_the_full_pass(checkpoints):
    folder, _ = checkpoints["v1_1"]
    model = hf.T5ForConditionalGeneration.from_pretrained(folder)
    values = inputs()
    full = run_dl(model, values).logits
    cache = EncoderDecoderCache()
    encoded = run_dl(model.encoder, {"input_ids": values["input_ids"],
                                     "attention_mask": values["attention_mask"]})
    steps = []
    for t in range(5):
        with dl.no_grad():
            out = model(decoder_input_ids=dl.tensor(values["decoder_input_ids"][:, t:t + 1]),
                        encoder_outputs=encoded, attention_mask=dl.tensor(values["attention_mask"]),
                        past_key_values=cache, use_cache=True)
        assert out.past_key_values is cache and cache.get_seq_length() == t + 1
        steps.append(out.logits.numpy())
    np.testing.assert_allclose(np.concatenate(steps, axis=1), full.numpy(), rtol=0, atol=1e-5)


# ------------------------------------------------------------------------ export
def test_transformers_loads_the_export(variant, tmp_path):
    config = hf.T5Config(**SHAPE, **VARIANTS[variant], tie_word_embeddings=variant == "t5")
    dl.manual_seed(0)
    model = hf.T5ForConditionalGeneration(config).eval()
    model.save_pretrained(tmp_path)
    theirs, info = transformers.T5ForConditionalGeneration.from_pretrained(
        tmp_path, output_loading_info=True)
    assert not any(info[k] for k in ("missing_keys", "unexpected_keys", "mismatched_keys")), info
    close(run_dl(model, inputs()).logits, run_hf(theirs.eval(), inputs()).logits)


def test_checkpoint_round_trips_name_for_name(checkpoints, variant, tmp_path):
    from safetensors.numpy import load_file

    folder, _ = checkpoints[variant]
    hf.T5ForConditionalGeneration.from_pretrained(folder).save_pretrained(tmp_path)
    original, ours = load_file(folder / "model.safetensors"), load_file(
        tmp_path / "model.safetensors")
    assert sorted(ours) == sorted(original)
    for name, value in original.items():
        np.testing.assert_array_equal(ours[name], value, err_msg=name)


# ------------------------------------------------------------------------ generation
GENERATION = {
    "greedy": dict(max_new_tokens=12),
    "beam": dict(max_new_tokens=12, num_beams=3),
    "beam, two returned": dict(max_new_tokens=10, num_beams=3, num_return_sequences=2,
                               length_penalty=0.5),
    "repetition penalty": dict(max_length=9, repetition_penalty=1.5),
}
SLOW_SETTINGS = ("beam, two returned", "repetition penalty")  # greedy and beam by default


@pytest.mark.parametrize("settings", [
    pytest.param(name, marks=pytest.mark.slow) if name in SLOW_SETTINGS else name
    for name in GENERATION])
def test_generate_is_token_identical_to_transformers(checkpoints, variant, settings):
    folder, theirs = checkpoints[variant]
    model = hf.T5ForConditionalGeneration.from_pretrained(folder)
    values = inputs(seed=1)
    del values["decoder_input_ids"]
    kwargs = GENERATION[settings]
    with torch.no_grad():
        expected = theirs.generate(**{k: torch.as_tensor(v) for k, v in values.items()},
                                   **kwargs)
    ours = model.generate(dl.tensor(values["input_ids"]),
                          attention_mask=dl.tensor(values["attention_mask"]), **kwargs)
    assert ours.numpy().tolist() == expected.tolist()


def test_encoder_runs_once_and_the_cache_changes_nothing(checkpoints, monkeypatch):
    folder, _ = checkpoints["v1_1"]
    model = hf.T5ForConditionalGeneration.from_pretrained(folder)
    prompt = dl.tensor(inputs(seed=2)["input_ids"])
    calls = []
    encoder_forward = type(model.encoder).forward

    def counted(stack, *args, **kwargs):
        calls.append(stack.is_decoder)
        return encoder_forward(stack, *args, **kwargs)

    monkeypatch.setattr(type(model.encoder), "forward", counted)
    cached = model.generate(prompt, max_new_tokens=8, num_beams=2)
    assert calls.count(False) == 1 and calls.count(True) == 8  # encoder once, decoder per step
    uncached = model.generate(prompt, max_new_tokens=8, num_beams=2, use_cache=False)
    assert cached.numpy().tolist() == uncached.numpy().tolist()


def test_sampling_is_seeded_and_top_k_1_is_greedy(checkpoints):
    folder, _ = checkpoints["v1_1"]
    model = hf.T5ForConditionalGeneration.from_pretrained(folder)
    prompt = dl.tensor(inputs(seed=2)["input_ids"])
    draws = [model.generate(prompt, max_new_tokens=10, do_sample=True,
                            generator=dl.Generator().manual_seed(7)).numpy() for _ in range(2)]
    np.testing.assert_array_equal(draws[0], draws[1])
    assert (draws[0][:, 0] == 0).all()  # every row starts with decoder_start_token_id
    np.testing.assert_array_equal(
        model.generate(prompt, max_new_tokens=10, do_sample=True, top_k=1).numpy(),
        model.generate(prompt, max_new_tokens=10).numpy())


def test_bad_inputs_are_named():
    config = hf.T5Config(**SHAPE)
    model = hf.T5ForConditionalGeneration(config).eval()
    with pytest.raises(ValueError, match="give decoder_input_ids"):
        model(input_ids=dl.tensor(np.ones((1, 3), dtype=np.int64)))
    with pytest.raises(dl.ShapeError, match=r"attention_mask must be \(batch, sequence\)"):
        model(input_ids=dl.tensor(np.ones((1, 3), dtype=np.int64)), attention_mask=dl.ones(1, 4),
              decoder_input_ids=dl.tensor(np.zeros((1, 1), dtype=np.int64)))
    with pytest.raises(ValueError, match="feed_forward_proj must be an activation"):
        hf.T5Config(feed_forward_proj="gated-gelu-2")
