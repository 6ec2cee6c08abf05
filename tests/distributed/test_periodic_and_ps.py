"""PeriodicAveraging (Local SGD) on 2 ranks and the ParameterServer on 3.

Periodic averaging with period 1 must equal DistributedDataParallel (SGD with momentum,
float64, rtol 1e-10); with a longer period the ranks agree right after each averaging
step and drift apart between them. The parameter server with staleness 0 and one worker
(two servers, so the shards really are split) equals plain training step for step; with
two workers and staleness 2 it drives a consistent least-squares problem to its minimum
and never lets a worker run more than 2 steps ahead of the slowest.
"""

from __future__ import annotations

import dlfree as dl
import dlfree.distributed as dist
import dlfree.functional as F
from dlfree import nn, optim
from dlfree.distributed.parameter_server import shard_by_size

import numpy as np
import pytest

pytestmark = pytest.mark.mpi
WORLD_SIZES = (2, 3)
STEPS, BATCH = 12, 8


def _mlp(seed: int = 0) -> nn.Module:
    dl.manual_seed(seed)
    return nn.Sequential(nn.Linear(6, 10), nn.Tanh(), nn.Linear(10, 3)).double()


def _data(steps: int = STEPS, batch: int = BATCH):
    rng = np.random.default_rng(7)
    return (dl.tensor(rng.standard_normal((steps, batch, 6))),
            dl.tensor(rng.integers(0, 3, (steps, batch))))


def _sgd(params):
    return optim.SGD(params, lr=0.1, momentum=0.9)


def _flat(model) -> np.ndarray:
    return np.concatenate([p.detach().numpy().ravel() for p in model.parameters()])


def ranks_periodic_averaging_with_period_1_equals_ddp():
    if dist.get_world_size() != 2:
        return
    X, Y = _data()
    half = slice(dist.get_rank() * 4, dist.get_rank() * 4 + 4)
    ddp = dist.DistributedDataParallel(_mlp())
    ddp_optimizer = _sgd(ddp.parameters())
    local = _mlp(seed=dist.get_rank())  # rank 0's weights are taken at construction
    averaging = dist.PeriodicAveraging(local, period=1)
    optimizer = _sgd(local.parameters())
    for s in range(STEPS):
        for model, opt in ((ddp, ddp_optimizer), (local, optimizer)):
            opt.zero_grad()
            F.cross_entropy(model(X[s][half]), Y[s][half]).backward()
            opt.step()
        assert averaging.step()
    np.testing.assert_allclose(_flat(local), _flat(ddp.module), rtol=1e-10, atol=1e-14)


def ranks_periodic_averaging_every_3_steps_after_2_warmup_steps():
    if dist.get_world_size() != 2:
        return
    X, Y = _data()
    half = slice(dist.get_rank() * 4, dist.get_rank() * 4 + 4)
    model = _mlp()
    averaging = dist.PeriodicAveraging(model, period=3, warmup_steps=2)
    optimizer = _sgd(model.parameters())
    averaged = []
    for s in range(STEPS):
        optimizer.zero_grad()
        F.cross_entropy(model(X[s][half]), Y[s][half]).backward()
        optimizer.step()
        averaged.append(averaging.step())
        both = [None, None]
        dist.all_gather_object(both, _flat(model))
        assert np.array_equal(both[0], both[1]) == averaged[-1], (s, averaged)
    assert [i + 1 for i, a in enumerate(averaged) if a] == [1, 2, 5, 8, 11]
    assert averaging.state_dict() == {"steps": STEPS}


def ranks_parameter_server_synchronous_one_worker_equals_plain_training():
    if dist.get_world_size() != 3:
        return
    X, Y = _data()
    reference = _mlp()
    ref_optimizer = _sgd(reference.parameters())
    model = _mlp(seed=dist.get_rank())
    ps = dist.ParameterServer(model, _sgd, servers=2, max_staleness=0)
    sizes = [p.numel() for p in model.parameters()]
    assert ps.shards == shard_by_size(sizes, 2) and all(ps.shards)
    assert ps.is_server == (dist.get_rank() < 2)
    trajectory = []
    for s in range(STEPS):
        ref_optimizer.zero_grad()
        F.cross_entropy(reference(X[s]), Y[s]).backward()
        ref_optimizer.step()
        trajectory.append(_flat(reference))
    if ps.is_server:
        ps.serve()
    else:
        for s in range(STEPS):
            model.zero_grad()
            F.cross_entropy(model(X[s]), Y[s]).backward()
            ps.step()
            np.testing.assert_allclose(_flat(model), trajectory[s], rtol=1e-12, atol=1e-15,
                                       err_msg=f"step {s}")
        ps.close()
    np.testing.assert_allclose(_flat(model), trajectory[-1], rtol=1e-12, atol=1e-15)


def ranks_parameter_server_with_staleness_2_reaches_the_minimum():
    if dist.get_world_size() != 3:
        return
    rng = np.random.default_rng(11)
    w_star = rng.standard_normal((1, 5))
    A = rng.standard_normal((60, 5))
    y = A @ w_star.T  # consistent: every worker's half has the same minimiser
    dl.manual_seed(0)
    model = nn.Linear(5, 1, bias=False).double()
    ps = dist.ParameterServer(model, lambda params: optim.SGD(params, lr=0.04), servers=1,
                              max_staleness=2)
    if ps.is_server:
        ps.serve()
        assert ps.max_staleness_seen <= 2
    else:
        part = slice((dist.get_rank() - 1) * 30, dist.get_rank() * 30)
        x, target = dl.tensor(A[part]), dl.tensor(y[part])
        for _ in range(400):
            model.zero_grad()
            F.mse_loss(model(x), target).backward()
            ps.step()
        ps.close()
    np.testing.assert_allclose(model.weight.detach().numpy(), w_star, atol=1e-5)


def test_periodic_averaging_with_period_1_equals_ddp(mpi_job):
    mpi_job.check(ranks_periodic_averaging_with_period_1_equals_ddp)


def test_periodic_averaging_every_3_steps_after_2_warmup_steps(mpi_job):
    mpi_job.check(ranks_periodic_averaging_every_3_steps_after_2_warmup_steps)


def test_parameter_server_synchronous_one_worker_equals_plain_training(mpi_job):
    mpi_job.check(ranks_parameter_server_synchronous_one_worker_equals_plain_training)


def test_parameter_server_with_staleness_2_reaches_the_minimum(mpi_job):
    mpi_job.check(ranks_parameter_server_with_staleness_2_reaches_the_minimum)
