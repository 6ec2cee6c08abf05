"""Task helpers over a model and its tokenizer: sentence embeddings, fill-mask, text and token
classification, extractive question answering, multiple choice, text-to-text generation and
image classification,
with the outputs of transformers' pipelines.

Each runs the model under `dl.no_grad()` in whatever mode it is in (from_pretrained leaves
it in eval mode), and post-processes on the host: the results are small.
"""

from __future__ import annotations

import inspect

import dlfree as dl
from dlfree import Tensor
from dlfree import functional as F

import numpy as np

from .tokenizer import BatchEncoding, PreTrainedTokenizer

__all__ = ["mean_pooling", "sentence_embeddings", "fill_mask", "classify_text",
           "classify_tokens", "answer_question", "choose", "text2text", "image_classification",
           "AGGREGATION_STRATEGIES"]

AGGREGATION_STRATEGIES = ("none", "simple", "first", "average", "max")
_CLASSIFICATION_FUNCTIONS = ("softmax", "sigmoid", "none")


# ------------------------------------------------------------------ plumbing
def _texts(texts, what: str) -> tuple[list[str], bool]:
    """The texts as a list, and whether one string was given (so one result is returned)."""
    if isinstance(texts, str):
        return [texts], True
    if isinstance(texts, (list, tuple)) and texts and all(isinstance(t, str) for t in texts):
        return list(texts), False
    raise TypeError(f"{what} expects a string or a non-empty list of strings, got {texts!r:.80}")


def _check_tokenizer(tokenizer, what: str) -> None:
    if not isinstance(tokenizer, PreTrainedTokenizer):
        raise TypeError(f"{what}: tokenizer must be a dlfree.hf PreTrainedTokenizer "
                        f"(AutoTokenizer.from_pretrained), got {type(tokenizer).__name__}")


def _positive_int(value, name: str, what: str) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise ValueError(f"{what}: {name} must be a positive int, got {value!r}")


def _run(model, encoding: BatchEncoding | dict):
    """The model's output on an encoding's arrays or tensors: those its forward accepts, on
    its device (a BERT tokenizer's token_type_ids are not passed to DistilBERT)."""
    accepted = inspect.signature(model.forward).parameters
    parameter = next(iter(model.parameters()), None)
    inputs = {k: dl.as_tensor(v) for k, v in encoding.items() if k in accepted}
    if parameter is not None:
        inputs = {k: v.to(parameter.device) for k, v in inputs.items()}
    with dl.no_grad():
        return model(**inputs)


def _output(out, field: str, what: str, model_kind: str) -> Tensor:
    value = getattr(out, field, None)
    if value is None:
        raise TypeError(f"{what} needs {model_kind}, whose output has {field!r}; this model "
                        f"returned {type(out).__name__}")
    return value


def _softmax(scores: np.ndarray) -> np.ndarray:
    shifted = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return shifted / shifted.sum(axis=-1, keepdims=True)


# --------------------------------------------------------- sentence embeddings
def mean_pooling(last_hidden_state: Tensor, attention_mask: Tensor) -> Tensor:
    """The mean of each sequence's token vectors over its real tokens (attention_mask 1):
    (batch, sequence, hidden) -> (batch, hidden), the sentence-transformers pooling."""
    mask = attention_mask.to(last_hidden_state.dtype).unsqueeze(-1)
    return (last_hidden_state * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)


def sentence_embeddings(model, tokenizer: PreTrainedTokenizer, sentences, *,
                        normalize: bool = True, batch_size: int = 32,
                        max_length: int | None = None) -> Tensor:
    """One vector per sentence from a base model (`AutoModel`): the mean of its last hidden
    states over the real tokens, L2-normalised unless `normalize=False` (so a dot product is
    the cosine similarity). Returns (sentences, hidden); sentences longer than `max_length`
    (default: the tokenizer's model_max_length) are truncated."""
    _check_tokenizer(tokenizer, "sentence_embeddings")
    texts, _ = _texts(sentences, "sentence_embeddings")
    _positive_int(batch_size, "batch_size", "sentence_embeddings")
    chunks = []
    for start in range(0, len(texts), batch_size):
        encoding = tokenizer(texts[start:start + batch_size], padding=True, truncation=True,
                             max_length=max_length, return_tensors="dl")
        out = _run(model, encoding)
        hidden = _output(out, "last_hidden_state", "sentence_embeddings",
                         "a base model (AutoModel)")
        chunks.append(mean_pooling(hidden, encoding["attention_mask"].to(hidden.device)))
    embeddings = dl.cat(chunks) if len(chunks) > 1 else chunks[0]
    return F.normalize(embeddings, dim=-1) if normalize else embeddings


# --------------------------------------------------------------------- fill-mask
def fill_mask(model, tokenizer: PreTrainedTokenizer, texts, *, top_k: int = 5):
    """The `top_k` most likely tokens for each mask token of each text (a masked-LM model).

    Each candidate is {"score", "token" (id), "token_str", "sequence" (the text with the
    candidate filled in)}. One text with one mask gives a list of candidates; a text with
    several masks gives one such list per mask; a list of texts gives one result per text."""
    _check_tokenizer(tokenizer, "fill_mask")
    batch, single = _texts(texts, "fill_mask")
    _positive_int(top_k, "top_k", "fill_mask")
    mask_id = tokenizer.mask_token_id
    if mask_id is None:
        raise ValueError("fill_mask: the tokenizer has no mask token")
    encoding = tokenizer(batch, padding=True, truncation=True, return_tensors="dl")
    ids = encoding["input_ids"].numpy()
    logits = _output(_run(model, encoding), "logits", "fill_mask",
                     "a masked-LM model (AutoModelForMaskedLM)").float().numpy()
    top_k = min(top_k, logits.shape[-1])
    results = []
    for row, text in enumerate(batch):
        positions = np.flatnonzero(ids[row] == mask_id)
        if positions.size == 0:
            raise ValueError(f"fill_mask: no mask token {tokenizer.mask_token!r} in {text!r}")
        real = ids[row][encoding["attention_mask"].numpy()[row] == 1]
        one_mask = positions.size == 1
        per_mask = []
        for position in positions:
            probs = _softmax(logits[row, position])
            best = np.argsort(-probs, kind="stable")[:top_k]
            candidates = []
            for token in best:
                filled = real.copy()
                filled[position] = token
                # Other masks stay visible in the sequence, so only one mask skips specials.
                candidates.append({
                    "score": float(probs[token]), "token": int(token),
                    "token_str": tokenizer.decode([int(token)]),
                    "sequence": tokenizer.decode(filled, skip_special_tokens=one_mask)})
            per_mask.append(candidates)
        results.append(per_mask[0] if one_mask else per_mask)
    return results[0] if single else results


# ---------------------------------------------------------- text classification
def classify_text(model, tokenizer: PreTrainedTokenizer, texts, text_pair=None, *,
                  top_k: int | None = 1, function_to_apply: str | None = None):
    """Labels (from `config.id2label`) and scores per text (or text pair) from a
    sequence-classification model.

    Scores are the softmax of the logits, the sigmoid for multi-label or one-label models,
    the logits themselves for regression (`function_to_apply` chooses: "softmax",
    "sigmoid", "none"). With `top_k=1` each text gives its best {"label", "score"}; otherwise
    a list of them by decreasing score (all labels when `top_k=None`)."""
    _check_tokenizer(tokenizer, "classify_text")
    batch, single = _texts(texts, "classify_text")
    function_to_apply = _scoring(model.config, top_k, function_to_apply, "classify_text")
    if text_pair is not None:
        pairs, single_pair = _texts(text_pair, "classify_text (text_pair)")
        if single_pair != single or len(pairs) != len(batch):
            raise ValueError(f"classify_text: text_pair must match texts: {len(batch)} text(s), "
                             f"{len(pairs)} pair(s)")
        text_pair = pairs
    encoding = tokenizer(batch, text_pair, padding=True, truncation=True, return_tensors="dl")
    logits = _output(_run(model, encoding), "logits", "classify_text",
                     "a sequence-classification model")
    results = [ranked[0] if top_k == 1 else ranked
               for ranked in _ranked_labels(logits, model.config, top_k, function_to_apply)]
    return results[0] if single else results


def _scoring(config, top_k, function_to_apply, what: str) -> str:
    """The checked scoring function for a classifier's logits: `function_to_apply`, or by
    default softmax, sigmoid for multi-label or one-label models, none for regression."""
    if top_k is not None:
        _positive_int(top_k, "top_k", what)
    if function_to_apply is None:
        if config.problem_type == "regression":
            function_to_apply = "none"
        elif config.problem_type == "multi_label_classification" or config.num_labels == 1:
            function_to_apply = "sigmoid"
        else:
            function_to_apply = "softmax"
    if function_to_apply not in _CLASSIFICATION_FUNCTIONS:
        raise ValueError(f"{what}: function_to_apply must be one of "
                         f"{_CLASSIFICATION_FUNCTIONS}, got {function_to_apply!r}")
    return function_to_apply


def _ranked_labels(logits: Tensor, config, top_k, function_to_apply: str) -> list[list[dict]]:
    """Per row, the `top_k` best {"label" (from id2label), "score"} (all when None)."""
    values = logits.float().numpy().astype(np.float64)
    if function_to_apply == "softmax":
        scores = _softmax(values)
    elif function_to_apply == "sigmoid":
        scores = 1 / (1 + np.exp(-values))
    else:
        scores = values
    ranked = []
    for row in scores:
        order = np.argsort(-row, kind="stable")[:top_k]
        ranked.append([{"label": config.id2label[int(i)], "score": float(row[i])}
                       for i in order])
    return ranked


# --------------------------------------------------------- token classification
def _tag(label: str) -> tuple[str, str]:
    """("B" or "I", entity type) of an IOB label; a label without a prefix continues."""
    if label.startswith(("B-", "I-")):
        return label[0], label[2:]
    return "I", label


def _merge_word(tokenizer, pieces: list[dict], strategy: str, id2label) -> dict:
    """One entity for the tokens of one word: the label of its first token ("first"), of
    its most confident token ("max"), or of the mean of its tokens' scores ("average")."""
    if strategy == "first":
        scores = pieces[0]["scores"]
    elif strategy == "max":
        scores = max(pieces, key=lambda p: p["scores"].max())["scores"]
    else:
        scores = np.mean([p["scores"] for p in pieces], axis=0)
    best = int(scores.argmax())
    return {"entity": id2label[best], "score": float(scores[best]),
            "word": tokenizer.convert_tokens_to_string([p["word"] for p in pieces]),
            "start": pieces[0]["start"], "end": pieces[-1]["end"]}


def _group(tokenizer, entities: list[dict]) -> list[dict]:
    """Adjacent entities of one type joined into spans; a "B-" label starts a new span."""
    groups, current = [], []

    def close():
        groups.append({"entity_group": _tag(current[0]["entity"])[1],
                       "score": float(np.mean([e["score"] for e in current])),
                       "word": tokenizer.convert_tokens_to_string([e["word"] for e in current]),
                       "start": current[0]["start"], "end": current[-1]["end"]})

    for entity in entities:
        bi, tag = _tag(entity["entity"])
        if current and (tag != _tag(current[-1]["entity"])[1] or bi == "B"):
            close()
            current = []
        current.append(entity)
    if current:
        close()
    return groups


def _token_entities(tokenizer, text: str, encoding: BatchEncoding, row: int,
                    scores: np.ndarray, strategy: str, id2label) -> list[dict]:
    ids = encoding["input_ids"][row].tolist()
    special = encoding["special_tokens_mask"][row]
    offsets = encoding["offset_mapping"][row].tolist()
    word_ids = encoding.word_ids(row)
    tokens = []
    for index, (token_id, is_special) in enumerate(zip(ids, special)):
        if is_special:
            continue
        start, end = offsets[index]
        word = tokenizer.convert_ids_to_tokens(token_id)
        continues = bool(tokens) and word_ids[index] is not None and \
            word_ids[index] == tokens[-1]["word_id"]
        if token_id == tokenizer.unk_token_id:  # show the text the unknown token stands for
            word, continues = text[start:end], False
        tokens.append({"word": word, "scores": scores[index], "start": start, "end": end,
                       "index": index, "word_id": word_ids[index], "continues": continues})
    if strategy in ("none", "simple"):
        entities = []
        for t in tokens:
            best = int(t["scores"].argmax())
            entities.append({"entity": id2label[best], "score": float(t["scores"][best]),
                             "index": t["index"], "word": t["word"], "start": t["start"],
                             "end": t["end"]})
    else:
        words, pieces = [], []
        for t in tokens:
            if pieces and not t["continues"]:
                words.append(_merge_word(tokenizer, pieces, strategy, id2label))
                pieces = []
            pieces.append(t)
        if pieces:
            words.append(_merge_word(tokenizer, pieces, strategy, id2label))
        entities = words
    return entities if strategy == "none" else _group(tokenizer, entities)


def classify_tokens(model, tokenizer: PreTrainedTokenizer, texts, *,
                    aggregation_strategy: str = "simple", ignore_labels=("O",)):
    """Entities found by a token-classification model (named entities, tags), as the
    transformers pipeline reports them.

    `aggregation_strategy`: "none" gives every token ({"entity", "score", "index", "word",
    "start", "end"}); "simple" joins adjacent tokens of one entity type into spans
    ({"entity_group", "score" (their mean), "word", "start", "end"}); "first", "average" and
    "max" first give each word one label (from its first token, the mean of its tokens'
    scores, or its most confident token), then join words. Words are the tokenizer's
    pre-tokenized words. Labels in `ignore_labels` are dropped; `start`/`end` are character
    offsets in the text. Texts longer than the model accepts are truncated."""
    _check_tokenizer(tokenizer, "classify_tokens")
    batch, single = _texts(texts, "classify_tokens")
    if aggregation_strategy not in AGGREGATION_STRATEGIES:
        raise ValueError(f"classify_tokens: aggregation_strategy must be one of "
                         f"{AGGREGATION_STRATEGIES}, got {aggregation_strategy!r}")
    ignored = {ignore_labels} if isinstance(ignore_labels, str) else set(ignore_labels)
    encoding = tokenizer(batch, padding=True, truncation=True, return_offsets_mapping=True,
                         return_special_tokens_mask=True, return_tensors="np")
    logits = _output(_run(model, encoding), "logits", "classify_tokens",
                     "a token-classification model").float().numpy().astype(np.float64)
    scores = _softmax(logits)
    results = []
    for row, text in enumerate(batch):
        entities = _token_entities(tokenizer, text, encoding, row, scores[row],
                                   aggregation_strategy, model.config.id2label)
        results.append([e for e in entities
                        if e.get("entity", e.get("entity_group")) not in ignored])
    return results[0] if single else results


# ------------------------------------------------------------ question answering
def _best_spans(start: np.ndarray, end: np.ndarray, allowed: np.ndarray, max_answer_len: int,
                top_k: int) -> list[tuple[float, int, int]]:
    """The `top_k` (score, first token, last token) spans with first <= last < first +
    max_answer_len, both allowed, scored start[first] * end[last]."""
    n = start.size
    scores = np.outer(start, end)
    first, last = np.indices((n, n))
    valid = (last >= first) & (last - first < max_answer_len) & allowed[:, None] & allowed
    flat = np.where(valid, scores, -1.0).ravel()
    order = np.argsort(-flat, kind="stable")[:top_k]
    return [(float(flat[i]), int(i // n), int(i % n)) for i in order if flat[i] >= 0]


def answer_question(model, tokenizer: PreTrainedTokenizer, question, context, *,
                    top_k: int = 1, max_answer_len: int = 15, max_seq_len: int = 384,
                    doc_stride: int = 128, handle_impossible_answer: bool = False):
    """The answer span in `context` to `question` from a question-answering model:
    {"score", "start", "end", "answer"} with `answer == context[start:end]`.

    Start and end probabilities are softmaxes over the context tokens (and the CLS token,
    which stands for "no answer"); a span from token i to token j >= i, at most
    `max_answer_len` tokens long, scores p_start[i] * p_end[j]. A context longer than
    `max_seq_len` tokens (with the question) is read in windows overlapping by `doc_stride`
    tokens. `handle_impossible_answer` adds the empty answer, scored p_start[CLS] *
    p_end[CLS]. `top_k=1` gives the best answer; more give a list by decreasing score.
    Lists of questions and contexts (of equal length) give one result per pair."""
    _check_tokenizer(tokenizer, "answer_question")
    questions, single = _texts(question, "answer_question (question)")
    contexts, single_context = _texts(context, "answer_question (context)")
    if single != single_context or len(questions) != len(contexts):
        raise ValueError(f"answer_question: give one question and one context, or lists of "
                         f"equal length; got {len(questions)} question(s) and "
                         f"{len(contexts)} context(s)")
    for name, value in (("top_k", top_k), ("max_answer_len", max_answer_len),
                        ("max_seq_len", max_seq_len)):
        _positive_int(value, name, "answer_question")
    if doc_stride >= max_seq_len:
        raise ValueError(f"answer_question: doc_stride ({doc_stride}) must be smaller than "
                         f"max_seq_len ({max_seq_len})")
    encoding = tokenizer(questions, contexts, padding=True, truncation="only_second",
                         max_length=max_seq_len, stride=doc_stride,
                         return_overflowing_tokens=True, return_offsets_mapping=True,
                         return_tensors="np")
    out = _run(model, encoding)
    start_logits = _output(out, "start_logits", "answer_question",
                           "a question-answering model").float().numpy().astype(np.float64)
    end_logits = out.end_logits.float().numpy().astype(np.float64)
    answers: list[list[dict]] = [[] for _ in questions]
    null_scores = [1.0] * len(questions)
    cls_id = tokenizer.cls_token_id
    for row, sample in enumerate(encoding["overflow_to_sample_mapping"].tolist()):
        in_context = np.array([s == 1 for s in encoding.sequence_ids(row)])
        is_cls = encoding["input_ids"][row] == cls_id if cls_id is not None \
            else np.zeros_like(in_context)
        kept = in_context | is_cls
        start = _softmax(np.where(kept, start_logits[row], -np.inf))
        end = _softmax(np.where(kept, end_logits[row], -np.inf))
        if is_cls.any():
            first_cls = int(np.flatnonzero(is_cls)[0])
            null_scores[sample] = min(null_scores[sample], start[first_cls] * end[first_cls])
        offsets = encoding["offset_mapping"][row].tolist()
        text = contexts[sample]
        for score, i, j in _best_spans(start, end, in_context, max_answer_len, top_k):
            begin, finish = offsets[i][0], offsets[j][1]
            answers[sample].append({"score": score, "start": begin, "end": finish,
                                    "answer": text[begin:finish]})
    results = []
    for sample, found in enumerate(answers):
        if not found and not handle_impossible_answer:
            raise ValueError(f"answer_question: the context of {questions[sample]!r} has no "
                             "tokens to answer from (is it empty?)")
        if handle_impossible_answer:
            found.append({"score": float(null_scores[sample]), "start": 0, "end": 0,
                          "answer": ""})
        found.sort(key=lambda a: -a["score"])
        results.append(found[0] if top_k == 1 else found[:top_k])
    return results[0] if single else results


# ------------------------------------------------------------------ multiple choice
def choose(model, tokenizer: PreTrainedTokenizer, question: str, choices, *,
           max_length: int | None = None) -> dict:
    """Which of `choices` best answers or continues `question`, by a multiple-choice model
    (AutoModelForMultipleChoice): each (question, choice) pair is scored and the scores
    softmaxed. Returns {"choice" (index), "answer" (its text), "scores" (one per choice)}."""
    _check_tokenizer(tokenizer, "choose")
    if not isinstance(question, str):
        raise TypeError(f"choose: question must be a string, got {type(question).__name__}")
    options, _ = _texts(choices, "choose (choices)")
    encoding = tokenizer([question] * len(options), options, padding=True, truncation=True,
                         max_length=max_length, return_tensors="np")
    one_question = {k: v[None] for k, v in encoding.items()}  # (1, choices, sequence)
    scores = _output(_run(model, one_question), "logits", "choose",
                     "a multiple-choice model (AutoModelForMultipleChoice)").numpy()
    if scores.shape != (1, len(options)):
        raise TypeError(f"choose needs a multiple-choice model (AutoModelForMultipleChoice), "
                        f"whose logits are (1, choices); this model gave {scores.shape}")
    probabilities = _softmax(scores[0])
    best = int(probabilities.argmax())
    return {"choice": best, "answer": options[best], "scores": probabilities.tolist()}


# ------------------------------------------------------------------------ text2text
def text2text(model, tokenizer: PreTrainedTokenizer, texts, *, max_length: int | None = None,
              **generate_kwargs):
    """Text generated from each prompt by an encoder–decoder (AutoModelForSeq2SeqLM, e.g.
    T5 with "translate English to German: ..."), as transformers' text2text-generation
    pipeline: {"generated_text"} per prompt (a list of them per prompt with
    num_return_sequences > 1); one string gives one result. Prompts are padded together and
    truncated to `max_length` tokens (default: the tokenizer's limit); `generate_kwargs`
    go to `model.generate` (max_new_tokens, num_beams, do_sample, ...)."""
    _check_tokenizer(tokenizer, "text2text")
    prompts, single = _texts(texts, "text2text")
    if not getattr(model.config, "is_encoder_decoder", False) or not hasattr(model, "generate"):
        raise TypeError(f"text2text needs an encoder–decoder with an LM head "
                        f"(AutoModelForSeq2SeqLM), got {type(model).__name__}")
    encoding = tokenizer(prompts, padding=True, truncation=True, max_length=max_length,
                         return_tensors="dl")
    device = next(iter(model.parameters())).device
    out = model.generate(encoding["input_ids"].to(device),
                         encoding["attention_mask"].to(device), **generate_kwargs)
    decoded = tokenizer.batch_decode(out, skip_special_tokens=True)
    per_prompt = generate_kwargs.get("num_return_sequences", 1)
    results = []
    for row in range(len(prompts)):
        group = [{"generated_text": text}
                 for text in decoded[row * per_prompt:(row + 1) * per_prompt]]
        results.append(group if per_prompt > 1 else group[0])
    return results[0] if single else results


# ------------------------------------------------------------ image classification
def image_classification(model, image_processor, images, *, top_k: int | None = 5,
                         function_to_apply: str | None = None):
    """The `top_k` best labels (from `config.id2label`) per image from an image classifier
    (AutoModelForImageClassification), as transformers' image-classification pipeline: a
    list of {"label", "score"} by decreasing score per image (all labels when
    `top_k=None`); one image gives one list. `image_processor` (AutoImageProcessor) makes
    the pixel values; scores are the softmax (see classify_text for `function_to_apply`)."""
    function_to_apply = _scoring(model.config, top_k, function_to_apply, "image_classification")
    single = not isinstance(images, (list, tuple))
    pixels = image_processor(images if not single else [images], return_tensors="np")
    logits = _output(_run(model, pixels), "logits", "image_classification",
                     "an image classifier (AutoModelForImageClassification)")
    results = _ranked_labels(logits, model.config, top_k, function_to_apply)
    return results[0] if single else results
