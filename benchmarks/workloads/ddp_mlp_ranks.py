"""The rank program of the ddp_mlp workload: `python -m workloads.ddp_mlp_ranks FRAMEWORK
STORE`, launched by ddp_mlp.py under mpiexec from benchmarks/ (STORE: a file path for
torch's rendezvous). Rank 0 takes the commands on stdin and answers on stdout."""

from __future__ import annotations

import statistics
import sys
import time

GLOBAL_BATCH = 256
LR = 0.1


def _state(comm):
    """mlp_step's initial weights as a state dict of (out, in) arrays, and this rank's part
    of the global batch."""
    import numpy as np

    from .mlp_step import SIZES, _problem

    params = _problem()[2]
    state = {}
    for i in range(len(SIZES) - 1):
        state[f"{2 * i}.weight"] = np.ascontiguousarray(params[2 * i].T)
        state[f"{2 * i}.bias"] = params[2 * i + 1]
    rng = np.random.default_rng(100)
    x = rng.standard_normal((GLOBAL_BATCH, SIZES[0]), dtype=np.float32)
    y = rng.integers(0, SIZES[-1], GLOBAL_BATCH)
    part = GLOBAL_BATCH // comm.Get_size()
    mine = slice(comm.Get_rank() * part, (comm.Get_rank() + 1) * part)
    return state, x[mine], y[mine]


def _dlfree_step(comm):
    import dlfree as dl
    import dlfree.distributed as dist
    import dlfree.functional as F
    from dlfree import nn, optim

    dist.init_process_group("mpi")
    state, x_np, y_np = _state(comm)
    model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                          nn.Linear(512, 10))
    model.load_state_dict(state)
    ddp = dist.DistributedDataParallel(model)
    optimizer = optim.SGD(ddp.parameters(), lr=LR)
    x, y = dl.tensor(x_np), dl.tensor(y_np)

    def step():
        optimizer.zero_grad()
        loss = F.cross_entropy(ddp(x), y)
        loss.backward()
        optimizer.step()
        return loss.item()

    return step


def _torch_step(comm, store: str):
    import torch
    import torch.distributed as tdist
    import torch.nn.functional as F

    torch.set_num_threads(1)
    tdist.init_process_group("gloo", init_method=f"file://{store}", rank=comm.Get_rank(),
                             world_size=comm.Get_size())
    state, x_np, y_np = _state(comm)
    model = torch.nn.Sequential(torch.nn.Linear(784, 512), torch.nn.ReLU(),
                                torch.nn.Linear(512, 512), torch.nn.ReLU(),
                                torch.nn.Linear(512, 10))
    model.load_state_dict({k: torch.from_numpy(v) for k, v in state.items()})
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=LR)
    x, y = torch.from_numpy(x_np), torch.from_numpy(y_np)

    def step():
        optimizer.zero_grad(set_to_none=True)
        loss = F.cross_entropy(ddp(x), y)
        loss.backward()
        optimizer.step()
        return loss.item()

    return step


def _next_command(comm):
    """Rank 0 reads a command from stdin and hands it to every rank; the others wait for it
    sleeping, so that an idle job leaves the cores to the framework being timed."""
    if comm.Get_rank() == 0:
        line = sys.stdin.readline().split()
        command = (line[0], int(line[1]) if len(line) > 1 else 1) if line else None
        comm.Ibarrier().Wait()
    else:
        request = comm.Ibarrier()
        while not request.Test():
            time.sleep(0.001)
    return comm.bcast(command if comm.Get_rank() == 0 else None, 0)


def _serve(framework: str, store: str) -> None:
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    rank0 = comm.Get_rank() == 0
    step = _dlfree_step(comm) if framework == "dlfree" else _torch_step(comm, store)
    step()  # the first step builds what the later ones reuse
    if rank0:
        print("ready", flush=True)
    clock = time.perf_counter
    while (command := _next_command(comm)) is not None:
        kind, n = command
        if kind == "step":  # the loss over the global batch: the mean of the ranks' losses
            loss = comm.allreduce(step()) / comm.Get_size()
            answer = f"loss {loss!r}"
        else:
            times = []
            for _ in range(n):
                start = clock()
                step()
                times.append(clock() - start)
            answer = f"median {statistics.median(times)!r}"
        if rank0:
            print(answer, flush=True)


if __name__ == "__main__":
    _serve(sys.argv[1], sys.argv[2])
