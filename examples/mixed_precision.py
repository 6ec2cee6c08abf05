"""Mixed precision: float16 matrix products under `autocast`, kept trainable by `GradScaler`.

Inside `dl.amp.autocast()` the matrix products (linear, matmul, conv, attention) run in
float16 while softmax, norms, reductions and losses stay in float32, and the weights stay
float32. float16 gradients of small losses underflow to zero, so `GradScaler` multiplies
the loss by a large scale before backward and divides the gradients by it before the
step; a step whose gradients overflowed (inf or nan) is skipped and the scale halved.

The program shows the dtypes autocast gives, trains an MLP on the digits by hand with
autocast and a GradScaler that starts with a scale far too large (so the first steps
overflow and are skipped until the scale fits), then trains it with the Trainer's
`amp=True` next to plain float32: the two reach the same accuracy. On the CPU float16 is
for checking a model's numerics, not for speed (NumPy has no fast float16 matrix
products); the speed is for GPUs.

    python examples/mixed_precision.py [--epochs N]
"""

import argparse

import dlfree as dl
import dlfree.functional as F
from dlfree import nn, optim
from dlfree.data import DataLoader, TensorDataset, random_split
from dlfree.data.datasets import Digits

import numpy as np


def digit_splits(seed: int = 0):
    """The digits as flat standardised vectors, split 80/20 (train, held out)."""
    data = Digits()
    pixels = data.data.reshape(len(data), -1).astype(np.float32)
    pairs = TensorDataset(dl.tensor((pixels - pixels.mean()) / pixels.std()),
                          dl.tensor(data.targets))
    return random_split(pairs, [0.8, 0.2], generator=dl.Generator().manual_seed(seed))


def mlp() -> nn.Sequential:
    dl.manual_seed(0)
    return nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))


def accuracy(model, data) -> float:
    images, labels = data[:]
    with dl.no_grad():
        return (model(images).argmax(dim=1) == labels).float().mean().item()


def show_dtypes(model, images, labels) -> None:
    with dl.amp.autocast():
        hidden = model[0](images)
        loss = F.cross_entropy(model(images), labels)
    loss.backward()
    print(f"under autocast: linear gives {hidden.dtype}, cross_entropy gives {loss.dtype}; "
          f"weights and their gradients stay {model[0].weight.grad.dtype}")
    model.zero_grad()


def train_by_hand(model, loader, epochs: int) -> list[float]:
    """The loop autocast and GradScaler are made for; returns the scale after each step."""
    optimizer = optim.AdamW(model.parameters(), lr=3e-3)
    # 2**32 is far too large: the first steps overflow in float16, which shows the backoff
    scaler = dl.amp.GradScaler(init_scale=2.0**32, growth_interval=100)
    scales = []
    for _ in range(epochs):
        for images, labels in loader:
            with dl.amp.autocast():
                loss = F.cross_entropy(model(images), labels)
            optimizer.zero_grad()
            scaler.scale(loss).backward()
            scaler.unscale_(optimizer)  # the true gradients, so that clipping sees them
            optim.clip_grad_norm_(model.parameters(), max_norm=5.0)
            scaler.step(optimizer)  # skipped if a gradient is inf or nan
            scaler.update()
            scales.append(scaler.get_scale())
    return scales


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=5)
    epochs = parser.parse_args(argv).epochs
    train, held_out = digit_splits()
    loader = DataLoader(train, batch_size=64, shuffle=True)

    model = mlp()
    show_dtypes(model, *train[:8])

    scales = train_by_hand(model, loader, epochs)
    skipped = sum(later < earlier for earlier, later in zip([2.0**32, *scales], scales))
    print(f"by hand: scale 2^32 -> 2^{np.log2(scales[-1]):.0f}, {skipped} of {len(scales)} "
          f"steps skipped; held-out accuracy {accuracy(model, held_out):.1%}")

    for amp in (False, True):
        model = mlp()
        trainer = dl.train.Trainer(model, optim.AdamW(model.parameters(), lr=3e-3),
                                   nn.CrossEntropyLoss(), amp=amp, max_epochs=epochs, seed=0)
        trainer.fit(loader)
        name = "float16 (amp=True)" if amp else "float32"
        scale = f", final loss scale {trainer.scaler.get_scale():g}" if amp else ""
        print(f"Trainer, {name:18}: loss {trainer.history['loss'].last:.4f}, held-out "
              f"accuracy {accuracy(model, held_out):.1%}{scale}")


if __name__ == "__main__":
    main()
