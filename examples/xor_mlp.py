"""Learn XOR with a two-layer network: the smallest training loop with layers and an optimizer.

XOR is the classic function no straight line can separate: (0, 0) and (1, 1) give 0,
(0, 1) and (1, 0) give 1. A hidden layer of tanh units bends the boundary. The loop is the
four lines every dl.free (and PyTorch) training loop has: zero the gradients, compute the
loss, backward, step. It prints the falling loss, then each input's prediction and how many
of the four are right.

    python examples/xor_mlp.py [--steps N] [--seed S]
"""

import argparse

import dlfree as dl
from dlfree import nn, optim

INPUTS = [[0.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 1.0]]
TARGETS = [[0.0], [1.0], [1.0], [0.0]]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=500, help="optimizer steps (default 500)")
    parser.add_argument("--seed", type=int, default=0, help="weight initialisation seed")
    args = parser.parse_args(argv)

    dl.manual_seed(args.seed)
    x, y = dl.tensor(INPUTS), dl.tensor(TARGETS)
    model = nn.Sequential(nn.Linear(2, 8), nn.Tanh(), nn.Linear(8, 1))
    opt = optim.Adam(model.parameters(), lr=0.05)
    loss_fn = nn.BCEWithLogitsLoss()

    for step in range(1, args.steps + 1):
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        if step == 1 or step % max(args.steps // 5, 1) == 0:
            print(f"step {step:4d}  loss {loss.item():.4f}")

    with dl.no_grad():
        probability = dl.sigmoid(model(x))
    predicted = (probability > 0.5).float()
    for (a, b), p, t in zip(INPUTS, probability.tolist(), TARGETS):
        print(f"xor({a:.0f}, {b:.0f}) = {t[0]:.0f}: predicted {p[0]:.3f}")
    correct = int((predicted == y).sum().item())
    print(f"{correct}/4 correct")


if __name__ == "__main__":
    main()
