"""nn.CausalTransformer: cached decoding agrees with the full pass (float64, 1e-6) and does
constant work per step in the prefix length (counted from the profiler's op shapes), parity
with the same model in PyTorch (forward 1e-5, gradients 1e-4, float32), weight tying, the
model file round trip, gradcheck, and the errors for bad ids."""

from __future__ import annotations

import dlfree as dl
from dlfree import ShapeError, nn, profiler

import numpy as np
import pytest
import torch

from support.specs import Int
from support.torch_causal_lm import TorchCausalTransformer
from support.torch_copy import check_pair, dl_to_torch, torch_to_dl

VOCAB, CONTEXT, WIDTH, HEADS = 13, 80, 16, 4
POSITIONS = ["learned", "rotary"]


def _model(positions: str, dtype=dl.float64, **options):
    dl.manual_seed(0)
    config = {"vocab_size": VOCAB, "max_len": CONTEXT, "d_model": WIDTH, "n_heads": HEADS,
              "n_layers": 2, "positions": positions, "dtype": dtype, **options}
    return nn.CausalTransformer(**config).eval()


def _assert_close(got, want) -> None:
    """float64 agreement to 1e-6."""
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-6,
                               atol=1e-6)


def _ids(batch: int, length: int, seed: int = 1):
    return dl.tensor(np.random.default_rng(seed).integers(0, VOCAB, (batch, length)))


@pytest.mark.parametrize("positions", POSITIONS)
def test_cached_decoding_matches_the_full_pass(positions):
    model, ids = _model(positions), _ids(2, 12)
    full = model(ids)
    cache = model.new_cache()
    steps = [model(ids[:, :5], cache=cache)]  # the prompt, then one token at a time
    steps += [model(ids[:, i:i + 1], cache=cache) for i in range(5, 12)]
    _assert_close(dl.cat(steps, 1), full)
    assert cache.get_seq_length() == 12


@pytest.mark.parametrize("positions", POSITIONS)
def test_a_cached_chunk_attends_to_the_prefix_and_causally_within(positions):
    model, ids = _model(positions), _ids(1, 9)
    cache = model.new_cache()
    chunks = [model(ids[:, :3], cache=cache), model(ids[:, 3:7], cache=cache),
              model(ids[:, 7:], cache=cache)]
    _assert_close(dl.cat(chunks, 1), model(ids))


def _step_ops(model, prefix: int) -> list:
    """(op, input shapes) of every forward op of one cached step after `prefix` tokens."""
    cache = model.new_cache()
    model(_ids(1, prefix), cache=cache)
    with profiler.profile(record_shapes=True) as prof:
        model(_ids(1, 1, seed=2), cache=cache)
    return [(e.name, e.input_shapes) for e in prof.events() if e.kind == "forward"]


@pytest.mark.parametrize("positions", POSITIONS)
def test_a_cached_step_does_constant_work_outside_attention(positions):
    model = _model(positions, dtype=dl.float32)
    short, long = _step_ops(model, 8), _step_ops(model, 64)
    assert [name for name, _ in short] == [name for name, _ in long]
    attention = [i for i, (name, _) in enumerate(short) if name == "attention"]
    assert len(attention) == 2  # one per layer
    for i, ((_, a), (_, b)) in enumerate(zip(short, long)):
        if i not in attention:  # same op on the same shapes: independent of the prefix
            assert a == b, f"op {short[i][0]} sees {a} after 8 tokens, {b} after 64"
            continue
        head = (1, HEADS)
        # one query against every cached key and value: linear in the prefix, nothing more
        assert a == ((*head, 1, 4), (*head, 9, 4), (*head, 9, 4))
        assert b == ((*head, 1, 4), (*head, 65, 4), (*head, 65, 4))


def test_the_cache_is_preallocated_and_never_copies_the_prefix():
    model = _model("learned")
    cache = model.new_cache()
    model(_ids(1, 3), cache=cache)
    buffer = cache._keys[0]
    assert buffer.shape == (1, HEADS, CONTEXT, WIDTH // HEADS)
    model(_ids(1, 1), cache=cache)
    assert cache._keys[0] is buffer and cache.get_seq_length(1) == 4


@pytest.mark.parametrize("positions", POSITIONS)
@pytest.mark.parametrize("tie", [True, False])
def test_parity_with_the_same_model_in_torch(positions, tie):
    options = {"n_layers": 2, "positions": positions, "tie_weights": tie}
    ours = _model(positions, dtype=dl.float32, tie_weights=tie)
    torch.manual_seed(0)
    theirs = TorchCausalTransformer(VOCAB, CONTEXT, WIDTH, HEADS, **options)
    torch_to_dl(theirs, ours)
    check_pair(ours, theirs, [Int((3, 10), high=VOCAB)])


def test_dl_weights_copy_into_torch_and_agree():
    ours = _model("rotary", dtype=dl.float32, bias=False, norm_eps=1e-6)
    theirs = TorchCausalTransformer(VOCAB, CONTEXT, WIDTH, HEADS, positions="rotary",
                                    bias=False, norm_eps=1e-6)
    dl_to_torch(ours, theirs)
    check_pair(ours, theirs, [Int((2, 7), high=VOCAB)], grad=False)


def test_tied_weights_are_one_parameter_that_gathers_both_gradients():
    tied, untied = _model("learned"), _model("learned", tie_weights=False)
    assert tied.lm_head.weight is tied.tok_emb.weight
    assert untied.lm_head.weight is not untied.tok_emb.weight
    assert len(list(untied.parameters())) == len(list(tied.parameters())) + 1
    tied(_ids(2, 6)).sum().backward()
    grad = tied.tok_emb.weight.grad.detach().numpy()
    # the head's share alone touches every row; the lookup's adds to the rows it used
    assert np.count_nonzero(np.abs(grad).sum(1)) == VOCAB


@pytest.mark.parametrize("tie", [True, False])
def test_model_file_round_trip(tmp_path, tie):
    model = _model("rotary", tie_weights=tie, d_ff=24)
    path = tmp_path / "lm.safetensors"
    dl.save(model, path)
    loaded = dl.load(path)
    assert isinstance(loaded, nn.CausalTransformer) and not loaded.training
    assert (loaded.lm_head.weight is loaded.tok_emb.weight) == tie
    ids = _ids(2, 5)
    np.testing.assert_array_equal(loaded(ids).detach().numpy(), model(ids).detach().numpy())


@pytest.mark.parametrize("positions", POSITIONS)
def test_gradcheck_of_every_parameter(positions):
    dl.manual_seed(0)
    model = nn.CausalTransformer(5, max_len=6, d_model=4, n_heads=2, n_layers=1, d_ff=6,
                                 positions=positions, dtype=dl.float64)
    ids = dl.tensor([[0, 3, 1, 4], [2, 2, 0, 1]])
    params = list(model.parameters())
    assert dl.autograd.gradcheck(lambda *_: model(ids), params)


def test_dropout_acts_in_training_only():
    model = _model("learned", dropout=0.5)
    ids = _ids(1, 6)
    reference = model(ids).detach().numpy()
    np.testing.assert_array_equal(model(ids).detach().numpy(), reference)
    assert not np.allclose(model.train()(ids).detach().numpy(), reference)


def test_a_cached_pass_records_no_graph():
    model = _model("learned")
    logits = model(_ids(1, 3), cache=model.new_cache())
    assert not logits.requires_grad


def test_cache_reorder_and_repeat_follow_the_batch_rows():
    model = _model("learned")
    ids = _ids(2, 4)
    cache = model.new_cache()
    model(ids, cache=cache)
    cache.reorder([1, 1, 0])
    step = _ids(3, 1, seed=5)
    got = model(step, cache=cache)
    want = model(dl.cat([ids[[1, 1, 0]], step], 1))[:, -1:]
    _assert_close(got, want)
    cache.repeat_interleave(2)
    assert cache._keys[0].shape[0] == 6 and cache.get_seq_length() == 5


def test_ids_beyond_the_context_name_max_len():
    model = _model("learned")
    with pytest.raises(ShapeError, match=f"exceed max_len = {CONTEXT}"):
        model(_ids(1, CONTEXT + 1))
    cache = model.new_cache()
    model(_ids(1, CONTEXT - 1), cache=cache)
    model(_ids(1, 1), cache=cache)
    with pytest.raises(ShapeError, match=f"after the {CONTEXT} positions in the cache exceed "
                                         f"max_len = {CONTEXT}"):
        model(_ids(1, 1), cache=cache)


def test_ids_outside_the_vocabulary_name_vocab_size():
    model = _model("learned")
    with pytest.raises(IndexError, match=rf"\[0, vocab_size = {VOCAB}\), got ids from 0 to "
                                         f"{VOCAB}"):
        model(dl.tensor([[0, VOCAB]]))
    with pytest.raises(IndexError, match="got ids from -1"):
        model(dl.tensor([[-1, 2]]))


@pytest.mark.parametrize(("ids", "error", "message"), [
    (dl.tensor([[0.0, 1.0]]), dl.DTypeError, "integer token ids"),
    (dl.tensor([0, 1]), ShapeError, r"\(batch, seq\)"),
    ([[0, 1]], TypeError, "must be a Tensor"),
])
def test_malformed_ids_are_refused(ids, error, message):
    with pytest.raises(error, match=message):
        _model("learned")(ids)


@pytest.mark.parametrize(("options", "message"), [
    ({"positions": "alibi"}, "positions must be one of 'learned', 'rotary'"),
    ({"d_model": 10, "n_heads": 4}, r"d_model \(10\) must be divisible by n_heads \(4\)"),
    ({"d_model": 12, "n_heads": 4, "positions": "rotary"}, "head size .* must be even"),
    ({"max_len": 0}, "max_len must be an integer >= 1"),
    ({"dropout": 1.5}, "dropout probability"),
])
def test_bad_configs_are_refused(options, message):
    config = {"vocab_size": VOCAB, "d_model": WIDTH, "n_heads": HEADS, **options}
    with pytest.raises(ValueError, match=message):
        nn.CausalTransformer(**config)


def test_the_cache_refuses_what_does_not_fit():
    cache = nn.CausalTransformerCache(4)
    keys = dl.zeros(2, HEADS, 3, 4)
    cache.update(0, keys, keys)
    with pytest.raises(ShapeError, match="holds 3 positions and cannot take 2 more: its "
                                         "capacity is 4"):
        cache.update(0, keys[:, :, :2], keys[:, :, :2])
    with pytest.raises(ShapeError, match=r"caches \(batch, heads, head_dim\) = \(2, 4, 4\), "
                                         r"got keys of shape \(1, 4, 1, 4\)"):
        cache.update(0, keys[:1, :, :1], keys[:1, :, :1])
    with pytest.raises(TypeError, match=r"cache must come from model.new_cache\(\)"):
        _model("learned")(_ids(1, 2), cache={})


def test_sampler_and_beam_search_through_the_cache_match_recomputing():
    model = _model("rotary")
    prompt = _ids(2, 3)

    def recompute(ids):  # the same model without new_cache(): every step sees everything
        return model(ids)

    greedy = nn.Sampler(temperature=0).generate(model, prompt, max_new_tokens=6)
    np.testing.assert_array_equal(
        greedy.numpy(), nn.Sampler(temperature=0).generate(recompute, prompt, 6).numpy())
    search = nn.BeamSearch(num_beams=3, max_new_tokens=5, num_return_sequences=2)
    np.testing.assert_array_equal(search.generate(model, prompt).numpy(),
                                  search.generate(recompute, prompt).numpy())
