"""One network, two tasks: a shared trunk with a classification head and a regression head.

On scikit-learn's 8x8 digits, a trunk of two layers feeds two heads: one says which digit
(10 classes, cross-entropy), the other estimates how much ink the digit uses (the mean pixel
brightness, standardised; mean squared error). The two losses are combined into one,
`loss = cross_entropy + weight * mse`, so that one backward pass trains the trunk for both
tasks. Each epoch prints both losses and, on held-out digits, both metrics from
`dlfree.metrics`: the accuracy of the class head and the mean absolute error of the ink head.

    python examples/multi_task.py [--epochs N] [--weight W] [--seed S]
"""

import argparse

import dlfree as dl
from dlfree import nn, optim
from dlfree.data import DataLoader, TensorDataset
from dlfree.data.datasets import Digits
from dlfree.metrics import Accuracy, MeanAbsoluteError

import numpy as np


class TwoHeads(nn.Module):
    """A shared trunk and two heads: class scores (N, 10) and an ink estimate (N,)."""

    def __init__(self, hidden: int = 64):
        super().__init__()
        self.trunk = nn.Sequential(nn.Flatten(), nn.Linear(64, hidden), nn.ReLU(),
                                   nn.Linear(hidden, hidden), nn.ReLU())
        self.classes = nn.Linear(hidden, 10)
        self.ink = nn.Linear(hidden, 1)

    def forward(self, x):
        features = self.trunk(x)
        return self.classes(features), self.ink(features)[:, 0]


def datasets(seed: int):
    """Training and held-out TensorDatasets of (image, digit, standardised ink)."""
    digits = Digits()
    images = digits.data.astype(np.float32)[:, None] / Digits.pixel_max
    ink = images.mean(axis=(1, 2, 3))
    ink = ((ink - ink.mean()) / ink.std()).astype(np.float32)
    order = np.random.default_rng(seed).permutation(len(images))
    cut = int(0.8 * len(order))

    def subset(rows):
        return TensorDataset(dl.tensor(images[rows]), dl.tensor(digits.targets[rows]),
                             dl.tensor(ink[rows]))

    return subset(order[:cut]), subset(order[cut:])


def evaluate(model, loader):
    """The class head's accuracy and the ink head's mean absolute error on `loader`."""
    accuracy, error = Accuracy(task="multiclass", num_classes=10), MeanAbsoluteError()
    model.eval()
    with dl.no_grad():
        for x, digit, ink in loader:
            scores, estimate = model(x)
            accuracy.update(scores, digit)
            error.update(estimate, ink)
    model.train()
    return float(accuracy.compute()), float(error.compute())


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=20, help="passes over the data")
    parser.add_argument("--weight", type=float, default=1.0,
                        help="the regression loss's weight in the combined loss (default 1)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    dl.manual_seed(args.seed)
    train, held_out = datasets(args.seed)
    loader = DataLoader(train, batch_size=64, shuffle=True,
                        generator=dl.Generator().manual_seed(args.seed))
    test_loader = DataLoader(held_out, batch_size=256)
    model = TwoHeads()
    opt = optim.Adam(model.parameters(), lr=3e-3)
    accuracy, error = evaluate(model, test_loader)
    print(f"untrained  held-out accuracy {accuracy:.1%}  ink MAE {error:.3f}")
    for epoch in range(1, args.epochs + 1):
        totals = np.zeros(2)
        for x, digit, ink in loader:
            scores, estimate = model(x)
            class_loss = nn.functional.cross_entropy(scores, digit)
            ink_loss = nn.functional.mse_loss(estimate, ink)
            loss = class_loss + args.weight * ink_loss  # one loss trains the trunk for both
            opt.zero_grad()
            loss.backward()
            opt.step()
            totals += len(digit) * np.array([class_loss.item(), ink_loss.item()])
        class_loss, ink_loss = totals / len(train)
        accuracy, error = evaluate(model, test_loader)
        print(f"epoch {epoch:3d}  class loss {class_loss:.4f}  ink loss {ink_loss:.4f}  "
              f"held-out accuracy {accuracy:.1%}  ink MAE {error:.3f}")


if __name__ == "__main__":
    main()
