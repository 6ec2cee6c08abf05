"""transformers as the oracle of the dlfree-hf encoder tests: tiny random BERT-family models
(BERT, RoBERTa, DistilBERT, XLM-RoBERTa, ALBERT, DeBERTa-v3) saved into temporary checkpoint
folders (once each per Oracle), padded inputs, runs of both libraries and the comparisons."""

from __future__ import annotations

import numpy as np
import pytest

ENCODER_FAMILIES = {"bert": "Bert", "roberta": "Roberta", "distilbert": "DistilBert",
                    "xlm-roberta": "XLMRoberta", "albert": "Albert", "deberta-v2": "DebertaV2"}
HEAD_SUFFIX = {"base": "Model", "masked_lm": "ForMaskedLM",
               "sequence_classification": "ForSequenceClassification",
               "token_classification": "ForTokenClassification",
               "question_answering": "ForQuestionAnswering"}
VOCAB = 99
# The later families run only these shared tests by default, the rest in the slow set.
FIRST_FAMILIES = ("bert", "roberta", "distilbert")
REPRESENTATIVE = {"test_outputs_match_transformers", "test_gradients_through_tied_embeddings",
                  "test_auto_classes_pick_the_family_and_head",
                  "test_logits_loss_and_auto_class_match_transformers",
                  "test_gradients_through_the_word_embeddings"}
# The head every encoder family also has, whose inputs are (batch, choices, sequence).
MULTIPLE_CHOICE_SUFFIX = "ForMultipleChoice"
# ALBERT's sharing: 3 layers run from 2 groups of 2 layers each (group 0 once, group 1
# twice), so hidden states come after each of 6 layer runs.
ALBERT_SHAPE = dict(embedding_size=16, num_hidden_layers=3, num_hidden_groups=2,
                    inner_group_num=2)
# DeBERTa-v3's settings: relative positions only, in 8 log buckets (so the 7-token inputs
# reach the bucketed range), shared position keys, both disentangled terms.
DEBERTA_V3 = dict(relative_attention=True, position_buckets=8, norm_rel_ebd="layer_norm",
                  share_att_key=True, pos_att_type=["p2c", "c2p"], position_biased_input=False)


class Oracle:
    """transformers as the reference: tiny configs and models, checkpoints, runs."""

    def __init__(self, tmp_path_factory):
        self.transformers = pytest.importorskip("transformers")
        self.torch = pytest.importorskip("torch")
        self._tmp = tmp_path_factory
        self._checkpoints: dict = {}

    def config(self, family: str, **changes):
        """A tiny transformers config. Its initializer_range of 0.2 (not 0.02) makes every
        head's outputs of order one, so an absolute tolerance of 1e-4 is a tight test."""
        t = self.transformers
        common = dict(vocab_size=VOCAB, max_position_embeddings=64, initializer_range=0.2,
                      num_labels=3)
        if family == "distilbert":
            config = t.DistilBertConfig(dim=32, n_layers=2, n_heads=4, hidden_dim=37, **common)
        elif family == "deberta-v2":
            config = t.DebertaV2Config(hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                       intermediate_size=37, **DEBERTA_V3, **common)
        elif family == "albert":
            config = t.AlbertConfig(hidden_size=32, num_attention_heads=4, intermediate_size=37,
                                    **ALBERT_SHAPE, **common)
        else:
            cls = getattr(t, ENCODER_FAMILIES[family] + "Config")
            config = cls(hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                         intermediate_size=37, **common)
        for key, value in changes.items():
            setattr(config, key, value)
        return config

    def hf_class(self, family: str, head: str):
        """transformers' class for a family and head (e.g. RobertaForMaskedLM)."""
        suffix = MULTIPLE_CHOICE_SUFFIX if head == "multiple_choice" else HEAD_SUFFIX[head]
        return getattr(self.transformers, ENCODER_FAMILIES[family] + suffix)

    def model(self, family: str, head: str, seed: int = 0, **changes):
        """A random transformers model in eval mode (QA heads get their two labels)."""
        if head == "question_answering":
            changes.setdefault("num_labels", 2)
        self.torch.manual_seed(seed)
        return self.hf_class(family, head)(self.config(family, **changes)).eval()

    def checkpoint(self, family: str, head: str, sharded: bool = False):
        """(folder, transformers model): the model saved by transformers, in several shards
        if asked. Made once per session; tests must not modify the folder."""
        key = (family, head, sharded)
        if key not in self._checkpoints:
            model = self.model(family, head)
            folder = self._tmp.mktemp(f"{family}-{head}{'-sharded' if sharded else ''}")
            model.save_pretrained(folder, max_shard_size="20KB" if sharded else "5GB")
            self._checkpoints[key] = (folder, model)
        return self._checkpoints[key]

    @staticmethod
    def inputs(family: str, seed: int = 0) -> dict[str, np.ndarray]:
        """Two sequences of seven tokens, the second padded after four (mask 0 and the pad
        id), with token types for the families that have them."""
        ids = np.random.default_rng(seed).integers(3, VOCAB, size=(2, 7))
        mask = np.ones((2, 7), dtype=np.int64)
        mask[1, 4:] = 0
        ids[1, 4:] = 1 if family in ("roberta", "xlm-roberta") else 0
        inputs = {"input_ids": ids, "attention_mask": mask}
        if family != "distilbert":
            types = np.zeros((2, 7), dtype=np.int64)
            types[:, 3:] = 1
            inputs["token_type_ids"] = types
        return inputs

    def run_hf(self, model, inputs: dict, **kwargs):
        """transformers' outputs for NumPy inputs, without gradients."""
        with self.torch.no_grad():
            return model(**{k: self.torch.as_tensor(v) for k, v in inputs.items()}, **kwargs)

    @staticmethod
    def run_dl(model, inputs: dict, **kwargs):
        """dl.free's outputs for NumPy inputs, without gradients."""
        import dlfree as dl

        with dl.no_grad():
            return model(**{k: dl.tensor(v) for k, v in inputs.items()}, **kwargs)

    @staticmethod
    def fields(head: str) -> list[str]:
        """The output fields both libraries return for a head."""
        if head == "base":
            return ["last_hidden_state"]
        if head == "question_answering":
            return ["start_logits", "end_logits"]
        return ["logits"]

    @staticmethod
    def assert_close(actual, expected, atol: float = 1e-4, what: str = "") -> None:
        """Same shape and every element within `atol` (tensors of either library)."""
        def host(x):
            return x.detach().cpu().numpy() if hasattr(x, "detach") else np.asarray(x)

        actual, expected = host(actual), host(expected)
        assert actual.shape == expected.shape, f"{what}: {actual.shape} != {expected.shape}"
        np.testing.assert_allclose(actual, expected, rtol=0, atol=atol, err_msg=what)

    def assert_same_outputs(self, ours, theirs, head: str, atol: float = 1e-4) -> None:
        for name in self.fields(head):
            self.assert_close(getattr(ours, name), getattr(theirs, name), atol, name)
