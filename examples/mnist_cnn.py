"""Classify MNIST's handwritten digits with a small convolutional network.

Two 5x5 convolutions with ReLU and 2x2 max pooling (28 -> 24 -> 12 -> 8 -> 4 pixels), then
a linear read-out of the 32 x 4 x 4 features: the LeNet pattern, which sees strokes where
the MLP of mnist_mlp.py sees pixels. The command line, the files and their reading, the
message when no folder is given and the training loop are mnist_mlp.py's. Each epoch
prints the training loss and the accuracy on the 10,000 test images: about 99 % after two
epochs.

    python examples/mnist_cnn.py FOLDER [--epochs N] [--limit N] [--seed S]
"""

from dlfree import nn

from mnist_mlp import train


def lenet() -> nn.Module:
    """Conv(1->16, 5) ReLU MaxPool(2), Conv(16->32, 5) ReLU MaxPool(2), Linear(512 -> 10)."""
    return nn.Sequential(
        nn.Conv2d(1, 16, 5), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 5), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(32 * 4 * 4, 10),
    )


def main(argv=None) -> None:
    train("mnist_cnn.py", __doc__.splitlines()[0], lenet, argv, epochs=2, batch_size=64,
          lr=2e-3)


if __name__ == "__main__":
    main()
