"""Progressive training with a graph tree: train an encoder alone, save it, load it into a
larger graph, freeze it while the new parts learn, and thaw it when their loss stalls.

The task is to classify points of three interleaved spirals. First the encoder (a graph of
its own: a projection and a residual block) is trained with a throwaway linear head and
saved with `dl.save`. Then a larger graph holds a freshly built encoder under the label
"encoder", an adapter and a new head; `load_subgraph("encoder", file)` loads the trained
weights after checking the names and the structural hash, and `freeze("encoder")` leaves
only the new parts to train. Each epoch's loss is recorded in the graph
(`record`/`flush`); once `trend("loss").stalled(...)`, `thaw("encoder")` fine-tunes it all.

    python examples/progressive.py [--epochs N] [--out DIR]
"""

import argparse
import math
import tempfile
from pathlib import Path

import dlfree as dl
import dlfree.functional as F
from dlfree import nn, optim
from dlfree.nn import FlowBuilder

CLASSES, WIDTH = 3, 32


def spirals(n: int, seed: int):
    """(points, labels): `n` noisy points on three interleaved spiral arms."""
    generator = dl.Generator().manual_seed(seed)
    labels = dl.randint(0, CLASSES, (n,), generator=generator)
    radius = dl.rand(n, generator=generator)
    angle = radius * 3.5 + labels.float() * (2 * math.pi / CLASSES)
    points = dl.stack([radius * dl.cos(angle), radius * dl.sin(angle)], dim=1)
    return points + 0.04 * dl.randn(n, 2, generator=generator), labels


def encoder() -> nn.Graph:
    """The component trained alone: a projection and a residual tanh block."""
    return (FlowBuilder.from_(nn.Linear(2, WIDTH)).label("project").through(nn.Tanh())
            .also(nn.Sequential(nn.Linear(WIDTH, WIDTH), nn.Tanh())).label("block")
            .build())


def train(model, points, labels, epochs: int, lr: float, on_epoch=None) -> float:
    """Adam on the parameters that require gradients, rebuilt when `on_epoch` (called with
    the epoch's mean loss) returns True; the last epoch's loss."""
    def make_optimizer():
        return optim.Adam([p for p in model.parameters() if p.requires_grad], lr=lr)
    optimizer = make_optimizer()
    loss_value = math.nan
    for _ in range(epochs):
        total = 0.0
        for start in range(0, len(labels), 64):
            loss = F.cross_entropy(model(points[start:start + 64]), labels[start:start + 64])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += float(loss) * len(labels[start:start + 64])
        loss_value = total / len(labels)
        if on_epoch is not None and on_epoch(loss_value):
            optimizer = make_optimizer()
    return loss_value


def accuracy(model, points, labels) -> float:
    with dl.no_grad():
        return float((model(points).argmax(dim=1) == labels).float().mean())


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=40)
    parser.add_argument("--out", type=Path, help="where to write encoder.safetensors")
    args = parser.parse_args(argv)
    out = args.out or Path(tempfile.mkdtemp())
    dl.manual_seed(0)
    points, labels = spirals(768, seed=0)
    test_points, test_labels = spirals(768, seed=1)

    alone = encoder()
    pretrain = FlowBuilder.from_(alone).label("encoder").through(nn.Linear(WIDTH, CLASSES)) \
        .build()
    train(pretrain, points, labels, args.epochs, lr=1e-2)
    alone_accuracy = accuracy(pretrain, test_points, test_labels)
    print(f"encoder alone: held-out accuracy {100 * alone_accuracy:.1f}%")
    path = out / "encoder.safetensors"
    dl.save(alone, path)

    model = (FlowBuilder.from_(encoder()).label("encoder")
             .also(nn.Sequential(nn.Linear(WIDTH, WIDTH), nn.ReLU())).label("adapter")
             .through(nn.Linear(WIDTH, CLASSES)).label("head")
             .build())
    model.load_subgraph("encoder", path)
    print(f"loaded {path.name} into 'encoder' "
          f"(structural hash {model.structural_hash('encoder')})")
    model.freeze("encoder")
    frozen = [p.numpy().copy() for p in model.parameters_at("encoder")]
    thawed_at: list[int] = []

    def on_epoch(loss: float) -> bool:
        model.record("loss", loss)
        model.flush()
        if not thawed_at and model.trend("loss").stalled(3, tol=1e-3):
            unchanged = all((p.numpy() == f).all()
                            for p, f in zip(model.parameters_at("encoder"), frozen))
            print(f"loss stalled at epoch {len(model.trend('loss'))}: thawing the encoder "
                  f"(unchanged while frozen: {unchanged})")
            model.thaw("encoder")
            thawed_at.append(len(model.trend("loss")))
            return True
        return False

    train(model, points, labels, args.epochs * 2, lr=3e-3, on_epoch=on_epoch)
    if not thawed_at:
        print("the loss never stalled; the encoder stayed frozen")
    print(f"larger graph: held-out accuracy "
          f"{100 * accuracy(model, test_points, test_labels):.1f}%")


if __name__ == "__main__":
    main()
