"""Transfer learning: pretrain a CNN on the digits 0-4, freeze its backbone, fit a new head to 5-9.

The network is `features` (two conv blocks) followed by `head` (a linear layer). It is first
trained on the training images of the digits 0 to 4. Then `model.freeze("features")` stops
the backbone's gradients by its path, a fresh 5-way head replaces the old one, and only
the head is trained on the digits 5 to 9: the features learnt on other digits already
separate the new ones well, and the frozen backbone ends exactly as it was. Last,
`model.thaw("features")` lets a short fine-tuning of the whole network at a lower
learning rate adapt the backbone too.

    python examples/transfer.py [--pretrain-epochs N] [--head-epochs N] [--finetune-epochs N]
"""

import argparse
from collections import OrderedDict

import dlfree as dl
from dlfree import nn, optim
from dlfree.data import DataLoader, Subset, random_split
from dlfree.data.datasets import Digits

import numpy as np

FEATURES = 32 * 2 * 2  # what the backbone gives per image: 32 channels of 2x2


def digit_sets(seed: int = 0):
    """The digits split 80/20 (seeded), standardised with the training pixels' statistics,
    as {"low"/"high": (train, test)} with the digits 0-4 and 5-9, labels 0-4 in both."""
    low, high = Digits(), Digits(target_transform=lambda label: label - 5)
    train, test = (part.indices for part in random_split(
        low, [0.8, 0.2], generator=dl.Generator().manual_seed(seed)))
    pixels = low.data[train].astype(np.float32) / 16
    mean, std = float(pixels.mean()), float(pixels.std())
    for digits in (low, high):
        digits.transform = lambda image: (image - mean) / std

    def part(digits, indices, wanted):
        return Subset(digits, [i for i in indices if digits.targets[i] in wanted])

    return {name: (part(digits, train, wanted), part(digits, test, wanted))
            for name, digits, wanted in (("low", low, range(5)), ("high", high, range(5, 10)))}


def network() -> nn.Sequential:
    """A conv backbone under the path "features" and a 5-way linear "head"."""
    features = nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten())
    return nn.Sequential(OrderedDict(features=features, head=nn.Linear(FEATURES, 5)))


def fit(model, data, epochs: int, lr: float) -> None:
    """Train the parameters of `model` that require gradients, with AdamW."""
    trainable = [p for p in model.parameters() if p.requires_grad]
    trainer = dl.train.Trainer(model, optim.AdamW(trainable, lr=lr), nn.CrossEntropyLoss(),
                               max_epochs=epochs, seed=0)
    trainer.fit(DataLoader(data, batch_size=32, shuffle=True))


def accuracy(model, data) -> float:
    """The fraction of `data` that `model` labels correctly."""
    model.eval()
    correct = 0
    with dl.no_grad():
        for images, labels in DataLoader(data, batch_size=512):
            correct += int((model(images).argmax(dim=1) == labels).sum().item())
    return correct / len(data)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pretrain-epochs", type=int, default=5)
    parser.add_argument("--head-epochs", type=int, default=5)
    parser.add_argument("--finetune-epochs", type=int, default=5)
    args = parser.parse_args(argv)
    sets = digit_sets()
    (low_train, low_test), (high_train, high_test) = sets["low"], sets["high"]

    dl.manual_seed(0)
    model = network()
    fit(model, low_train, args.pretrain_epochs, lr=3e-3)
    print(f"pretrained on {len(low_train)} images of 0-4: "
          f"accuracy on held-out 0-4 {accuracy(model, low_test):.1%}")

    model.freeze("features")
    model.head = nn.Linear(FEATURES, 5)  # a fresh head for the new classes, trainable
    backbone = {k: v.numpy().copy() for k, v in model.features.state_dict().items()}
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    fit(model, high_train, args.head_epochs, lr=3e-3)
    unchanged = all(np.array_equal(backbone[k], v.numpy())
                    for k, v in model.features.state_dict().items())
    print(f"trained a new head ({trainable} of {model.num_parameters()} parameters) on "
          f"{len(high_train)} images of 5-9: accuracy on held-out 5-9 "
          f"{accuracy(model, high_test):.1%}; backbone unchanged: {unchanged}")

    model.thaw("features")
    fit(model, high_train, args.finetune_epochs, lr=1e-3)
    print(f"fine-tuned the whole network on 5-9: accuracy on held-out 5-9 "
          f"{accuracy(model, high_test):.1%}")


if __name__ == "__main__":
    main()
