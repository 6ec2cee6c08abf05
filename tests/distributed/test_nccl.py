"""The NCCL engine on GPUs (marked `gpu`: they skip without CuPy and a GPU that answers).

A world of one rank on one GPU is still a real NCCL communicator: every call goes through
NCCL on its own stream. The results are checked against NumPy, and DDP on the GPU against
the same training on the CPU (float64, rtol 1e-10)."""

from __future__ import annotations

import dlfree as dl
import dlfree.distributed as dist
import dlfree.functional as F
from dlfree import nn, optim

import numpy as np
import pytest

pytestmark = [pytest.mark.mpi, pytest.mark.gpu,
              pytest.mark.skipif(not dl.cuda.is_available(),
                                 reason="CuPy or an NVIDIA GPU is not available")]
WORLD_SIZES = (1,)


def _nccl():
    dist.destroy_process_group()
    dist.init_process_group(None)  # every rank has a GPU: NCCL
    assert dist.get_backend() == "nccl"


def ranks_nccl_collectives_match_numpy():
    _nccl()
    rng = np.random.default_rng(0)
    for dtype in (np.float16, np.float32, np.float64, np.int32, np.int64):
        values = (rng.uniform(0.5, 1.5, (3, 4)) * 4).astype(dtype)
        for op in dist.ReduceOp:
            t = dl.tensor(values, device="cuda")
            dist.all_reduce(t, op=op, async_op=True).wait()
            # one rank: every reduction, through NCCL, gives the value back
            np.testing.assert_array_equal(t.numpy(), values)
        t = dl.tensor(values, device="cuda")
        dist.broadcast(t, 0)
        out = dl.zeros((1, 3, 4), dtype=t.dtype, device="cuda")
        dist.all_gather_into_tensor(out, t)
        np.testing.assert_array_equal(out.numpy()[0], values)
        part = dl.zeros((3, 4), dtype=t.dtype, device="cuda")
        dist.reduce_scatter_tensor(part, out)
        np.testing.assert_array_equal(part.numpy(), values)
        outputs = [dl.zeros(4, dtype=t.dtype, device="cuda")]
        dist.all_to_all(outputs, [dl.tensor(values[0], device="cuda")])
        np.testing.assert_array_equal(outputs[0].numpy(), values[0])
    cpu = dl.ones(3)  # CPU tensors still go through MPI under backend nccl
    dist.all_reduce(cpu)
    np.testing.assert_array_equal(cpu.numpy(), [1, 1, 1])


def ranks_ddp_on_the_gpu_equals_the_cpu():
    _nccl()
    rng = np.random.default_rng(1)
    X, Y = rng.standard_normal((10, 8, 6)), rng.integers(0, 3, (10, 8))

    def train(device, wrap):
        dl.manual_seed(0)
        model = nn.Sequential(nn.Linear(6, 10), nn.Tanh(), nn.Linear(10, 3)).double().to(device)
        if wrap:
            model = dist.DistributedDataParallel(model, bucket_cap_mb=0.0005)
        opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        for s in range(10):
            opt.zero_grad()
            x, y = dl.tensor(X[s], device=device), dl.tensor(Y[s], device=device)
            F.cross_entropy(model(x), y).backward()
            opt.step()
        return np.concatenate([p.detach().numpy().ravel() for p in model.parameters()])

    np.testing.assert_allclose(train("cuda", True), train("cpu", False), rtol=1e-10)


def test_nccl_collectives_match_numpy(mpi_job):
    mpi_job.check(ranks_nccl_collectives_match_numpy)


def test_ddp_on_the_gpu_equals_the_cpu(mpi_job):
    mpi_job.check(ranks_ddp_on_the_gpu_equals_the_cpu)
