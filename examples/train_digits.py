"""Train a small CNN on scikit-learn's handwritten digits with the Trainer: `make demo`.

The 1,797 8x8 images are split 80/20 with a fixed seed and normalised with the training
images' mean and spread. Two conv-ReLU-max-pool blocks and a linear read-out learn them
with AdamW under a one-cycle learning-rate schedule. The Trainer shows a progress line
(a bar on a terminal) per epoch with the validation accuracy, keeps the last and the best
model as model files, and writes a self-contained HTML report with the curves. While it trains, a
live dashboard serves the curves, progress and resources on a local port (its URL is
printed; open it or not, the demo waits for no one) and leaves the page frozen in
dashboard.html at the end. At the end
the last model is read back from its file and scored on the held-out fifth: about 99 %.
(The held-out fifth is the validation set too; it picks the best model, so the final
score is the last model's, which it did not pick.)

    python examples/train_digits.py [--epochs N] [--out DIR] [--port N]

Needs scikit-learn (for the images) and dlfree-nn and dlfree-optim; dlfree-metrics gives
the accuracy metric when it is installed.
"""

import argparse
import time
from pathlib import Path

import dlfree as dl
from dlfree import nn, optim
from dlfree.data import DataLoader, random_split
from dlfree.data.datasets import Digits

import numpy as np

CLASSES = 10


class CountCorrect:
    """The fraction of samples whose highest score is their label: the accuracy metric to
    use when dlfree-metrics is not installed (the Trainer calls reset, update, compute)."""

    def reset(self):
        self.correct = self.total = 0

    def update(self, scores, labels):
        self.correct += int((scores.argmax(dim=1) == labels).sum().item())
        self.total += len(labels)

    def compute(self):
        return self.correct / self.total


def accuracy_metric():
    """dlfree-metrics' multiclass Accuracy when that package is installed."""
    try:
        from dlfree.metrics import Accuracy
    except ImportError:
        return CountCorrect()
    return Accuracy(task="multiclass", num_classes=CLASSES)


def digit_splits(seed: int = 0):
    """(training, held-out) subsets of the digits, 80/20, standardised with the training
    pixels' mean and standard deviation (items are (1, 8, 8) float32 images and labels)."""
    digits = Digits()
    train, held_out = random_split(digits, [0.8, 0.2], generator=dl.Generator().manual_seed(seed))
    pixels = digits.data[train.indices].astype(np.float32) / 16  # as Digits scales them
    mean, std = float(pixels.mean()), float(pixels.std())
    digits.transform = lambda image: (image - mean) / std
    return train, held_out


def small_cnn(channels: int = 16) -> nn.Sequential:
    """Two conv-ReLU-pool blocks (8x8 -> 4x4 -> 2x2) and a linear layer to the 10 classes."""
    return nn.Sequential(
        nn.Conv2d(1, channels, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(channels, 2 * channels, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(2 * channels * 2 * 2, CLASSES))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=6, help="passes over the training set")
    parser.add_argument("--out", type=Path, default=Path("runs/digits"),
                        help="where the model files and the report go (default runs/digits)")
    parser.add_argument("--seed", type=int, default=0, help="seeds the split, weights and order")
    parser.add_argument("--port", type=int, default=0,
                        help="the live dashboard's port on 127.0.0.1 (default 0: a free one)")
    args = parser.parse_args(argv)

    train, held_out = digit_splits(args.seed)
    train_loader = DataLoader(train, batch_size=32, shuffle=True)
    held_out_loader = DataLoader(held_out, batch_size=256)
    print(f"{len(train)} training images, {len(held_out)} held out")

    dl.manual_seed(args.seed)
    model = small_cnn()
    optimizer = optim.AdamW(model.parameters(), lr=1e-3, weight_decay=1e-4)
    # the lr climbs to max_lr for the first 30 % of the steps, then anneals to almost zero
    schedule = optim.lr_scheduler.OneCycleLR(optimizer, max_lr=1e-2,
                                             total_steps=args.epochs * len(train_loader))
    checkpoints = dl.train.ModelCheckpoint(args.out / "checkpoints", monitor="val_accuracy",
                                           mode="max")
    report = dl.train.HTMLReport(args.out / "report.html", title="Digits CNN")
    dashboard = dl.train.Dashboard(port=args.port, title="Digits CNN")
    trainer = dl.train.Trainer(
        model, optimizer, nn.CrossEntropyLoss(), scheduler=schedule, scheduler_interval="step",
        metrics={"accuracy": accuracy_metric()}, max_epochs=args.epochs, seed=args.seed,
        callbacks=["progress", dashboard, checkpoints, report], run_dir=args.out)
    started = time.perf_counter()
    trainer.fit(train_loader, held_out_loader)
    seconds = time.perf_counter() - started

    # Score what was saved, not what is in memory: the model file is the result. (The
    # callback's paths and best epoch are None only until its first save.)
    assert checkpoints.last_path is not None and checkpoints.best_epoch is not None
    saved = dl.load(checkpoints.last_path)
    scores = dl.train.Trainer(saved, loss_fn=nn.CrossEntropyLoss(),
                              metrics={"accuracy": accuracy_metric()}).evaluate(held_out_loader)
    print(f"model:  {checkpoints.last_path}")
    print(f"best:   {checkpoints.best_path} (epoch {checkpoints.best_epoch + 1}, "
          f"validation accuracy {checkpoints.best_score:.1%})")
    print(f"report: {report.path}")
    print(f"dashboard, frozen: {dashboard.report}")
    print(f"trained {args.epochs} epoch{'s' * (args.epochs != 1)} in {seconds:.1f} s")
    print(f"held-out accuracy {scores['accuracy']:.1%} (loss {scores['loss']:.4f})")


if __name__ == "__main__":
    main()
