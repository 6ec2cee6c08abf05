"""Every FlowBuilder construct in one model, trained on a toy sequence task.

Sequences of 4 steps of 8 features are labelled by the sign of their first feature's mean,
with an auxiliary input `memory` (noise here) read by one step. The flow embeds each step
(`map(...).each()`), flattens, adds a residual block (`also`), computes an auxiliary head
on a side branch (`fork` + `tag`), runs two parallel heads (`split` / `merge`), reads the
auxiliary input (`input` + `using`) and the previous call's output (a forward reference:
`using("feedback")` before `tag("feedback")`), refines by a loop (`loop(...).for_n`) and
another that stops by a condition (`until`), routes softly (`gate`) and hard (`switch`,
per sample), and maps a body over two slices (`map(...).slices`). The training loss adds
the auxiliary head's loss (`graph.tagged("aux")`); a collected tag is averaged per epoch.

    python examples/graph_builder.py [--epochs N] [--dot FILE]
"""

import argparse

import dlfree as dl
import dlfree.functional as F
from dlfree import nn, optim
from dlfree.nn import FlowBuilder

STEPS, FEATURES, WIDTH = 4, 8, 32


def build() -> nn.Graph:
    """The showcase graph: one labelled step per construct."""
    tanh_block = nn.Sequential(nn.Linear(WIDTH, WIDTH), nn.Tanh())
    return (FlowBuilder.from_(nn.Linear(FEATURES, 16)).label("embed")
            .input("memory")
            .map(nn.Sequential(nn.Linear(16, 16), nn.Tanh())).each().label("per_step")
            .through(nn.Flatten()).through(nn.Linear(STEPS * 16, WIDTH)).label("pool")
            .also(nn.Sequential(nn.Linear(WIDTH, WIDTH), nn.ReLU())).label("residual")
            .fork(nn.Linear(WIDTH, 2)).label("aux_head").tag("aux")
            .split(nn.Linear(WIDTH, 16), nn.Linear(WIDTH, 16)).merge("cat").label("heads")
            .using("memory").through(nn.Bilinear(WIDTH, FEATURES, WIDTH)).label("read")
            .using("feedback").through(nn.Bilinear(WIDTH, WIDTH, WIDTH)).label("feedback_mix")
            .loop(tanh_block).for_n(2).label("refine")
            .loop(nn.Sequential(nn.Linear(WIDTH, WIDTH), nn.Tanh()))
            .until(lambda h: h.abs().mean() < 0.5, max_iter=3).label("settle")
            .gate(nn.Linear(WIDTH, 3), *[nn.Linear(WIDTH, WIDTH) for _ in range(3)])
            .label("experts")
            .switch(nn.Linear(WIDTH, 2), nn.Linear(WIDTH, WIDTH),
                    nn.Sequential(nn.Linear(WIDTH, WIDTH), nn.Tanh())).label("route")
            .tag("feedback")
            .map(nn.Linear(WIDTH // 2, WIDTH // 2)).slices(2).label("halves")
            .through(nn.Linear(WIDTH, 2)).label("classifier")
            .build())


def data(n: int, seed: int):
    """(sequences, memory, labels): the label says whether feature 0's mean is positive."""
    generator = dl.Generator().manual_seed(seed)
    x = dl.randn(n, STEPS, FEATURES, generator=generator)
    memory = dl.randn(n, FEATURES, generator=generator)
    return x, memory, (x[:, :, 0].mean(dim=1) > 0).long()


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=15)
    parser.add_argument("--dot", help="write the graph's Graphviz DOT text to this file")
    args = parser.parse_args(argv)
    dl.manual_seed(0)
    graph = build()
    graph.collect("aux")
    x, memory, y = data(1024, seed=0)
    optimizer = optim.Adam(graph.parameters(), lr=3e-3)
    for epoch in range(args.epochs):
        graph.reset()  # each epoch is a new sequence of calls for the feedback reference
        for start in range(0, len(y), 64):
            rows = slice(start, start + 64)
            logits = graph(x[rows], memory=memory[rows])
            loss = F.cross_entropy(logits, y[rows]) + \
                0.3 * F.cross_entropy(graph.tagged("aux"), y[rows])
            optimizer.zero_grad()
            loss.backward()
            graph.detach_state()  # the next batch reads `feedback` without its history
            optimizer.step()
            graph.record("loss", loss)
        closed = graph.flush()
        if epoch in (0, args.epochs - 1):
            print(f"epoch {epoch + 1}: loss {closed['loss']:.4f}, mean aux logit "
                  f"{closed['aux']:.4f}")
    graph.eval()
    graph.reset()
    test_x, test_memory, test_y = data(256, seed=1)
    correct = 0
    with dl.no_grad():  # in batches, as in training, so `feedback` is read as it was then
        for start in range(0, len(test_y), 64):
            rows = slice(start, start + 64)
            guess = graph(test_x[rows], memory=test_memory[rows]).argmax(dim=1)
            correct += int((guess == test_y[rows]).sum())
    accuracy = correct / len(test_y)
    print(f"held-out accuracy {100 * accuracy:.1f}%")
    print(f"loss slope over the last 5 epochs {graph.trend('loss').slope(5):+.5f}")
    print(f"{len(list(graph.named_graph_paths()))} graph paths, e.g. "
          f"{graph.validate_path('refine')}")
    if args.dot:
        with open(args.dot, "w") as f:
            f.write(graph.to_dot())
        print(f"wrote {args.dot}")


if __name__ == "__main__":
    main()
