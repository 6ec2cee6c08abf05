"""DeBERTa-v2 settings the shared encoder tests (which run v3's: log buckets, shared position
keys) leave out, against transformers: v2's unbucketed relative positions with their own
position projections, absolute positions and token types, factorised embeddings, the
non-legacy masked-LM head, and the position buckets themselves."""

from __future__ import annotations

import copy

import dlfree as dl
from dlfree import hf
from dlfree.hf.models.deberta_v2 import relative_positions

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

SHAPE = dict(vocab_size=99, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
             intermediate_size=37, max_position_embeddings=64, initializer_range=0.2,
             num_labels=3)
VARIANTS = {
    # v2: "c2p|p2c" as a string, distances up to 5 (clipped), separate position projections
    "v2": dict(relative_attention=True, pos_att_type="c2p|p2c", max_relative_positions=5,
               position_biased_input=True, type_vocab_size=2, embedding_size=24),
    "c2p only": dict(relative_attention=True, pos_att_type=["c2p"], position_buckets=4,
                     share_att_key=True),
    "no relative attention": dict(type_vocab_size=2),
    "new MLM head": dict(relative_attention=True, position_buckets=8, share_att_key=True,
                         pos_att_type=["p2c", "c2p"], norm_rel_ebd="layer_norm",
                         position_biased_input=False, legacy=False),
}


def inputs() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    ids = rng.integers(3, 99, size=(2, 9))
    mask = np.ones((2, 9), dtype=np.int64)
    mask[1, 5:] = 0
    ids[1, 5:] = 0
    types = np.zeros((2, 9), dtype=np.int64)
    types[:, 4:] = 1
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_masked_lm_and_gradients_match_transformers(variant, tmp_path, one_torch_thread):
    torch.manual_seed(0)
    theirs = transformers.DebertaV2ForMaskedLM(
        transformers.DebertaV2Config(**SHAPE, **VARIANTS[variant])).eval()
    theirs.save_pretrained(tmp_path)
    model = hf.AutoModelForMaskedLM.from_pretrained(tmp_path)
    assert type(model) is hf.DebertaV2ForMaskedLM and model.load_report == ([], [])
    values = inputs()
    labels = np.random.default_rng(1).integers(0, 99, size=(2, 9))
    ours = model(**{k: dl.tensor(v) for k, v in values.items()}, labels=dl.tensor(labels))
    theirs = copy.deepcopy(theirs)
    expected = theirs(**{k: torch.as_tensor(v) for k, v in values.items()},
                      labels=torch.as_tensor(labels))
    np.testing.assert_allclose(ours.logits.detach().numpy(), expected.logits.detach().numpy(),
                               rtol=0, atol=1e-4)
    ours.loss.backward()
    expected.loss.backward()
    np.testing.assert_allclose(
        model.deberta.embeddings.word_embeddings.weight.grad.numpy(),
        theirs.deberta.embeddings.word_embeddings.weight.grad.numpy(), rtol=0, atol=1e-4)
    model.save_pretrained(tmp_path / "again")
    back, info = transformers.DebertaV2ForMaskedLM.from_pretrained(tmp_path / "again",
                                                                  output_loading_info=True)
    assert not any(info[k] for k in ("missing_keys", "unexpected_keys", "mismatched_keys")), info


def test_position_buckets_match_transformers():
    from transformers.models.deberta_v2.modeling_deberta_v2 import build_relative_position

    for buckets, distance in ((8, 64), (256, 512), (-1, 5)):
        layer = torch.zeros(1, 300, 4)
        expected = build_relative_position(layer, layer, bucket_size=buckets,
                                           max_position=distance)[0].numpy()
        np.testing.assert_array_equal(relative_positions(300, buckets, distance), expected)


def test_bad_config_is_named():
    with pytest.raises(ValueError, match="pos_att_type must be a list of"):
        hf.DebertaV2Config(pos_att_type=["c2c"])
    with pytest.raises(ValueError, match="conv_kernel_size"):
        hf.DebertaV2Config.from_dict({"conv_kernel_size": 3})
