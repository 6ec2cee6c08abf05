"""Classify MNIST's handwritten digits with a multi-layer perceptron.

The 28x28 images are flattened into 784 inputs for two hidden layers of ReLU units. The
data are the four standard IDX files (gzipped or not) in a folder named on the command
line, read by `dlfree.data.datasets.MNIST`; without a folder the program says how to get
them and exits. Each epoch prints the training loss and the accuracy on the 10,000 test
images: about 97-98 % after three epochs.

    python examples/mnist_mlp.py FOLDER [--epochs N] [--limit N] [--seed S]
"""

import argparse
import sys

import dlfree as dl
from dlfree import nn, optim
from dlfree.data import DataLoader, TensorDataset
from dlfree.data.datasets import MNIST

FILES = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte",
         "t10k-labels-idx1-ubyte")


def how_to_get_the_files(program: str) -> str:
    """What to do when no folder was given: which files, and how to fetch them."""
    names = "\n".join(f"  {name}.gz" for name in FILES)
    return (f"{program} trains on MNIST's four IDX files, which it reads from a folder:\n"
            f"{names}\n(unzipped copies work too). Fetch them into a folder, say mnist/, with\n"
            "  python -c \"from dlfree.data.datasets import MNIST; "
            "MNIST('mnist', download=True); MNIST('mnist', train=False, download=True)\"\n"
            f"(the files are checked against their published SHA-256), then run\n"
            f"  python examples/{program} mnist")


def tensors(folder: str, train: bool, limit: int | None):
    """A TensorDataset of float32 images (N, 1, 28, 28) in [0, 1] and their int64 labels."""
    data = MNIST(folder, train=train)
    images, labels = data.data[:limit], data.targets[:limit]
    return TensorDataset(dl.tensor(images[:, None].astype("float32") / 255),
                         dl.tensor(labels))


def accuracy(model, loader) -> float:
    """The fraction of `loader`'s images whose highest score is their label."""
    model.eval()
    correct = total = 0
    with dl.no_grad():
        for x, y in loader:
            correct += int((model(x).argmax(dim=1) == y).sum().item())
            total += len(y)
    model.train()
    return correct / total


def mlp() -> nn.Module:
    """784 -> 256 -> 128 -> 10, ReLU between."""
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128),
                         nn.ReLU(), nn.Linear(128, 10))


def train(program: str, description: str, build, argv, *, epochs: int, batch_size: int,
          lr: float) -> None:
    """The command line of `program`, then the model `build()` makes trained with Adam on
    the files in the folder it names, printing the loss and the test accuracy each epoch
    (mnist_cnn.py trains its network through this too)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("folder", nargs="?", help="the folder holding the MNIST IDX files")
    parser.add_argument("--epochs", type=int, default=epochs,
                        help=f"passes over the data (default {epochs})")
    parser.add_argument("--limit", type=int, default=None,
                        help="use only the first N training and test images")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.folder is None:
        print(how_to_get_the_files(program))
        return
    try:
        train_set = tensors(args.folder, True, args.limit)
        test_set = tensors(args.folder, False, args.limit)
    except FileNotFoundError as e:
        sys.exit(f"{e}\n\n{how_to_get_the_files(program)}")

    dl.manual_seed(args.seed)
    loader = DataLoader(train_set, batch_size=batch_size, shuffle=True,
                        generator=dl.Generator().manual_seed(args.seed))
    test_loader = DataLoader(test_set, batch_size=1000)
    model = build()
    opt = optim.Adam(model.parameters(), lr=lr)
    print(f"{len(train_set)} training images, {len(test_set)} test images")
    for epoch in range(1, args.epochs + 1):
        total = 0.0
        for x, y in loader:
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item() * len(y)
        print(f"epoch {epoch}  loss {total / len(train_set):.4f}  "
              f"test accuracy {accuracy(model, test_loader):.2%}")


def main(argv=None) -> None:
    train("mnist_mlp.py", __doc__.splitlines()[0], mlp, argv, epochs=3, batch_size=128,
          lr=1e-3)


if __name__ == "__main__":
    main()
