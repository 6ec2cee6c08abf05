"""Hostile HF folders are refused with CheckpointError naming the file before anything is
allocated or read outside the folder: config sizes checked against the weights, JSON limits,
shard indexes that name only files in the folder, paths that are regular files inside it,
and the digest of weights dl.free wrote."""

from __future__ import annotations

import json
import os
import shutil

import dlfree as dl
from dlfree import hf

import pytest


@pytest.fixture
def folder(tmp_path):
    config = hf.AutoConfig.for_model("bert", hidden_size=8, num_hidden_layers=1,
                                     num_attention_heads=2, intermediate_size=12,
                                     vocab_size=20, max_position_embeddings=10)
    dl.manual_seed(0)
    hf.AutoModel.from_config(config).save_pretrained(tmp_path / "m", max_shard_size=600)
    return tmp_path / "m"


def _config(folder, **changes):
    path = folder / "config.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), **changes}))


@pytest.mark.parametrize("changes, match", [
    ({"hidden_size": 10**7}, r"hidden_size=10000000 is no dimension of any weight"),
    ({"vocab_size": 10**9}, r"vocab_size=1000000000 is beyond any real model"),
    ({"num_hidden_layers": 10**6}, r"num_hidden_layers=1000000 blocks cannot come from the "
                                   r"\d+ weights"),
    ({"num_attention_heads": 3}, r"config.json: .*hidden_size \(8\) must be divisible by "
                                 r"num_attention_heads \(3\)"),
    ({"model_type": "os.system"}, r"config.json has model_type 'os.system', which no "
                                  r"installed plugin provides"),
])
def test_config_values_are_refused_before_allocating(folder, changes, match):
    _config(folder, **changes)
    with pytest.raises(dl.CheckpointError, match=match):
        hf.AutoModel.from_pretrained(folder)


def test_a_nesting_bomb_config_is_refused_by_a_limit(folder):
    (folder / "config.json").write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(dl.CheckpointError, match=r"config.json: JSON nested 100000 deep"):
        hf.AutoModel.from_pretrained(folder)


@pytest.mark.parametrize("shard", ["../elsewhere/model.safetensors", "/etc/hostname",
                                   "sub/model.safetensors"])
def test_a_shard_index_names_only_files_in_the_folder(folder, shard):
    index = folder / "model.safetensors.index.json"
    data = json.loads(index.read_text())
    data["weight_map"][next(iter(data["weight_map"]))] = shard
    index.write_text(json.dumps(data))
    with pytest.raises(dl.CheckpointError, match="names shards outside the model folder"):
        hf.AutoModel.from_pretrained(folder)


def test_paths_must_be_regular_files_inside_the_folder(folder, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shutil.move(folder / "config.json", elsewhere / "config.json")
    (folder / "config.json").symlink_to(elsewhere / "config.json")
    with pytest.raises(dl.CheckpointError, match="leads out of the model folder"):
        hf.AutoModel.from_pretrained(folder)
    (folder / "config.json").unlink()
    os.mkfifo(folder / "config.json")
    with pytest.raises(dl.CheckpointError, match=r"config.json is a FIFO"):
        hf.AutoModel.from_pretrained(folder)


def test_a_flipped_weight_byte_in_a_dlfree_folder_is_refused(folder):
    shard = sorted(folder.glob("model-*.safetensors"))[0]
    data = bytearray(shard.read_bytes())
    data[-1] ^= 0x01
    shard.write_bytes(bytes(data))
    with pytest.raises(dl.CheckpointError, match=rf"{shard.name}: the data does not match "
                                                 "its digest"):
        hf.AutoModel.from_pretrained(folder)
