"""Fit a two-layer network to three interleaved spirals, using only dl.free's core.

This is the smallest complete training program: tensors, `@`, `tanh`, `log_softmax`,
`loss.backward()`, and gradient descent written out by hand as in-place updates under
`dl.no_grad()`. The three spiral arms cannot be told apart by straight lines, so the
hidden layer has to learn a curved boundary: the printed loss falls from about
log(3) = 1.10, and the accuracy on points held out from training ends far above the
33 % of guessing.

    python examples/fit_two_layer_net.py [--steps N]
"""

import argparse
import math

import dlfree as dl

import numpy as np

CLASSES = 3
HIDDEN = 64
LEARNING_RATE = 0.5


def make_spirals(points_per_class: int = 200, turns: float = 1.0, noise: float = 0.08,
                 seed: int = 0):
    """Points (n, 2) float32 on `CLASSES` spiral arms, jittered by `noise`, and their arm."""
    rng = np.random.default_rng(seed)
    radius = np.tile(np.linspace(0.05, 1.0, points_per_class), CLASSES)
    labels = np.repeat(np.arange(CLASSES), points_per_class)
    angle = labels * (2 * np.pi / CLASSES) + turns * 2 * np.pi * radius
    points = np.stack([radius * np.cos(angle), radius * np.sin(angle)], axis=1)
    points += noise * rng.standard_normal(points.shape)
    return points.astype(np.float32), labels


def split(points, labels, held_out: float = 0.25, seed: int = 0):
    """Shuffle, then keep the last `held_out` fraction aside for evaluation."""
    order = np.random.default_rng(seed).permutation(len(labels))
    cut = int(len(labels) * (1 - held_out))
    train, test = order[:cut], order[cut:]
    return (dl.tensor(points[train]), dl.tensor(labels[train]),
            dl.tensor(points[test]), dl.tensor(labels[test]))


def init_params(seed: int = 0):
    """Random weights scaled by 1/sqrt(fan_in) and zero biases, all requiring gradients."""
    dl.manual_seed(seed)
    w1 = (dl.randn(2, HIDDEN) / math.sqrt(2)).requires_grad_()
    w2 = (dl.randn(HIDDEN, CLASSES) / math.sqrt(HIDDEN)).requires_grad_()
    return [w1, dl.zeros(HIDDEN, requires_grad=True), w2, dl.zeros(CLASSES, requires_grad=True)]


def forward(params, x):
    """Class scores (logits): a tanh hidden layer, then a linear read-out."""
    w1, b1, w2, b2 = params
    return dl.tanh(x @ w1 + b1) @ w2 + b2


def cross_entropy(logits, labels):
    """Mean negative log-probability that softmax(logits) gives the right class."""
    log_probs = dl.log_softmax(logits, dim=1)
    return -log_probs[dl.arange(len(labels)), labels].mean()


def accuracy(logits, labels) -> float:
    """The fraction of points whose highest score is their own class."""
    return (logits.argmax(dim=1) == labels).float().mean().item()


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=3000, help="gradient steps (default 3000)")
    steps = parser.parse_args(argv).steps

    x_train, y_train, x_test, y_test = split(*make_spirals())
    params = init_params()
    print(f"{len(y_train)} training points, {len(y_test)} held out, {CLASSES} classes")

    for step in range(1, steps + 1):
        loss = cross_entropy(forward(params, x_train), y_train)
        loss.backward()
        with dl.no_grad():  # the update itself must not become part of the graph
            for p in params:
                p.sub_(p.grad, alpha=LEARNING_RATE)
                p.grad = None  # backward adds into .grad; start the next step from none
        if step == 1 or step % max(steps // 10, 1) == 0:
            print(f"step {step:5d}  loss {loss.item():.4f}")

    with dl.no_grad():
        test_accuracy = accuracy(forward(params, x_test), y_test)
    print(f"held-out accuracy {test_accuracy:.1%}")


if __name__ == "__main__":
    main()
