"""DistributedDataParallel and SyncBatchNorm on 2 ranks against one process.

2 ranks with per-rank batch B/2 must end, after 20 steps, with the weights of 1 process
trained on batch B (float64, rtol 1e-10): with SGD-with-momentum and AdamW, with no_sync
gradient accumulation, with BatchNorm and broadcast_buffers (against one process that
replays what each rank does), and with SyncBatchNorm against BatchNorm on the full batch.
Every rank trains the one-process reference itself, from the same seeded data.
"""

from __future__ import annotations

import dlfree as dl
import dlfree.distributed as dist
import dlfree.functional as F
from dlfree import nn, optim

import numpy as np
import pytest

pytestmark = pytest.mark.mpi

STEPS, BATCH = 20, 8
RTOL = 1e-10


def _mlp(batch_norm: bool = False, seed: int = 0) -> nn.Module:
    dl.manual_seed(seed)
    layers = [nn.Linear(6, 10)] + ([nn.BatchNorm1d(10)] if batch_norm else []) + \
        [nn.Tanh(), nn.Linear(10, 8), nn.Tanh(), nn.Linear(8, 3)]
    return nn.Sequential(*layers).double()


def _data(steps: int = STEPS, batch: int = BATCH):
    rng = np.random.default_rng(42)
    return (dl.tensor(rng.standard_normal((steps, batch, 6))),
            dl.tensor(rng.integers(0, 3, (steps, batch))))


def _mine(batch: int = BATCH) -> slice:
    """This rank's half of a batch."""
    half = batch // dist.get_world_size()
    return slice(dist.get_rank() * half, (dist.get_rank() + 1) * half)


def _train(model, optimizer, X, Y, part=slice(None)) -> None:
    for s in range(len(X)):
        optimizer.zero_grad()
        F.cross_entropy(model(X[s][part]), Y[s][part]).backward()
        optimizer.step()


def _assert_same(actual: nn.Module, expected: nn.Module, what: str) -> None:
    mine, theirs = actual.state_dict(), expected.state_dict()
    assert list(mine) == list(theirs), what
    for name in mine:
        np.testing.assert_allclose(mine[name].numpy(), theirs[name].numpy(), rtol=RTOL,
                                   atol=1e-14, err_msg=f"{what}: {name}")


OPTIMIZERS = {"SGD with momentum": lambda p: optim.SGD(p, lr=0.1, momentum=0.9),
              "AdamW": lambda p: optim.AdamW(p, lr=0.01, weight_decay=0.1)}


def ranks_ddp_equals_one_process_with_the_whole_batch():
    X, Y = _data()
    for name, make in OPTIMIZERS.items():
        reference = _mlp()
        _train(reference, make(reference.parameters()), X, Y)
        # a small bucket cap: several buckets, each all-reduced on its own
        model = dist.DistributedDataParallel(_mlp(), bucket_cap_mb=0.0005)
        assert len(model.reducer.buckets) > 2
        _train(model, make(model.parameters()), X, Y, _mine())
        _assert_same(model.module, reference, name)


def ranks_no_sync_accumulates_and_the_next_backward_averages():
    X, Y = _data()
    reference = _mlp()
    ref_optimizer = optim.SGD(reference.parameters(), lr=0.1, momentum=0.9)
    model = dist.DistributedDataParallel(_mlp(), bucket_cap_mb=0.0005)
    optimizer = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    part = _mine()
    for s in range(0, STEPS, 2):  # two micro-batches per step
        ref_optimizer.zero_grad()
        optimizer.zero_grad()
        for micro in (s, s + 1):
            F.cross_entropy(reference(X[micro]), Y[micro]).backward()
        with model.no_sync():
            F.cross_entropy(model(X[s][part]), Y[s][part]).backward()
        local = [p.grad.numpy().copy() for p in model.parameters()]
        F.cross_entropy(model(X[s + 1][part]), Y[s + 1][part]).backward()
        ref_optimizer.step()
        optimizer.step()
    _assert_same(model.module, reference, "no_sync")
    # inside no_sync the gradients stayed this rank's own: they differ between the ranks
    gathered = [None] * dist.get_world_size()
    dist.all_gather_object(gathered, local[0])
    assert not np.allclose(gathered[0], gathered[1])


def ranks_batch_norm_with_broadcast_buffers_replays_rank_0():
    """Plain BatchNorm normalises each rank's half with that half's statistics, and every
    forward starts from rank 0's buffers: one process replays exactly that."""
    X, Y = _data()
    reference = _mlp(batch_norm=True)
    ref_optimizer = optim.SGD(reference.parameters(), lr=0.1, momentum=0.9)
    buffers = list(reference.buffers())
    halves = [slice(0, BATCH // 2), slice(BATCH // 2, BATCH)]
    for s in range(STEPS):
        ref_optimizer.zero_grad()
        start = [b.detach().clone() for b in buffers]
        after_rank_0 = None
        for h, part in enumerate(halves):
            with dl.no_grad():
                for b, value in zip(buffers, start):
                    b.copy_(value)
            (F.cross_entropy(reference(X[s][part]), Y[s][part]) / len(halves)).backward()
            if h == 0:
                after_rank_0 = [b.detach().clone() for b in buffers]
        with dl.no_grad():
            for b, value in zip(buffers, after_rank_0):
                b.copy_(value)
        ref_optimizer.step()
    model = dist.DistributedDataParallel(_mlp(batch_norm=True), broadcast_buffers=True)
    _train(model, optim.SGD(model.parameters(), lr=0.1, momentum=0.9), X, Y, _mine())
    for (name, p), (_, q) in zip(model.module.named_parameters(), reference.named_parameters()):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=RTOL, atol=1e-14,
                                   err_msg=name)
    model.eval()
    with dl.no_grad():
        model(X[0])  # the next forward starts from rank 0's buffers, on every rank
    _assert_same(model.module, reference, "BatchNorm + broadcast_buffers")


def ranks_sync_batch_norm_equals_batch_norm_on_the_whole_batch():
    X, Y = _data()
    reference = _mlp(batch_norm=True)
    _train(reference, optim.SGD(reference.parameters(), lr=0.1, momentum=0.9), X, Y)
    synced = nn.SyncBatchNorm.convert_sync_batchnorm(_mlp(batch_norm=True))
    assert isinstance(synced[1], nn.SyncBatchNorm)
    model = dist.DistributedDataParallel(synced)
    _train(model, optim.SGD(model.parameters(), lr=0.1, momentum=0.9), X, Y, _mine())
    _assert_same(model.module, reference, "SyncBatchNorm")  # running statistics included


def ranks_sync_batch_norm_forward_and_backward_on_3d_input():
    rng = np.random.default_rng(3)
    x_all = rng.standard_normal((8, 3, 5))
    w_all = rng.standard_normal((8, 3, 5))
    full, x = nn.BatchNorm1d(3).double(), dl.tensor(x_all, requires_grad=True)
    out = full(x)
    (out * dl.tensor(w_all)).sum().backward()
    sync = nn.SyncBatchNorm(3).double()
    part = _mine()
    mine = dl.tensor(x_all[part], requires_grad=True)
    mine_out = sync(mine)
    (mine_out * dl.tensor(w_all[part])).sum().backward()
    np.testing.assert_allclose(mine_out.detach().numpy(), out.detach().numpy()[part], rtol=RTOL)
    np.testing.assert_allclose(mine.grad.numpy(), x.grad.numpy()[part], rtol=1e-9, atol=1e-13)
    for name in ("weight", "bias"):  # each rank holds its part; their sum is the whole
        grad = getattr(sync, name).grad
        dist.all_reduce(grad)
        np.testing.assert_allclose(grad.numpy(), getattr(full, name).grad.numpy(), rtol=RTOL)
    for name in ("running_mean", "running_var"):
        np.testing.assert_allclose(getattr(sync, name).numpy(), getattr(full, name).numpy(),
                                   rtol=RTOL)


def ranks_the_first_bucket_is_reduced_while_backward_goes_on():
    """Hook order, not timing: the last layer's bucket starts its all-reduce before
    backward reaches the first layer."""
    dl.manual_seed(0)
    layers = [nn.Linear(16, 16) for _ in range(4)]
    model = dist.DistributedDataParallel(nn.Sequential(*layers).double(),
                                         bucket_cap_mb=16 * 17 * 8 / 2**20)
    reducer = model.reducer
    assert len(reducer.buckets) == 4
    last = {id(layers[-1].weight), id(layers[-1].bias)}
    assert {id(reducer.params[i]) for i in reducer.buckets[0].members} == last
    events = []
    engine = reducer.group.mpi
    start_all_reduce = engine.all_reduce

    def recording(array, op):
        bucket = next(b.index for b in reducer.buckets if b.flat is array)
        events.append(f"all_reduce bucket {bucket}")
        return start_all_reduce(array, op)

    engine.all_reduce = recording

    def mark_first_layer(module, args, out):
        out.register_hook(lambda g: events.append("first layer"))

    layers[0].register_forward_hook(mark_first_layer)
    x = dl.randn(4, 16, dtype=dl.float64, requires_grad=True)
    x.register_hook(lambda g: events.append("input"))
    model(x).sum().backward()
    assert events.index("all_reduce bucket 0") < events.index("first layer") < \
        events.index("input"), events
    assert [e for e in events if e.startswith("all_reduce")] == \
        [f"all_reduce bucket {b}" for b in range(4)]


class _WithUnused(nn.Module):
    def __init__(self):
        super().__init__()
        self.used = nn.Linear(6, 3)
        self.unused = nn.Linear(6, 3)

    def forward(self, x):
        return self.used(x)


def ranks_a_parameter_without_gradient_is_an_error_naming_it():
    X, Y = _data(steps=4)
    dl.manual_seed(0)
    model = dist.DistributedDataParallel(_WithUnused().double())
    model(X[0])  # a forward without backward (an evaluation with grad enabled) is no error
    F.cross_entropy(model(X[0]), Y[0]).backward()
    with pytest.raises(dist.DistributedError, match="no gradient to unused.weight, unused.bias"):
        model(X[1])
    # with find_unused_parameters it trains, and the parameters no rank used keep no grad
    dl.manual_seed(0)
    reference = _WithUnused().double()
    _train(reference, optim.SGD(reference.parameters(), lr=0.1), X, Y)
    dl.manual_seed(0)
    model = dist.DistributedDataParallel(_WithUnused().double(), find_unused_parameters=True)
    _train(model, optim.SGD(model.parameters(), lr=0.1), X, Y, _mine())
    _assert_same(model.module, reference, "find_unused_parameters")
    assert model.module.unused.weight.grad is None


def ranks_construction_state_dict_and_bucket_views():
    X, Y = _data(steps=1)
    rank = dist.get_rank()
    model = dist.DistributedDataParallel(_mlp(seed=rank))  # rank 0's weights win
    _assert_same(model.module, _mlp(seed=0), "broadcast at construction")
    assert dist.DistributedDataParallel is nn.parallel.DistributedDataParallel
    assert list(model.state_dict()) == ["module." + k for k in model.module.state_dict()]
    model.load_state_dict(model.state_dict())
    F.cross_entropy(model(X[0][_mine()]), Y[0][_mine()]).backward()
    flats = [b.flat for b in model.reducer.buckets]
    for p in model.parameters():
        assert any(np.shares_memory(p.grad.numpy(), flat) for flat in flats)
    copied = dist.DistributedDataParallel(_mlp(), gradient_as_bucket_view=False)
    F.cross_entropy(copied(X[0][_mine()]), Y[0][_mine()]).backward()
    for p, q in zip(copied.parameters(), model.parameters()):
        assert not any(np.shares_memory(p.grad.numpy(), b.flat) for b in copied.reducer.buckets)
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=RTOL)
    with pytest.raises(dist.DistributedError, match="rank 1 has a different model than rank 0"):
        dist.DistributedDataParallel(_mlp() if rank == 0 else nn.Linear(6, 3).double())


def test_ddp_equals_one_process_with_the_whole_batch(mpi_job):
    mpi_job.check(ranks_ddp_equals_one_process_with_the_whole_batch)


def test_no_sync_accumulates_and_the_next_backward_averages(mpi_job):
    mpi_job.check(ranks_no_sync_accumulates_and_the_next_backward_averages)


def test_batch_norm_with_broadcast_buffers_replays_rank_0(mpi_job):
    mpi_job.check(ranks_batch_norm_with_broadcast_buffers_replays_rank_0)


def test_sync_batch_norm_equals_batch_norm_on_the_whole_batch(mpi_job):
    mpi_job.check(ranks_sync_batch_norm_equals_batch_norm_on_the_whole_batch)


def test_sync_batch_norm_forward_and_backward_on_3d_input(mpi_job):
    mpi_job.check(ranks_sync_batch_norm_forward_and_backward_on_3d_input)


def test_the_first_bucket_is_reduced_while_backward_goes_on(mpi_job):
    mpi_job.check(ranks_the_first_bucket_is_reduced_while_backward_goes_on)


def test_a_parameter_without_gradient_is_an_error_naming_it(mpi_job):
    mpi_job.check(ranks_a_parameter_without_gradient_is_an_error_naming_it)


def test_construction_state_dict_and_bucket_views(mpi_job):
    mpi_job.check(ranks_construction_state_dict_and_bucket_views)
