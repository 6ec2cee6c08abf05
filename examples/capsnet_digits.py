"""A capsule network (Sabour, Frosst & Hinton 2017) on scikit-learn's 8x8 digits.

A 3x3 convolution, primary capsules (8 channels of 8-d capsules from a second 3x3
convolution) and ten 16-d digit capsules reached by three rounds of dynamic routing; the
length of a digit capsule is the network's belief in that digit. Training minimises the
margin loss plus a small reconstruction loss of a decoder that sees only the true digit's
capsule. The digits are split 80/20 with a fixed seed; the held-out accuracy is printed
at the end: at least 97 %, in under 3 minutes on two cores.

    python examples/capsnet_digits.py [--epochs N] [--limit N]

Needs scikit-learn (for the images) and dlfree-nn and dlfree-optim.
"""

import argparse
import time

import dlfree as dl
from dlfree import nn, optim
from dlfree.data.datasets import Digits

import numpy as np


class CapsNet(nn.Module):
    def __init__(self, routing_iterations: int = 3):
        super().__init__()
        self.conv = nn.Conv2d(1, 32, 3)  # 8x8 -> 6x6
        self.primary = nn.PrimaryCapsules(32, out_capsules=8, capsule_dim=8, kernel_size=3,
                                          stride=1)  # 6x6 -> 4x4: 128 capsules
        self.digits = nn.RoutingCapsules(128, 8, 10, 16, routing_iterations)
        self.decoder = nn.CapsuleDecoder(10, 16, out_features=64, hidden=(128, 256))

    def forward(self, images, labels=None):
        capsules = self.digits(self.primary(self.conv(images).relu()))
        return capsules, self.decoder(capsules, labels)


def splits(seed: int = 0):
    """(train images, train labels, held-out images, held-out labels), 80/20."""
    digits = Digits()
    images = digits.data.astype(np.float32)[:, None] / Digits.pixel_max
    order = np.random.default_rng(seed).permutation(len(images))
    cut = int(0.8 * len(images))
    train, held = order[:cut], order[cut:]
    return images[train], digits.targets[train], images[held], digits.targets[held]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--limit", type=int, default=0,
                        help="train on only this many images (0: all), for a quick run")
    args = parser.parse_args()
    dl.manual_seed(0)
    x_train, y_train, x_held, y_held = splits()
    if args.limit:
        x_train, y_train = x_train[:args.limit], y_train[:args.limit]
    model = CapsNet()
    margin = nn.CapsuleMarginLoss()
    opt = optim.Adam(model.parameters(), lr=3e-3)
    rs = np.random.default_rng(1)
    start = time.perf_counter()
    for epoch in range(args.epochs):
        model.train()
        total = 0.0
        for batch in np.array_split(rs.permutation(len(x_train)), max(len(x_train) // 64, 1)):
            images, labels = dl.tensor(x_train[batch]), dl.tensor(y_train[batch])
            capsules, reconstruction = model(images, labels)
            recon = ((reconstruction - images.reshape(len(batch), -1)) ** 2).sum(1).mean()
            loss = margin(capsules, labels) + 0.0005 * 64 / 784 * recon
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item() * len(batch)
        print(f"epoch {epoch + 1}: loss {total / len(x_train):.4f} "
              f"({time.perf_counter() - start:.0f} s)")
    model.eval()
    with dl.no_grad():
        capsules, _ = model(dl.tensor(x_held))
        predicted = (capsules ** 2).sum(-1).argmax(1).numpy()
    print(f"held-out accuracy {100 * float((predicted == y_held).mean()):.1f}% "
          f"({len(y_held)} images, {time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
