"""Generation against transformers' `generate`: greedy and beam search token for token (with
end tokens, left-padded batches and several length_penalty / early_stopping settings),
repetition penalty, seeded sampling, the logits processors' scores, the streamer, and the
KV cache (same logits as a full recompute; one token fed per step; geometric growth)."""

from __future__ import annotations

import dlfree as dl
from dlfree.hf.generation import (
    KVCache,
    LogitsProcessorList,
    RepetitionPenaltyLogitsProcessor,
    TemperatureLogitsWarper,
    TopKLogitsWarper,
    TopPLogitsWarper,
)
from dlfree.hf.models.gpt2 import GPT2LMHeadModel
from dlfree.hf.models.llama import LlamaForCausalLM
from dlfree.hf.models.mistral import MistralForCausalLM

import numpy as np
import pytest

from support.hf import PAD, VOCAB, padded_batch

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytestmark = pytest.mark.usefixtures("one_torch_thread")

EOS = 2
COMMON = dict(vocab_size=VOCAB, initializer_range=0.2, bos_token_id=1, eos_token_id=EOS,
              pad_token_id=PAD)
MODELS = {
    "gpt2": (transformers.GPT2Config, transformers.GPT2LMHeadModel, GPT2LMHeadModel,
             dict(n_embd=32, n_layer=2, n_head=4, n_positions=64)),
    "llama": (transformers.LlamaConfig, transformers.LlamaForCausalLM, LlamaForCausalLM,
              dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                   num_key_value_heads=2, intermediate_size=37)),
    "mistral": (transformers.MistralConfig, transformers.MistralForCausalLM,
                MistralForCausalLM,
                dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                     num_key_value_heads=2, intermediate_size=37, sliding_window=4)),
}


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """(transformers model, dl.free model loaded from its checkpoint, the checkpoint's folder)
    by name, made once."""
    made = {}

    def get(name):
        if name not in made:
            config_cls, hf_cls, dl_cls, fields = MODELS[name]
            torch.manual_seed(len(made))
            theirs = hf_cls(config_cls(**COMMON, **fields)).eval()
            folder = tmp_path_factory.mktemp(name)
            theirs.save_pretrained(folder)
            made[name] = (theirs, dl_cls.from_pretrained(folder), folder)
        return made[name]

    return get


def prompts(padding: str = "left"):
    """Two prompts of five tokens, the second left-padded by two unless padding="none"."""
    return padded_batch(padding, length=5, pads=2, seed=11)


def hf_generate(model, ids, mask, **kwargs) -> np.ndarray:
    with torch.no_grad():
        return model.generate(torch.as_tensor(ids), attention_mask=torch.as_tensor(mask),
                              **kwargs).numpy()


def dl_generate(model, ids, mask, **kwargs) -> np.ndarray:
    return model.generate(dl.tensor(ids), attention_mask=dl.tensor(mask), **kwargs).numpy()


def an_end_token(model, ids, mask) -> int:
    """A token greedy decoding produces mid-way in the first row, so that making it an end
    token stops that row early."""
    tokens = dl_generate(model, ids, mask, max_new_tokens=6, eos_token_id=VOCAB + 1)
    return int(tokens[0, ids.shape[1] + 3])


# ----------------------------------------------------------------- vs transformers
@pytest.mark.parametrize("padding", ["none", "left"])
@pytest.mark.parametrize("name", list(MODELS))
def test_greedy_matches_transformers(models, name, padding):
    theirs, ours, _ = models(name)
    ids, mask = prompts(padding)
    expected = hf_generate(theirs, ids, mask, max_new_tokens=12, do_sample=False)
    np.testing.assert_array_equal(dl_generate(ours, ids, mask, max_new_tokens=12), expected)


@pytest.mark.parametrize("name", ["gpt2", "llama"])
def test_end_tokens_stop_rows_and_pad_them(models, name):
    theirs, ours, _ = models(name)
    ids, mask = prompts()
    end = an_end_token(ours, ids, mask)
    settings = dict(max_new_tokens=10, eos_token_id=[VOCAB + 5, end], pad_token_id=7)
    got = dl_generate(ours, ids, mask, **settings)
    np.testing.assert_array_equal(got, hf_generate(theirs, ids, mask, do_sample=False,
                                                   **settings))
    continuation = got[0, ids.shape[1]:]
    stop = int(np.flatnonzero(continuation == end)[0])
    assert stop < len(continuation) - 1 and (continuation[stop + 1:] == 7).all()


BEAM_SETTINGS = [
    dict(length_penalty=1.0, early_stopping=False),
    dict(length_penalty=2.0, early_stopping=True),
    dict(length_penalty=0.5, early_stopping="never"),
    dict(length_penalty=-1.0, early_stopping=False, num_return_sequences=2),
]


@pytest.mark.parametrize("settings", BEAM_SETTINGS,
                         ids=lambda s: "-".join(f"{k}={v}" for k, v in s.items()))
@pytest.mark.parametrize("name", ["gpt2", "llama"])
def test_beam_search_matches_transformers(models, name, settings):
    theirs, ours, _ = models(name)
    ids, mask = prompts()
    end = an_end_token(ours, ids, mask)
    kwargs = dict(num_beams=3, max_new_tokens=9, eos_token_id=end, **settings)
    expected = hf_generate(theirs, ids, mask, do_sample=False, **kwargs)
    np.testing.assert_array_equal(dl_generate(ours, ids, mask, **kwargs), expected)


@pytest.mark.parametrize("early_stopping", [True, False, "never"])
def test_beam_search_stops_early_as_transformers(models, early_stopping):
    """With most tokens ending a hypothesis, beams finish within a few steps: when decoding
    stops then depends on early_stopping, and must agree with transformers."""
    theirs, ours, _ = models("llama")
    ids, mask = prompts()
    kwargs = dict(num_beams=3, max_new_tokens=9, eos_token_id=list(range(3, 60)),
                  early_stopping=early_stopping)
    got = dl_generate(ours, ids, mask, **kwargs)
    np.testing.assert_array_equal(got, hf_generate(theirs, ids, mask, do_sample=False,
                                                   **kwargs))
    assert got.shape[1] < ids.shape[1] + 9  # every kept hypothesis ended early


@pytest.mark.parametrize("name", ["gpt2", "llama"])
def test_repetition_penalty_matches_transformers(models, name):
    theirs, ours, _ = models(name)
    ids, mask = prompts()
    plain = dl_generate(ours, ids, mask, max_new_tokens=12)
    penalised = dl_generate(ours, ids, mask, max_new_tokens=12, repetition_penalty=3.0)
    np.testing.assert_array_equal(penalised, hf_generate(theirs, ids, mask, do_sample=False,
                                                         max_new_tokens=12,
                                                         repetition_penalty=3.0))
    assert (plain != penalised).any()  # the penalty changed the text


# ------------------------------------------------------------------------ sampling
@pytest.mark.parametrize("name", ["gpt2", "llama"])
def test_sampling_with_top_k_1_is_greedy(models, name):
    _, ours, _ = models(name)
    ids, mask = prompts()
    greedy = dl_generate(ours, ids, mask, max_new_tokens=10)
    sampled = dl_generate(ours, ids, mask, max_new_tokens=10, do_sample=True, top_k=1,
                          temperature=3.0, generator=dl.Generator().manual_seed(0))
    np.testing.assert_array_equal(sampled, greedy)


@pytest.mark.parametrize("num_beams", [1, 2])
def test_seeded_sampling_is_reproducible(models, num_beams):
    _, ours, _ = models("llama")
    ids, mask = prompts()

    def sample(seed):
        return dl_generate(ours, ids, mask, max_new_tokens=12, do_sample=True,
                           temperature=2.0, top_p=0.95, num_beams=num_beams,
                           generator=dl.Generator().manual_seed(seed))

    first = sample(1)
    np.testing.assert_array_equal(sample(1), first)
    assert (sample(2) != first).any()
    dl.manual_seed(5)  # the global generator, when none is given
    once = dl_generate(ours, ids, mask, max_new_tokens=12, do_sample=True, temperature=2.0)
    dl.manual_seed(5)
    np.testing.assert_array_equal(
        dl_generate(ours, ids, mask, max_new_tokens=12, do_sample=True, temperature=2.0), once)


def test_several_samples_per_prompt(models):
    _, ours, _ = models("gpt2")
    ids, mask = prompts()
    out = dl_generate(ours, ids, mask, max_new_tokens=6, do_sample=True, temperature=2.0,
                      num_return_sequences=3, generator=dl.Generator().manual_seed(0))
    assert out.shape == (6, 11)
    np.testing.assert_array_equal(out[:, :5], np.repeat(ids, 3, axis=0))


def random_scores(seed=0):
    rng = np.random.default_rng(seed)
    scores = (rng.standard_normal((3, 50)) * 2).astype(np.float32)
    input_ids = rng.integers(0, 50, size=(3, 8))
    input_ids[:, -2:] = input_ids[:, :2]  # repeats, for the penalty
    return input_ids, scores


PROCESSORS = {
    "temperature": lambda m: [m.TemperatureLogitsWarper(0.7)],
    "top-k": lambda m: [m.TopKLogitsWarper(5)],
    "top-k-keep-7": lambda m: [m.TopKLogitsWarper(5, min_tokens_to_keep=7)],
    "top-p": lambda m: [m.TopPLogitsWarper(0.8)],
    "top-p-keep-2": lambda m: [m.TopPLogitsWarper(0.2, min_tokens_to_keep=2)],
    "repetition": lambda m: [m.RepetitionPenaltyLogitsProcessor(1.5)],
    "repetition-skip-padding": lambda m: [m.RepetitionPenaltyLogitsProcessor(
        1.5, prompt_ignore_length=torch.tensor([0, 3, 5]) if m is transformers
        else dl.tensor([0, 3, 5]))],
    "temperature-top-k-top-p": lambda m: [m.TemperatureLogitsWarper(0.5),
                                          m.TopKLogitsWarper(10), m.TopPLogitsWarper(0.9)],
}


class _Ours:
    """dl.free's processor classes under transformers' names, for the table above."""

    TemperatureLogitsWarper = TemperatureLogitsWarper
    TopKLogitsWarper = TopKLogitsWarper
    TopPLogitsWarper = TopPLogitsWarper
    RepetitionPenaltyLogitsProcessor = RepetitionPenaltyLogitsProcessor


@pytest.mark.parametrize("name", list(PROCESSORS))
def test_processed_scores_match_transformers(name):
    input_ids, scores = random_scores()
    expected = transformers.LogitsProcessorList(PROCESSORS[name](transformers))(
        torch.as_tensor(input_ids), torch.as_tensor(scores)).numpy()
    got = LogitsProcessorList(PROCESSORS[name](_Ours))(dl.tensor(input_ids),
                                                       dl.tensor(scores)).numpy()
    assert np.isfinite(got).sum() == np.isfinite(expected).sum()
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=0)
    assert not np.array_equal(got, scores)  # the processor did something


@pytest.mark.parametrize("make, message", [
    (lambda: TemperatureLogitsWarper(0.0), "temperature"),
    (lambda: TopKLogitsWarper(0), "top_k"),
    (lambda: TopPLogitsWarper(1.5), "top_p"),
    (lambda: RepetitionPenaltyLogitsProcessor(-1.0), "repetition_penalty"),
])
def test_bad_processor_settings_are_refused(make, message):
    with pytest.raises(ValueError, match=message):
        make()


# ---------------------------------------------------------------------- streaming
def test_streamer_receives_each_step(models):
    _, ours, _ = models("gpt2")
    ids, mask = prompts()
    received = []
    out = dl_generate(ours, ids, mask, max_new_tokens=7, streamer=received.append)
    assert len(received) == 7
    np.testing.assert_array_equal(np.stack([t.numpy() for t in received], axis=1),
                                  out[:, ids.shape[1]:])


# ---------------------------------------------------------------------- KV cache
@pytest.mark.parametrize("name", list(MODELS))
def test_cached_steps_equal_a_full_recompute(models, name):
    """Feeding one token at a time through the cache gives, at every step, the logits of
    running the whole sequence again (padding, positions and the sliding window included)."""
    _, ours, _ = models(name)
    ids, mask = prompts()
    steps = 8
    tokens = np.concatenate([ids, np.random.default_rng(0).integers(3, VOCAB, (2, steps))], 1)
    full_mask = np.concatenate([mask, np.ones((2, steps), dtype=mask.dtype)], 1)
    positions = np.where(full_mask == 0, 0, np.cumsum(full_mask, 1) - 1)
    cache = KVCache()
    with dl.no_grad():
        for end in range(ids.shape[1], tokens.shape[1] + 1):
            start = cache.get_seq_length()
            step = ours(dl.tensor(tokens[:, start:end]), dl.tensor(full_mask[:, :end]),
                        dl.tensor(positions[:, start:end]), past_key_values=cache,
                        use_cache=True).logits.numpy()[:, -1]
            whole = ours(dl.tensor(tokens[:, :end]), dl.tensor(full_mask[:, :end]),
                         dl.tensor(positions[:, :end])).logits.numpy()[:, -1]
            np.testing.assert_allclose(step, whole, rtol=0, atol=1e-5)
            assert cache.get_seq_length() == end


@pytest.mark.parametrize("num_beams", [1, 3])
def test_one_token_is_fed_per_step_after_the_prompt(models, num_beams):
    _, ours, _ = models("llama")
    ids, mask = prompts()
    fed = []
    with ours.register_forward_pre_hook(lambda module, args: fed.append(tuple(args[0].shape))):
        out = dl_generate(ours, ids, mask, max_new_tokens=6, num_beams=num_beams,
                          eos_token_id=VOCAB + 1)
    assert out.shape == (2, 11)
    rows = 2 * num_beams
    assert fed == [(2, 5)] + [(rows, 1)] * 5


def test_without_the_cache_the_sequence_is_recomputed(models):
    _, ours, _ = models("gpt2")
    ids, mask = prompts()
    fed = []
    with ours.register_forward_pre_hook(lambda module, args: fed.append(args[0].shape[1])):
        uncached = dl_generate(ours, ids, mask, max_new_tokens=6, use_cache=False)
    assert fed == [5, 6, 7, 8, 9, 10]
    np.testing.assert_array_equal(uncached, dl_generate(ours, ids, mask, max_new_tokens=6))


def test_cache_grows_geometrically_and_keeps_its_contents():
    cache = KVCache()
    rng = np.random.default_rng(0)
    keys = rng.standard_normal((2, 3, 100, 4)).astype(np.float32)
    buffers = set()
    with dl.no_grad():
        for t in range(100):
            step = dl.tensor(keys[:, :, t:t + 1])
            cached, _ = cache.update(0, step, step)
            buffers.add(id(cached.array.base))
    assert len(buffers) <= 8  # capacities 1, 2, 4, ..., 128: not one copy per token
    np.testing.assert_array_equal(cached.numpy(), keys)
    reserved = KVCache(reserve=100)
    with dl.no_grad():
        first, _ = reserved.update(0, dl.tensor(keys[:, :, :1]), dl.tensor(keys[:, :, :1]))
        last, _ = reserved.update(0, dl.tensor(keys[:, :, 1:]), dl.tensor(keys[:, :, 1:]))
    assert first.array.base is last.array.base


def test_cache_refuses_values_that_need_gradients():
    cache = KVCache()
    key = dl.randn(1, 2, 3, 4, requires_grad=True)
    with pytest.raises(dl.AutogradError, match="no_grad"):
        cache.update(0, key, key)


def test_generation_is_the_same_on_each_backend(models, device):
    """Greedy, beam and seeded sampled decoding give the CPU's tokens on every backend."""
    _, on_cpu, folder = models("llama")
    model = LlamaForCausalLM.from_pretrained(folder, device=device)
    ids, mask = prompts()
    for kwargs in (dict(), dict(num_beams=3, length_penalty=0.5),
                   dict(do_sample=True, temperature=2.0, top_k=20, top_p=0.9,
                        repetition_penalty=1.3)):
        seeded = {"generator": dl.Generator().manual_seed(0)} if "do_sample" in kwargs else {}
        out = model.generate(dl.tensor(ids, device=device),
                             attention_mask=dl.tensor(mask, device=device), max_new_tokens=8,
                             **kwargs, **seeded)
        assert out.device == dl.Device(device)
        seeded = {"generator": dl.Generator().manual_seed(0)} if "do_sample" in kwargs else {}
        np.testing.assert_array_equal(out.cpu().numpy(), dl_generate(on_cpu, ids, mask,
                                                                     max_new_tokens=8,
                                                                     **kwargs, **seeded))


# ------------------------------------------------------------------- bad arguments
@pytest.mark.parametrize("kwargs, error, message", [
    (dict(max_new_tokens=0), ValueError, "max_new_tokens"),
    (dict(max_length=5), ValueError, "no room"),
    (dict(num_beams=0), ValueError, "num_beams"),
    (dict(num_beams=2, num_return_sequences=3), ValueError, "num_return_sequences"),
    (dict(num_return_sequences=2), ValueError, "greedy"),
    (dict(early_stopping="sometimes"), ValueError, "early_stopping"),
    (dict(do_sample=True, temperature=0.0), ValueError, "temperature"),
    (dict(do_sample=True, top_p=1.5), ValueError, "top_p"),
    (dict(eos_token_id="end"), ValueError, "eos_token_id"),
    (dict(num_beams=2, streamer=print), ValueError, "streamer"),
    (dict(generator=np.random.default_rng(0)), TypeError, "dl.Generator"),
    (dict(attention_mask=np.ones((2, 4))), dl.ShapeError, "attention_mask"),
])
def test_bad_generate_arguments_are_refused(models, kwargs, error, message):
    _, ours, _ = models("gpt2")
    ids, mask = prompts()
    kwargs = {"attention_mask": mask, **kwargs}
    with pytest.raises(error, match=message):
        ours.generate(dl.tensor(ids), **kwargs)
