"""Auto classes: dispatch on config.json's model_type through dl.registry.architectures, for
the first-party families and for a third-party family registered by a test plugin."""

from __future__ import annotations

import json
import shutil

import dlfree as dl
from dlfree import PluginError, first_party, hf, nn
from dlfree.hf.configuration import positive_int

import attrs
import numpy as np
import pytest

from support.hf_oracle import ENCODER_FAMILIES

pytest.importorskip("transformers")

AUTO = {"base": hf.AutoModel, "masked_lm": hf.AutoModelForMaskedLM,
        "sequence_classification": hf.AutoModelForSequenceClassification,
        "token_classification": hf.AutoModelForTokenClassification,
        "question_answering": hf.AutoModelForQuestionAnswering,
        "multiple_choice": hf.AutoModelForMultipleChoice}


def test_families_are_registered_by_dlfree_hf():
    for family in ENCODER_FAMILIES:
        assert dl.registry.architectures.provider(family)["distribution"] == "dlfree-hf"
        arch = dl.registry.architectures.get(family)
        assert set(arch.heads) == set(AUTO)
        assert arch.config_cls.model_type == family


def test_auto_classes_pick_the_family_and_head(oracle, encoder_family, encoder_head):
    folder, theirs = oracle.checkpoint(encoder_family, encoder_head)
    config = hf.AutoConfig.from_pretrained(folder)
    assert type(config).model_type == encoder_family
    model = AUTO[encoder_head].from_pretrained(folder)
    assert type(model).__name__ == type(theirs).__name__
    assert model.load_report == ([], [])
    fresh = AUTO[encoder_head].from_config(config)
    assert type(fresh) is type(model) and fresh.training


def test_auto_config_overrides_and_for_model(oracle):
    folder, _ = oracle.checkpoint("roberta", "base")
    config = hf.AutoConfig.from_pretrained(folder, num_labels=5, hidden_dropout_prob=0.0)
    assert isinstance(config, hf.RobertaConfig)
    assert config.num_labels == 5 and config.hidden_dropout_prob == 0.0
    assert hf.AutoConfig.for_model("distilbert", dim=96).hidden_size == 96


def test_unknown_model_type_names_the_registered_ones(oracle, tmp_path):
    folder, _ = oracle.checkpoint("bert", "base")
    shutil.copytree(folder, tmp_path / "ckpt")
    config_path = tmp_path / "ckpt" / "config.json"
    for model_type, words in (("my_arch", r"no installed plugin provides.*Registered "
                                          r"architectures: .*bert, .*distilbert.*roberta"),
                              ("bret", r"did you mean bert")):
        config_path.write_text(json.dumps({**json.loads(config_path.read_text()),
                                           "model_type": model_type}))
        for call in (hf.AutoModel.from_pretrained, hf.AutoConfig.from_pretrained):
            with pytest.raises(PluginError, match=words) as error:
                call(tmp_path / "ckpt")
            assert "dlfree_register_architectures" in str(error.value)
            assert str(config_path) in str(error.value)


def test_unknown_first_party_type_names_its_distribution(monkeypatch):
    monkeypatch.setitem(first_party.KINDS, "architectures", "dlfree-fancy")
    with pytest.raises(PluginError, match=r"'fancy'.*architectures come from the distribution "
                                          r"'dlfree-fancy'.*pip install dlfree-fancy"):
        hf.AutoConfig.for_model("fancy")


def test_config_without_model_type(oracle, tmp_path):
    folder, _ = oracle.checkpoint("bert", "base")
    shutil.copytree(folder, tmp_path / "ckpt")
    path = tmp_path / "ckpt" / "config.json"
    config = json.loads(path.read_text())
    del config["model_type"]
    path.write_text(json.dumps(config))
    with pytest.raises(ValueError, match="has no 'model_type'"):
        hf.AutoModel.from_pretrained(tmp_path / "ckpt")


def test_head_the_family_lacks(oracle):
    folder, _ = oracle.checkpoint("bert", "base")
    with pytest.raises(ValueError, match=r"AutoModelForCausalLM: the 'bert' family has no "
                                         r"'causal_lm' model; it provides: base, masked_lm"):
        hf.AutoModelForCausalLM.from_pretrained(folder)


def test_auto_classes_are_not_instantiated():
    with pytest.raises(TypeError, match=r"use AutoConfig.from_pretrained"):
        hf.AutoConfig()
    with pytest.raises(TypeError, match=r"use AutoModel.from_pretrained"):
        hf.AutoModel()


# ------------------------------------------------------------ a third-party family
@attrs.define(kw_only=True, slots=False)
class ToyConfig(hf.PretrainedConfig):
    model_type = "toy-net"

    width: int = attrs.field(default=4, validator=positive_int)


class ToyPreTrained(hf.PreTrainedModel):
    config_class = ToyConfig
    base_model_prefix = "toy"


class ToyModel(ToyPreTrained):
    def __init__(self, config: ToyConfig):
        super().__init__(config)
        self.proj = nn.Linear(config.width, config.width)
        self.post_init()

    def forward(self, x):
        return self.proj(x)


class ToyForSequenceClassification(ToyPreTrained):
    def __init__(self, config: ToyConfig):
        super().__init__(config)
        self.toy = ToyModel(config)
        self.score = nn.Linear(config.width, config.num_labels)
        self.post_init()

    def forward(self, x):
        return self.score(self.toy(x))


class ToyPlugin:
    @dl.hookimpl
    def dlfree_register_architectures(self, register):
        register("toy-net", ToyConfig, {"base": ToyModel,
                                        "sequence_classification": ToyForSequenceClassification})


@pytest.fixture
def toy_plugin():
    plugin = ToyPlugin()
    name = dl.plugins.register(plugin)
    yield plugin
    dl.plugins.unregister(name)


def test_third_party_architecture_loads_through_auto(toy_plugin, tmp_path):
    assert "toy-net" in dl.registry.architectures
    dl.manual_seed(3)
    original = ToyModel(ToyConfig(width=5))
    original.save_pretrained(tmp_path)
    assert json.loads((tmp_path / "config.json").read_text())["model_type"] == "toy-net"
    config = hf.AutoConfig.from_pretrained(tmp_path)
    assert type(config) is ToyConfig and config.width == 5
    model = hf.AutoModel.from_pretrained(tmp_path)
    assert type(model) is ToyModel and model.load_report == ([], [])
    np.testing.assert_array_equal(model.proj.weight.detach().numpy(),
                                  original.proj.weight.detach().numpy())
    head = hf.AutoModelForSequenceClassification.from_pretrained(tmp_path)
    assert type(head) is ToyForSequenceClassification  # base weights found under "toy."
    assert sorted(head.load_report.missing_keys) == ["score.bias", "score.weight"]
    np.testing.assert_array_equal(head.toy.proj.bias.detach().numpy(),
                                  original.proj.bias.detach().numpy())


def test_third_party_type_gone_with_its_plugin(tmp_path):
    ToyModel(ToyConfig()).save_pretrained(tmp_path)
    with pytest.raises(PluginError, match="'toy-net', which no installed plugin provides"):
        hf.AutoModel.from_pretrained(tmp_path)
