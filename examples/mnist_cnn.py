"""Classify MNIST's handwritten digits with a small convolutional network.

Two 5x5 convolutions with ReLU and 2x2 max pooling (28 -> 24 -> 12 -> 8 -> 4 pixels), then
a linear read-out of the 32 x 4 x 4 features: the LeNet pattern, which sees strokes where
the MLP of mnist_mlp.py sees pixels. The files and their reading, the message when no
folder is given and the accuracy count are mnist_mlp.py's. Each epoch prints the training
loss and the accuracy on the 10,000 test images: about 99 % after two epochs.

    python examples/mnist_cnn.py FOLDER [--epochs N] [--limit N] [--seed S]
"""

import argparse
import sys

import dlfree as dl
from dlfree import nn, optim
from dlfree.data import DataLoader

from mnist_mlp import accuracy, how_to_get_the_files, tensors


def lenet() -> nn.Module:
    """Conv(1->16, 5) ReLU MaxPool(2), Conv(16->32, 5) ReLU MaxPool(2), Linear(512 -> 10)."""
    return nn.Sequential(
        nn.Conv2d(1, 16, 5), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 5), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(32 * 4 * 4, 10),
    )


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", nargs="?", help="the folder holding the MNIST IDX files")
    parser.add_argument("--epochs", type=int, default=2, help="passes over the data (default 2)")
    parser.add_argument("--limit", type=int, default=None,
                        help="use only the first N training and test images")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.folder is None:
        print(how_to_get_the_files("mnist_cnn.py"))
        return
    try:
        train, test = tensors(args.folder, True, args.limit), tensors(args.folder, False,
                                                                      args.limit)
    except FileNotFoundError as e:
        sys.exit(f"{e}\n\n{how_to_get_the_files('mnist_cnn.py')}")

    dl.manual_seed(args.seed)
    loader = DataLoader(train, batch_size=64, shuffle=True,
                        generator=dl.Generator().manual_seed(args.seed))
    test_loader = DataLoader(test, batch_size=500)
    model = lenet()
    opt = optim.Adam(model.parameters(), lr=2e-3)
    print(f"{len(train)} training images, {len(test)} test images")
    for epoch in range(1, args.epochs + 1):
        total = 0.0
        for x, y in loader:
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item() * len(y)
        print(f"epoch {epoch}  loss {total / len(train):.4f}  "
              f"test accuracy {accuracy(model, test_loader):.2%}")


if __name__ == "__main__":
    main()
