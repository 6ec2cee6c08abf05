"""Llama, Mistral and Qwen2 against transformers: logits of the causal LM with and without
left padding for grouped-query attention, every supported RoPE scaling, attention and MLP
biases, tied and untied embeddings and sliding windows; the sequence classifier; the export
that transformers loads back; and refused or converted configs."""

from __future__ import annotations

import json

import dlfree as dl
from dlfree.hf.models.llama import (
    LlamaConfig,
    LlamaForCausalLM,
    LlamaForSequenceClassification,
    LlamaModel,
    LlamaRMSNorm,
)
from dlfree.hf.models.mistral import MistralForCausalLM, MistralForSequenceClassification
from dlfree.hf.models.qwen2 import Qwen2Config, Qwen2ForCausalLM, Qwen2ForSequenceClassification
from dlfree.hf.models.rope import ROPE_TYPES, inverse_frequencies

import numpy as np
import pytest

from support.hf import (
    PAD,
    VOCAB,
    assert_classifier_logits_match,
    assert_hidden_states_match,
    assert_lm_logits_match,
    assert_lm_loss_matches,
    assert_loss_gradients_match,
    assert_real_tokens_close,
    padded_batch,
    run_dl,
    run_hf,
)

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytestmark = pytest.mark.usefixtures("one_torch_thread")

LENGTH = 10
TINY = dict(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, intermediate_size=37, initializer_range=0.2,
            max_position_embeddings=64, pad_token_id=PAD, num_labels=3)

# name: (transformers family prefix, dl.free causal LM class, config changes)
VARIANTS = {
    "llama-gqa": ("Llama", LlamaForCausalLM, {}),
    "llama-mha-tied-biased": ("Llama", LlamaForCausalLM, {
        "num_key_value_heads": 4, "tie_word_embeddings": True, "attention_bias": True,
        "mlp_bias": True}),
    "llama-rope-linear": ("Llama", LlamaForCausalLM, {
        "rope_parameters": {"rope_type": "linear", "factor": 2.0, "rope_theta": 500.0}}),
    # the sequence (LENGTH) outgrows max_position_embeddings, where dynamic scaling acts
    "llama-rope-dynamic": ("Llama", LlamaForCausalLM, {
        "max_position_embeddings": 6,
        "rope_parameters": {"rope_type": "dynamic", "factor": 3.0, "rope_theta": 10000.0}}),
    # wavelengths 6.3, 63, 628, 6283 fall in the kept, blended and slowed bands
    "llama-rope-llama3": ("Llama", LlamaForCausalLM, {
        "rope_parameters": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                            "high_freq_factor": 4.0, "original_max_position_embeddings": 64,
                            "rope_theta": 10000.0}}),
    "mistral-window": ("Mistral", MistralForCausalLM, {"sliding_window": 4}),
    "qwen2": ("Qwen2", Qwen2ForCausalLM, {"tie_word_embeddings": True}),
    "qwen2-window-layer": ("Qwen2", Qwen2ForCausalLM, {
        "use_sliding_window": True, "sliding_window": 3, "max_window_layers": 1}),
}
CLASSIFIERS = {"Llama": LlamaForSequenceClassification, "Mistral": MistralForSequenceClassification,
               "Qwen2": Qwen2ForSequenceClassification}


def hf_model(family: str, head: str, seed: int, **changes):
    config = getattr(transformers, f"{family}Config")(**{**TINY, **changes})
    torch.manual_seed(seed)
    return getattr(transformers, f"{family}{head}")(config).eval()


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    """Builds and saves each transformers model once: (folder, model) by name."""
    made = {}

    def get(name: str, head: str = "ForCausalLM"):
        if (name, head) not in made:
            family, _, changes = VARIANTS[name]
            model = hf_model(family, head, len(made), **changes)
            folder = tmp_path_factory.mktemp(f"{name}-{head}")
            model.save_pretrained(folder)
            made[name, head] = (folder, model)
        return made[name, head]

    return get


def batch(padding: str):
    """Two rows of LENGTH tokens; the second padded by four (left or right) unless "none"."""
    return padded_batch(padding, length=LENGTH, pads=4, seed=3)


@pytest.mark.parametrize("padding", ["none", "left"])
@pytest.mark.parametrize("name", list(VARIANTS))
def test_causal_lm_logits_match_transformers(checkpoints, name, padding):
    folder, theirs = checkpoints(name)
    ours = VARIANTS[name][1].from_pretrained(folder)
    assert_lm_logits_match(ours, theirs, *batch(padding))


def test_dynamic_rope_scales_only_past_max_positions(checkpoints):
    """Dynamic scaling is the plain RoPE up to max_position_embeddings (6) and differs once
    the sequence outgrows it, for every position (a test blind to the setting would fail)."""
    folder, _ = checkpoints("llama-rope-dynamic")
    dynamic = LlamaForCausalLM.from_pretrained(folder)
    plain = LlamaForCausalLM.from_pretrained(folder, rope_parameters={"rope_type": "default"})
    ids, mask = batch("none")
    short = (ids[:, :6], mask[:, :6])
    np.testing.assert_array_equal(run_dl(dynamic, *short).logits.numpy(),
                                  run_dl(plain, *short).logits.numpy())
    change = np.abs(run_dl(dynamic, ids, mask).logits.numpy()
                    - run_dl(plain, ids, mask).logits.numpy()).max(axis=-1)
    assert change[:, 1:].min() > 1e-4  # position 0 has angle 0 under any frequency


def test_hidden_states_and_base_model(checkpoints):
    folder, theirs = checkpoints("llama-gqa")
    ours = LlamaModel.from_pretrained(folder)  # the causal-LM checkpoint, "model." dropped
    assert_hidden_states_match(ours, theirs.model, *batch("left"))


def test_tying_follows_the_config(checkpoints):
    tied = LlamaForCausalLM.from_pretrained(checkpoints("llama-mha-tied-biased")[0])
    untied = LlamaForCausalLM.from_pretrained(checkpoints("llama-gqa")[0])
    assert tied.lm_head.weight is tied.model.embed_tokens.weight
    assert untied.lm_head.weight is not untied.model.embed_tokens.weight
    assert tied.model.layers[0].self_attn.o_proj.bias is not None
    assert untied.model.layers[0].self_attn.q_proj.bias is None
    qwen = Qwen2ForCausalLM.from_pretrained(checkpoints("qwen2")[0])
    attention = qwen.model.layers[0].self_attn
    assert attention.q_proj.bias is not None and attention.o_proj.bias is None


@pytest.mark.parametrize("padding", ["left", "right"])
@pytest.mark.parametrize("name", ["llama-gqa", "mistral-window", "qwen2"])
def test_sequence_classification_matches_transformers(checkpoints, name, padding):
    folder, theirs = checkpoints(name, "ForSequenceClassification")
    ours = CLASSIFIERS[VARIANTS[name][0]].from_pretrained(folder)
    assert_classifier_logits_match(ours, theirs, *batch(padding))


def test_causal_lm_loss_matches_transformers(checkpoints):
    folder, theirs = checkpoints("qwen2")
    ours = Qwen2ForCausalLM.from_pretrained(folder)
    assert_lm_loss_matches(ours, theirs, *batch("right"))


@pytest.mark.parametrize("name", ["llama-gqa", "qwen2-window-layer"])
def test_loss_gradients_match_transformers(checkpoints, name):
    """Fine-tuning sees the same gradients: rotary positions, grouped heads, the window and
    the biases all differentiate as in transformers."""
    folder, theirs = checkpoints(name)
    ours = VARIANTS[name][1].from_pretrained(folder)
    assert_loss_gradients_match(ours, theirs, *batch("left"))


@pytest.mark.parametrize("name", ["llama-gqa", "llama-mha-tied-biased", "llama-rope-llama3",
                                  "mistral-window", "qwen2-window-layer"])
def test_export_loads_in_transformers(checkpoints, name, tmp_path):
    folder, theirs = checkpoints(name)
    ours = VARIANTS[name][1].from_pretrained(folder)
    ours.save_pretrained(tmp_path)
    config = json.loads((tmp_path / "config.json").read_text())
    assert config["architectures"] == [type(ours).__name__]
    reloaded, info = type(theirs).from_pretrained(tmp_path, output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"], info
    ids, mask = batch("left")
    assert_real_tokens_close(run_hf(reloaded.eval(), ids, mask).logits,
                             run_hf(theirs, ids, mask).logits, mask, atol=1e-6)


def test_half_precision_rms_norm_does_not_overflow():
    """Activations of a few hundred square beyond float16's range: the norm works in
    float32, as transformers' LlamaRMSNorm does."""
    hidden = np.random.default_rng(0).standard_normal((2, 3, 32)).astype(np.float32) * 600
    norm = LlamaRMSNorm(32, 1e-6)
    reference = torch.nn.RMSNorm(32, eps=1e-6)
    with dl.no_grad(), torch.no_grad():
        norm.weight.copy_(dl.tensor(np.linspace(0.5, 1.5, 32, dtype=np.float32)))
        reference.weight.copy_(torch.linspace(0.5, 1.5, 32))
        got = norm.half()(dl.tensor(hidden).half()).float().numpy()
        expected = reference(torch.as_tensor(hidden).half().float()).numpy()
    np.testing.assert_allclose(got, expected, rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("name", ["llama-gqa", "mistral-window", "qwen2"])
def test_auto_classes_dispatch_on_model_type(checkpoints, name):
    """The families are registered architectures: the Auto classes pick them from
    config.json (each head, including a new classifier from a causal-LM checkpoint)."""
    from dlfree import hf

    folder, theirs = checkpoints(name)
    family = VARIANTS[name][0]
    assert type(hf.AutoConfig.from_pretrained(folder)).__name__ == f"{family}Config"
    lm = hf.AutoModelForCausalLM.from_pretrained(folder)
    assert type(lm).__name__ == f"{family}ForCausalLM"
    assert type(hf.AutoModel.from_pretrained(folder)).__name__ == f"{family}Model"
    classifier = hf.AutoModelForSequenceClassification.from_pretrained(folder)
    assert classifier.load_report.missing_keys == ["score.weight"]
    ids, mask = batch("none")
    assert_real_tokens_close(run_dl(lm, ids, mask).logits, run_hf(theirs, ids, mask).logits,
                             mask)


# --------------------------------------------------------------------- configs
def test_legacy_rope_keys_become_rope_parameters():
    config = LlamaConfig.from_dict({"rope_theta": 500000.0, "max_position_embeddings": 32,
                                    "rope_scaling": {"type": "llama3", "factor": 8.0,
                                                     "low_freq_factor": 1.0,
                                                     "high_freq_factor": 4.0}})
    assert config.rope_parameters == {"rope_type": "llama3", "rope_theta": 500000.0,
                                      "factor": 8.0, "low_freq_factor": 1.0,
                                      "high_freq_factor": 4.0,
                                      "original_max_position_embeddings": 32}
    assert "rope_scaling" not in config.to_dict() and "rope_theta" not in config.to_dict()


def test_inverse_frequencies_follow_transformers():
    """The frequency tables of each supported type, against transformers' functions."""
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    head_dim = 16
    cases = {"linear": {"factor": 4.0}, "dynamic": {"factor": 2.0},
             "llama3": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                        "original_max_position_embeddings": 256}}
    assert set(cases) | {"default"} == set(ROPE_TYPES)
    for kind, extra in cases.items():
        params = {"rope_type": kind, "rope_theta": 10000.0, **extra}
        hf = transformers.LlamaConfig(hidden_size=64, num_attention_heads=4,
                                      max_position_embeddings=128, rope_parameters=dict(params))
        for seq_len in (None, 300):
            expected, _ = ROPE_INIT_FUNCTIONS[kind](hf, None, seq_len=seq_len)
            got = inverse_frequencies(params, head_dim, 128, seq_len)
            np.testing.assert_allclose(got, expected.numpy(), rtol=1e-6, err_msg=kind)


@pytest.mark.parametrize("rope, message", [
    ({"rope_type": "yarn", "factor": 2.0}, "'yarn' is not supported; dl.free implements"),
    ({"rope_type": "linear"}, "needs factor"),
    ({"rope_type": "dynamic", "factor": -1.0}, "factor.*> 0"),
    ({"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 4.0, "high_freq_factor": 1.0},
     "high_freq_factor > low_freq_factor"),
    ({"rope_type": "default", "partial_rotary_factor": 0.5}, "partial_rotary_factor"),
])
def test_unsupported_rope_is_refused(rope, message):
    with pytest.raises(ValueError, match=message):
        LlamaConfig.from_dict({"rope_parameters": rope})


@pytest.mark.parametrize("fields, message", [
    ({"hidden_size": 30, "num_attention_heads": 4}, "divisible by num_attention_heads"),
    ({"num_key_value_heads": 3}, "multiple of num_key_value_heads"),
    ({"hidden_act": "swiglu"}, "hidden_act"),
    ({"pretraining_tp": 2}, "pretraining_tp"),
])
def test_bad_llama_config_is_refused(fields, message):
    with pytest.raises(ValueError, match=message):
        LlamaConfig.from_dict({"hidden_size": 32, "num_attention_heads": 4, **fields})


def test_qwen2_layer_types_are_checked():
    with pytest.raises(ValueError, match="one of"):
        Qwen2Config.from_dict({"num_hidden_layers": 2, "layer_types": ["full_attention"]})
    with pytest.raises(ValueError, match="use_sliding_window"):
        Qwen2Config.from_dict({"num_hidden_layers": 1, "layer_types": ["sliding_attention"]})
    windowed = Qwen2Config.from_dict({"num_hidden_layers": 3, "use_sliding_window": True,
                                      "sliding_window": 5, "max_window_layers": 2})
    assert [windowed.sliding_window_of(i) for i in range(3)] == [None, None, 5]
