"""Loading checkpoints: configs and their validation, weights single or sharded, bfloat16,
dtype/device, missing and unexpected weights by name, the base-model prefix rule, refused
pickles, broken files, and hub repo ids from an offline cache."""

from __future__ import annotations

import json
import logging
import shutil

import dlfree as dl
from dlfree import CheckpointError, hf
from dlfree.hf import hub

import numpy as np
import pytest
import safetensors.numpy

pytest.importorskip("transformers")


def copy_checkpoint(folder, dest, edit_weights=None, edit_config=None):
    """A copy of a single-file checkpoint with its weights and/or config.json edited."""
    dest.mkdir(parents=True, exist_ok=True)
    config = json.loads((folder / "config.json").read_text())
    (dest / "config.json").write_text(json.dumps(edit_config(config) if edit_config
                                                 else config))
    weights = safetensors.numpy.load_file(folder / "model.safetensors")
    if edit_weights:
        weights = edit_weights(weights)
    safetensors.numpy.save_file(weights, dest / "model.safetensors", metadata={"format": "pt"})
    return dest


# ---------------------------------------------------------------------- configs
def test_config_keeps_unknown_keys_and_round_trips(oracle):
    folder, _ = oracle.checkpoint("bert", "sequence_classification")
    data = hub.read_config(folder)
    config = hf.BertConfig.from_dict({**data, "my_custom_field": [1, 2]})
    assert config.extra["my_custom_field"] == [1, 2]
    assert config.num_labels == 3 and config.id2label == {0: "LABEL_0", 1: "LABEL_1",
                                                          2: "LABEL_2"}
    written = config.to_dict()
    assert written["my_custom_field"] == [1, 2]
    assert written["transformers_version"] == data["transformers_version"]
    assert {k: written[k] for k in data} == {k: data[k] for k in data}  # nothing changed
    assert hf.BertConfig.from_dict(written) == config


def test_config_aliases_and_label_overrides():
    config = hf.DistilBertConfig.from_dict({"dim": 16, "n_heads": 4, "hidden_size": 999})
    assert config.hidden_size == config.dim == 16  # the family's own key wins over an alias
    assert hf.DistilBertConfig.from_dict({"hidden_size": 24, "n_heads": 4}).dim == 24
    labelled = hf.BertConfig(id2label={"0": "neg", "1": "pos"})
    assert labelled.num_labels == 2 and labelled.label2id == {"neg": 0, "pos": 1}
    assert labelled.replace(num_labels=4).id2label == {i: f"LABEL_{i}" for i in range(4)}
    with pytest.raises(ValueError, match="num_labels=3 but id2label has 2 labels"):
        hf.BertConfig(num_labels=3, id2label={0: "a", 1: "b"})


@pytest.mark.parametrize("change, words", [
    ({"hidden_size": 30}, r"hidden_size \(30\) must be divisible by num_attention_heads \(4\)"),
    ({"vocab_size": -1}, r"BertConfig.vocab_size must be a positive int, got -1"),
    ({"hidden_act": "mish"}, r"BertConfig.hidden_act must be one of .*'gelu'.*got 'mish'"),
    ({"hidden_dropout_prob": 1.5}, r"hidden_dropout_prob must be a number in \[0, 1\]"),
    ({"position_embedding_type": "relative_key"}, r"position_embedding_type must be one of"),
    ({"is_decoder": True}, r"is_decoder=True is not supported"),
    ({"tie_word_embeddings": "yes"}, r"tie_word_embeddings must be true or false, got 'yes'"),
    ({"model_type": "roberta"}, r"BertConfig is for model_type 'bert'.*says 'roberta'"),
])
def test_invalid_config_field_is_named(oracle, tmp_path, change, words):
    folder, _ = oracle.checkpoint("bert", "base")
    broken = copy_checkpoint(folder, tmp_path / "broken",
                             edit_config=lambda c: {**c, **change})
    with pytest.raises(ValueError, match=words):
        hf.BertModel.from_pretrained(broken)


def test_distilbert_config_checks_heads():
    with pytest.raises(ValueError, match=r"dim \(10\) must be divisible by n_heads \(4\)"):
        hf.DistilBertConfig(dim=10, n_heads=4)


# ---------------------------------------------------------------------- weights
def test_missing_and_unexpected_weights_reported_by_name(oracle, tmp_path, caplog):
    folder, _ = oracle.checkpoint("bert", "base")
    gone = "encoder.layer.1.output.dense.bias"

    def edit(weights):
        del weights[gone]
        return {**weights, "encoder.extra.weight": np.ones(3, dtype=np.float32)}

    broken = copy_checkpoint(folder, tmp_path / "broken", edit_weights=edit)
    with caplog.at_level(logging.WARNING, logger="dlfree.hf"):
        model, report = hf.BertModel.from_pretrained(broken, output_loading_info=True)
    assert report.missing_keys == [gone]
    assert report.unexpected_keys == ["encoder.extra.weight"]
    assert gone in caplog.text and "encoder.extra.weight" in caplog.text
    assert model.load_report is report
    with pytest.raises(CheckpointError, match=rf"missing.*{gone}.*not use: encoder.extra"):
        hf.BertModel.from_pretrained(broken, strict=True)


def test_shape_mismatch_is_an_error(oracle):
    folder, _ = oracle.checkpoint("bert", "base")
    with pytest.raises(CheckpointError, match=r"config.json: vocab_size=50 is no dimension of "
                                              r"any weight"):  # refused before allocating
        hf.BertModel.from_pretrained(folder, vocab_size=50)
    with pytest.raises(CheckpointError, match=r"size mismatch.*position_embeddings.weight: "
                                              r"file has shape \(\d+, 32\), the model has "
                                              r"\(7, 32\)"):
        hf.BertModel.from_pretrained(folder, max_position_embeddings=7)


def test_old_position_ids_buffer_is_not_unexpected(oracle, tmp_path):
    folder, _ = oracle.checkpoint("bert", "base")
    old = copy_checkpoint(folder, tmp_path / "old", edit_weights=lambda w: {
        **w, "embeddings.position_ids": np.arange(64)[None]})
    assert hf.BertModel.from_pretrained(old).load_report == ([], [])


def test_base_checkpoint_into_head_model(oracle):
    folder, theirs = oracle.checkpoint("roberta", "base")
    model = hf.RobertaForSequenceClassification.from_pretrained(folder)
    assert sorted(model.load_report.missing_keys) == sorted(
        ["classifier.dense.weight", "classifier.dense.bias", "classifier.out_proj.weight",
         "classifier.out_proj.bias"])
    assert model.load_report.unexpected_keys == ["roberta.pooler.dense.bias",
                                                 "roberta.pooler.dense.weight"]
    inputs = oracle.inputs("roberta")
    oracle.assert_close(oracle.run_dl(model.roberta, inputs).last_hidden_state,
                        oracle.run_hf(theirs, inputs).last_hidden_state)


def test_head_checkpoint_into_base_model(oracle):
    folder, theirs = oracle.checkpoint("distilbert", "masked_lm")
    model = hf.DistilBertModel.from_pretrained(folder)
    assert model.load_report.missing_keys == []
    assert sorted(model.load_report.unexpected_keys) == [
        "vocab_layer_norm.bias", "vocab_layer_norm.weight", "vocab_projector.bias",
        "vocab_transform.bias", "vocab_transform.weight"]
    inputs = oracle.inputs("distilbert")
    oracle.assert_close(oracle.run_dl(model, inputs).last_hidden_state,
                        oracle.run_hf(theirs.distilbert, inputs).last_hidden_state)


def test_bfloat16_checkpoint_widens_exactly(oracle, tmp_path):
    import copy

    torch = oracle.torch
    _, theirs = oracle.checkpoint("bert", "base")
    copy.deepcopy(theirs).to(torch.bfloat16).save_pretrained(tmp_path)
    model = hf.BertModel.from_pretrained(tmp_path, dtype="auto")  # bfloat16 -> float32
    expected = {k: v.to(torch.bfloat16).float().numpy() for k, v in theirs.state_dict().items()}
    ours = model.state_dict()
    assert model.embeddings.word_embeddings.weight.dtype == dl.float32
    for name in ("embeddings.word_embeddings.weight", "encoder.layer.1.output.dense.weight"):
        np.testing.assert_array_equal(ours[name].numpy(), expected[name])


def test_dtype_auto_uses_the_stored_dtype(oracle, tmp_path):
    import copy

    _, theirs = oracle.checkpoint("bert", "base")
    copy.deepcopy(theirs).double().save_pretrained(tmp_path)
    assert hf.BertModel.from_pretrained(tmp_path, dtype="auto").pooler.dense.weight.dtype \
        == dl.float64
    assert hf.BertModel.from_pretrained(tmp_path).pooler.dense.weight.dtype == dl.float32
    with pytest.raises(TypeError, match="dtype must be a floating dtype"):
        hf.BertModel.from_pretrained(tmp_path, dtype=dl.int64)


def test_device_placement(oracle, device):
    folder, theirs = oracle.checkpoint("bert", "sequence_classification")
    model = hf.BertForSequenceClassification.from_pretrained(folder, device=device)
    assert {p.device.type for p in model.parameters()} == {dl.Device(device).type}
    inputs = oracle.inputs("bert")
    with dl.no_grad():
        ours = model(**{k: dl.tensor(v, device=device) for k, v in inputs.items()})
    oracle.assert_close(ours.logits, oracle.run_hf(theirs, inputs).logits)


# ----------------------------------------------------------------- bad folders
def test_pickle_only_checkpoint_is_refused(oracle, tmp_path):
    folder, theirs = oracle.checkpoint("bert", "base")
    shutil.copy(folder / "config.json", tmp_path / "config.json")
    oracle.torch.save(theirs.state_dict(), tmp_path / "pytorch_model.bin")
    with pytest.raises(CheckpointError, match=r"only pytorch_model.bin, a PyTorch pickle.*"
                                              r"runs code.*safe_serialization=True"):
        hf.BertModel.from_pretrained(tmp_path)


def test_folder_without_weights_or_config(tmp_path, oracle):
    folder, _ = oracle.checkpoint("bert", "base")
    with pytest.raises(CheckpointError, match="has no config.json"):
        hf.BertModel.from_pretrained(tmp_path)
    shutil.copy(folder / "config.json", tmp_path / "config.json")
    with pytest.raises(CheckpointError, match="no model.safetensors and no model.safetensors"
                                              ".index.json"):
        hf.BertModel.from_pretrained(tmp_path)


def test_corrupt_weights_and_index(oracle, tmp_path):
    folder, _ = oracle.checkpoint("bert", "base", sharded=True)
    shutil.copytree(folder, tmp_path / "ckpt")
    ckpt = tmp_path / "ckpt"
    shard = sorted(ckpt.glob("model-*.safetensors"))[1]
    shard.write_bytes(shard.read_bytes()[:100])
    with pytest.raises(CheckpointError, match=f"{shard.name} is not a readable safetensors"):
        hf.BertModel.from_pretrained(ckpt)
    shard.unlink()
    with pytest.raises(CheckpointError, match=f"names shards that are not in .*{shard.name}"):
        hf.BertModel.from_pretrained(ckpt)
    (ckpt / "model.safetensors.index.json").write_text("[1, 2]")
    with pytest.raises(CheckpointError, match="not a valid shard index"):
        hf.BertModel.from_pretrained(ckpt)


def test_a_file_is_not_a_checkpoint(tmp_path):
    (tmp_path / "weights.safetensors").write_bytes(b"")
    with pytest.raises(CheckpointError, match="is a file"):
        hf.BertModel.from_pretrained(tmp_path / "weights.safetensors")


# ------------------------------------------------------------------------- hub
COMMIT = "0123456789abcdef0123456789abcdef01234567"


@pytest.fixture
def hub_cache(oracle, tmp_path):
    """A huggingface_hub cache folder holding the repo tiny-org/tiny-bert at COMMIT (as
    `main`), laid out as the hub writes it: refs/main names the snapshot folder."""
    folder, _ = oracle.checkpoint("bert", "masked_lm")
    repo = tmp_path / "cache" / "models--tiny-org--tiny-bert"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(COMMIT)
    shutil.copytree(folder, repo / "snapshots" / COMMIT)
    return tmp_path / "cache"


def test_repo_id_from_offline_cache(oracle, hub_cache, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    _, theirs = oracle.checkpoint("bert", "masked_lm")
    model = hf.AutoModelForMaskedLM.from_pretrained("tiny-org/tiny-bert", cache_dir=hub_cache)
    assert type(model) is hf.BertForMaskedLM and model.load_report == ([], [])
    inputs = oracle.inputs("bert")
    oracle.assert_close(oracle.run_dl(model, inputs).logits, oracle.run_hf(theirs, inputs).logits)
    by_commit = hf.AutoConfig.from_pretrained("tiny-org/tiny-bert", revision=COMMIT,
                                              cache_dir=hub_cache)
    assert by_commit.hidden_size == 32


def test_local_files_only_without_the_env_var(hub_cache, monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    config = hf.BertConfig.from_pretrained("tiny-org/tiny-bert", cache_dir=hub_cache,
                                           local_files_only=True)
    assert config.vocab_size == 99


def test_repo_missing_from_offline_cache(hub_cache, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(CheckpointError, match=r"'tiny-org/other' is not a local folder.*not in "
                                              r"the cache.*HF_HUB_OFFLINE is set"):
        hf.AutoModel.from_pretrained("tiny-org/other", cache_dir=hub_cache)
    with pytest.raises(CheckpointError, match=r"revision 'v2'"):
        hf.AutoModel.from_pretrained("tiny-org/tiny-bert", revision="v2", cache_dir=hub_cache)
    with pytest.raises(CheckpointError, match="neither a local folder nor a valid hub repo id"):
        hf.AutoModel.from_pretrained("not a//repo", cache_dir=hub_cache)
