"""What the four graph workloads share: fixed weights by state_dict name, and one training
step (forward, softmax cross-entropy, backward, SGD update) for dl.free and for torch.

Each graph workload builds its architecture twice: as a `FlowBuilder` graph in dl.free and
hand-written as a torch.nn Module with the same state_dict names, so both start from the
same weights (`weights`) and see the same batches.
"""

import math
import zlib

import numpy as np

LR = 0.05


def weights(named_shapes) -> dict:
    """A fixed float32 array per (name, shape): each drawn from a generator seeded by the
    name, so the order in which a framework lists its parameters does not matter."""
    arrays = {}
    for name, shape in named_shapes:
        rng = np.random.default_rng(zlib.crc32(name.encode()))
        fan_in = math.prod(shape[1:]) if len(shape) > 1 else shape[0]
        scale = 1 / math.sqrt(fan_in) if len(shape) > 1 else 0.1
        arrays[name] = (rng.standard_normal(shape) * scale).astype(np.float32)
    return arrays


def batch(shape, classes: int, seed: int = 0):
    """Fixed float32 inputs of `shape` and int64 labels, one per leading row."""
    rng = np.random.default_rng(seed)
    return rng.standard_normal(shape, dtype=np.float32), rng.integers(0, classes, shape[0])


def dlfree_step(model, loss_of):
    """One SGD step of a dl.free model; `loss_of(model, F)` computes the loss."""
    import dlfree.functional as F
    import dlfree.optim as optim

    model.load_state_dict(weights((k, tuple(v.shape)) for k, v in model.state_dict().items()))
    optimizer = optim.SGD(model.parameters(), lr=LR)

    def step():
        loss = loss_of(model, F)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        return loss

    return step


def torch_step(model, loss_of):
    """One SGD step of a torch model; `loss_of(model, F)` computes the loss."""
    import torch
    import torch.nn.functional as F

    state = weights((k, tuple(v.shape)) for k, v in model.state_dict().items())
    model.load_state_dict({k: torch.from_numpy(v) for k, v in state.items()})
    optimizer = torch.optim.SGD(model.parameters(), lr=LR)

    def step():
        loss = loss_of(model, F)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return loss

    return step
