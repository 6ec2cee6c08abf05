"""Export: dl.free models written with save_pretrained load in transformers with no missing
or unexpected weights and give the same outputs; transformers checkpoints survive a
dl.free round trip name for name; sharding and tying on export."""

from __future__ import annotations

import json

import dlfree as dl
from dlfree import CheckpointError, hf
from dlfree.hf import hub

import numpy as np
import pytest
import safetensors.numpy

pytest.importorskip("transformers")

HF_AUTO = {"base": "AutoModel", "masked_lm": "AutoModelForMaskedLM",
           "sequence_classification": "AutoModelForSequenceClassification",
           "token_classification": "AutoModelForTokenClassification",
           "question_answering": "AutoModelForQuestionAnswering"}


def dl_model(oracle, family, head, **changes):
    """A freshly initialised dl.free model with the oracle's tiny config."""
    if head == "question_answering":
        changes.setdefault("num_labels", 2)
    config = hf.AutoConfig.for_model(family, **oracle.config(family, **changes).to_dict())
    dl.manual_seed(0)
    cls = getattr(hf, oracle.hf_class(family, head).__name__)
    return cls.from_config(config).eval()


def saved_weights(folder) -> dict[str, np.ndarray]:
    return {k: v for f in hub.weight_files(folder)
            for k, v in safetensors.numpy.load_file(f).items()}


@pytest.mark.parametrize("sharded", [False, True], ids=["single", "sharded"])
def test_transformers_loads_the_export(oracle, encoder_family, encoder_head, sharded, tmp_path):
    model = dl_model(oracle, encoder_family, encoder_head)
    model.save_pretrained(tmp_path, max_shard_size="20KB" if sharded else "5GB")
    config = json.loads((tmp_path / "config.json").read_text())
    assert config["architectures"] == [type(model).__name__]
    assert config["model_type"] == encoder_family
    auto = getattr(oracle.transformers, HF_AUTO[encoder_head])
    theirs, info = auto.from_pretrained(tmp_path, output_loading_info=True)
    assert type(theirs).__name__ == type(model).__name__
    assert not any(info[k] for k in ("missing_keys", "unexpected_keys", "mismatched_keys",
                                     "error_msgs")), info
    inputs = oracle.inputs(encoder_family)
    oracle.assert_same_outputs(oracle.run_dl(model, inputs), oracle.run_hf(theirs.eval(), inputs),
                               encoder_head)


def test_transformers_checkpoint_round_trips(oracle, encoder_family, encoder_head, tmp_path):
    folder, theirs = oracle.checkpoint(encoder_family, encoder_head)
    cls = getattr(hf, oracle.hf_class(encoder_family, encoder_head).__name__)
    cls.from_pretrained(folder).save_pretrained(tmp_path)
    original, ours = saved_weights(folder), saved_weights(tmp_path)
    assert sorted(ours) == sorted(original)  # the same names, tied weights written once
    for name, value in original.items():
        np.testing.assert_array_equal(ours[name], value, err_msg=name)
    their_config = hub.read_config(folder)
    our_config = hub.read_config(tmp_path)
    assert {k: our_config.get(k) for k in their_config} == their_config
    reloaded = cls.from_pretrained(tmp_path)
    assert reloaded.load_report == ([], [])
    inputs = oracle.inputs(encoder_family)
    oracle.assert_same_outputs(oracle.run_dl(reloaded, inputs), oracle.run_hf(theirs, inputs),
                               encoder_head)


def test_untied_decoder_is_exported_separately(oracle, tmp_path):
    model = dl_model(oracle, "bert", "masked_lm", tie_word_embeddings=False)
    decoder = model.cls.predictions.decoder
    assert decoder.weight is not model.bert.embeddings.word_embeddings.weight
    assert decoder.bias is not model.cls.predictions.bias  # untied as in transformers 5
    model.save_pretrained(tmp_path)
    names = saved_weights(tmp_path)
    assert {"cls.predictions.decoder.weight", "cls.predictions.decoder.bias"} <= set(names)
    theirs, info = oracle.transformers.AutoModelForMaskedLM.from_pretrained(
        tmp_path, output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"]
    inputs = oracle.inputs("bert")
    oracle.assert_close(oracle.run_dl(model, inputs).logits,
                        oracle.run_hf(theirs.eval(), inputs).logits)


def test_shard_layout_and_stale_files(oracle, tmp_path):
    model = dl_model(oracle, "roberta", "base")
    limit = 20_000
    model.save_pretrained(tmp_path, max_shard_size=limit)
    index = json.loads((tmp_path / "model.safetensors.index.json").read_text())
    state = {k: v.numpy() for k, v in model.state_dict().items()}
    assert sorted(index["weight_map"]) == sorted(state)
    assert index["metadata"]["total_size"] == sum(v.nbytes for v in state.values())
    shards = sorted(set(index["weight_map"].values()))
    assert len(shards) > 2 and shards[0] == f"model-00001-of-{len(shards):05d}.safetensors"
    for shard in shards:
        arrays = safetensors.numpy.load_file(tmp_path / shard)
        assert sum(a.nbytes for a in arrays.values()) <= limit or len(arrays) == 1
        assert all(index["weight_map"][name] == shard for name in arrays)
    model.save_pretrained(tmp_path)  # unsharded now: the old shards and index must go
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config.json", "model.safetensors"]
    assert hf.RobertaModel.from_pretrained(tmp_path).load_report == ([], [])


@pytest.mark.parametrize("size, expected", [
    ("5GB", 5 * 10**9), ("200MiB", 200 * 2**20), ("1.5kb", 1500), (4096, 4096)])
def test_parse_size(size, expected):
    assert hub.parse_size(size) == expected


@pytest.mark.parametrize("size", ["5 parsecs", "GB", 0, -1, "0MB"])
def test_parse_size_rejects(size):
    with pytest.raises(ValueError, match="max_shard_size must be"):
        hub.parse_size(size)


def test_save_into_a_file_is_refused(oracle, tmp_path):
    model = dl_model(oracle, "distilbert", "base")
    (tmp_path / "taken").write_text("")
    with pytest.raises(CheckpointError, match="is a file; give a folder"):
        model.save_pretrained(tmp_path / "taken")
