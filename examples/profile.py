"""Profile training steps of the digits CNN: where the time goes, op by op.

`dl.profiler.profile()` records every op's forward and every backward node run inside it
(calls, self and total time, bytes allocated); `record_function` marks the phases of the
step (data, forward, backward, optimizer) so that the ops nest under them. The program
warms up with one step, profiles a few more, prints the table sorted by self time and how
much of the wall time the ops account for, and writes a Chrome trace, which
https://ui.perfetto.dev or chrome://tracing opens as a timeline.

    python examples/profile.py [--steps N] [--trace PATH] [--device cpu|cuda]
"""

import argparse
from pathlib import Path

import dlfree as dl
import dlfree.functional as F
from dlfree import nn, optim
from dlfree.data import DataLoader
from dlfree.data.datasets import Digits


def small_cnn() -> nn.Sequential:
    """The network of examples/train_digits.py."""
    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(32 * 2 * 2, 10))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=5, help="training steps to profile")
    parser.add_argument("--trace", type=Path, default=Path("runs/profile/trace.json"),
                        help="where the Chrome trace goes (default runs/profile/trace.json)")
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args(argv)

    dl.manual_seed(0)
    model = small_cnn().to(args.device)
    optimizer = optim.AdamW(model.parameters(), lr=1e-3)
    batches = iter(DataLoader(Digits(), batch_size=64, shuffle=True, device=args.device))

    def train_step():
        with dl.profiler.record_function("data"):
            images, labels = next(batches)
        with dl.profiler.record_function("forward"):
            loss = F.cross_entropy(model(images), labels)
        with dl.profiler.record_function("backward"):
            loss.backward()
        with dl.profiler.record_function("optimizer"):
            optimizer.step()
            optimizer.zero_grad()

    train_step()  # the first step creates the optimizer's state: not typical, so not timed
    with dl.profiler.profile() as prof:
        for _ in range(args.steps):
            train_step()

    print(prof.table(sort_by="self_time", row_limit=15))
    args.trace.parent.mkdir(parents=True, exist_ok=True)
    prof.export_chrome_trace(args.trace)
    ops = [row for row in prof.key_averages() if row.kind != "range"]
    op_seconds = sum(row.self_time for row in ops)
    print(f"{args.steps} steps in {prof.wall_time * 1000:.1f} ms; ops (forward and backward) "
          f"account for {op_seconds / prof.wall_time:.0%} of it, in {len(ops)} kinds")
    print(f"Chrome trace: {args.trace} (open it in https://ui.perfetto.dev)")


if __name__ == "__main__":
    main()
