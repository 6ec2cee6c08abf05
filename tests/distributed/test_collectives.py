"""Every collective against the same reduction done by hand with NumPy, on 2 and 3 ranks:
per dtype (float16/32/64, int32/64), blocking and async, in place and into outputs, on
contiguous tensors and on views. Each rank builds every rank's input from the rank's
seed, so it can compute the expected result alone. Tolerances: float16 rtol 2e-3,
float32 1e-6, float64 1e-12, integers exact."""

from __future__ import annotations

import gc
import weakref

import dlfree as dl
import dlfree.distributed as dist
from dlfree import nn

import numpy as np
import pytest

pytestmark = pytest.mark.mpi
WORLD_SIZES = (2, 3)

DTYPES = (np.float16, np.float32, np.float64, np.int32, np.int64)
RTOL = {np.float16: 2e-3, np.float32: 1e-6, np.float64: 1e-12, np.int32: 0, np.int64: 0}
SHAPE = (3, 4)
OPS = tuple(dist.ReduceOp)


def _input(rank: int, dtype, shape=SHAPE, salt: int = 0) -> np.ndarray:
    """Rank `rank`'s input: near 1 for floats (products stay tame), small ints otherwise."""
    rng = np.random.default_rng(1000 * salt + rank)
    if np.dtype(dtype).kind == "f":
        return rng.uniform(0.5, 1.5, shape).astype(dtype)
    return rng.integers(-5, 6, shape).astype(dtype)


def _reduced(arrays: list, op) -> np.ndarray:
    stacked = np.stack(arrays).astype(np.float64 if arrays[0].dtype.kind == "f" else np.int64)
    if op is dist.ReduceOp.SUM:
        out = stacked.sum(0)
    elif op is dist.ReduceOp.PRODUCT:
        out = stacked.prod(0)
    elif op is dist.ReduceOp.MIN:
        out = stacked.min(0)
    elif op is dist.ReduceOp.MAX:
        out = stacked.max(0)
    elif arrays[0].dtype.kind == "f":
        out = stacked.sum(0) / len(arrays)
    else:  # AVG on integers truncates toward zero
        total = stacked.sum(0)
        out = np.sign(total) * (np.abs(total) // len(arrays))
    return out.astype(arrays[0].dtype)


def _close(actual, expected, dtype, what: str) -> None:
    actual = actual.numpy() if isinstance(actual, dl.Tensor) else actual
    assert actual.dtype == np.dtype(dtype), (what, actual.dtype)
    np.testing.assert_allclose(actual.astype(np.float64), expected.astype(np.float64),
                               rtol=RTOL[dtype], atol=0, err_msg=what)


def _finish(work, async_op: bool) -> None:
    if async_op:
        assert isinstance(work, dist.Work)
        work.wait()
        assert work.is_completed()
    else:
        assert work is None


def ranks_all_reduce():
    rank, size = dist.get_rank(), dist.get_world_size()
    for dtype in DTYPES:
        inputs = [_input(r, dtype) for r in range(size)]
        for op in OPS:
            for async_op in (False, True):
                t = dl.tensor(inputs[rank])
                version = t._vc[0]
                _finish(dist.all_reduce(t, op=op, async_op=async_op), async_op)
                _close(t, _reduced(inputs, op), dtype, f"all_reduce {op} {dtype} {async_op}")
                assert t._vc[0] == version + 1  # written in place
        # an async collective keeps the memory it works on alive, even a temporary's
        pending = dl.tensor(inputs[rank]) * 1
        alive = weakref.ref(pending._data)
        work = dist.all_reduce(pending, async_op=True)
        del pending
        gc.collect()
        assert alive() is not None
        work.wait()
        # a non-contiguous view: reduced through a staging copy, written back into the view
        base = dl.tensor(np.zeros((4, 3), dtype=dtype))
        view = base.transpose(0, 1)
        view.copy_(dl.tensor(inputs[rank]))
        dist.all_reduce(view, op=dist.ReduceOp.MAX)
        _close(base.numpy().T, _reduced(inputs, dist.ReduceOp.MAX), dtype, "view")


def ranks_float16_through_float32_where_mpi_has_no_float16():
    """MPICH has a float16 datatype; a library without one gets float16 reduced in float32."""
    rank, size = dist.get_rank(), dist.get_world_size()
    engine = dist.group.STATE.world.mpi
    assert engine.float16
    engine.float16 = False
    inputs = [_input(r, np.float16) for r in range(size)]
    for op in OPS:
        t = dl.tensor(inputs[rank])
        dist.all_reduce(t, op=op)
        _close(t, _reduced(inputs, op), np.float16, f"float16 staged, {op}")
    out = dl.tensor(np.zeros((size,) + SHAPE, dtype=np.float16))
    dist.all_gather_into_tensor(out, dl.tensor(inputs[rank]))
    _close(out, np.stack(inputs), np.float16, "all_gather staged")


def ranks_broadcast():
    rank, size = dist.get_rank(), dist.get_world_size()
    for dtype in DTYPES:
        for src in range(size):
            for async_op in (False, True):
                t = dl.tensor(_input(rank, dtype))
                _finish(dist.broadcast(t, src, async_op=async_op), async_op)
                _close(t, _input(src, dtype), dtype, f"broadcast from {src}")


def ranks_reduce():
    rank, size = dist.get_rank(), dist.get_world_size()
    for dtype in DTYPES:
        inputs = [_input(r, dtype) for r in range(size)]
        for op in (dist.ReduceOp.SUM, dist.ReduceOp.MIN, dist.ReduceOp.AVG):
            dst = size - 1
            for async_op in (False, True):
                t = dl.tensor(inputs[rank])
                _finish(dist.reduce(t, dst, op=op, async_op=async_op), async_op)
                expected = _reduced(inputs, op) if rank == dst else inputs[rank]
                _close(t, expected, dtype, f"reduce {op} to {dst}")


def ranks_all_gather():
    rank, size = dist.get_rank(), dist.get_world_size()
    for dtype in DTYPES:
        inputs = [_input(r, dtype) for r in range(size)]
        for async_op in (False, True):
            outputs = [dl.tensor(np.zeros(SHAPE, dtype=dtype)) for _ in range(size)]
            _finish(dist.all_gather(outputs, dl.tensor(inputs[rank]), async_op=async_op),
                    async_op)
            for r in range(size):
                _close(outputs[r], inputs[r], dtype, f"all_gather part {r}")
            for shape in ((size * SHAPE[0], SHAPE[1]), (size,) + SHAPE):
                out = dl.tensor(np.zeros(shape, dtype=dtype))
                _finish(dist.all_gather_into_tensor(out, dl.tensor(inputs[rank]),
                                                    async_op=async_op), async_op)
                _close(out, np.concatenate(inputs).reshape(shape), dtype, f"into {shape}")
        # in place: the input is this rank's part of the output
        out = dl.tensor(np.zeros((size,) + SHAPE, dtype=dtype))
        mine = out[rank]
        mine.copy_(dl.tensor(inputs[rank]))
        dist.all_gather_into_tensor(out, mine)
        _close(out, np.stack(inputs), dtype, "all_gather_into_tensor in place")


def ranks_reduce_scatter():
    rank, size = dist.get_rank(), dist.get_world_size()
    for dtype in DTYPES:
        chunks = [[_input(r, dtype, salt=c + 1) for c in range(size)] for r in range(size)]
        for op in (dist.ReduceOp.SUM, dist.ReduceOp.PRODUCT, dist.ReduceOp.AVG):
            expected = _reduced([chunks[r][rank] for r in range(size)], op)
            for async_op in (False, True):
                out = dl.tensor(np.zeros(SHAPE, dtype=dtype))
                work = dist.reduce_scatter(out, [dl.tensor(c) for c in chunks[rank]], op=op,
                                           async_op=async_op)
                _finish(work, async_op)
                _close(out, expected, dtype, f"reduce_scatter {op}")
                out = dl.tensor(np.zeros(SHAPE, dtype=dtype))
                whole = dl.tensor(np.concatenate(chunks[rank]))
                _finish(dist.reduce_scatter_tensor(out, whole, op=op, async_op=async_op),
                        async_op)
                _close(out, expected, dtype, f"reduce_scatter_tensor {op}")


def ranks_gather_and_scatter():
    rank, size = dist.get_rank(), dist.get_world_size()
    root = size - 1
    for dtype in DTYPES:
        inputs = [_input(r, dtype) for r in range(size)]
        for async_op in (False, True):
            parts = [dl.tensor(np.zeros(SHAPE, dtype=dtype)) for _ in range(size)] \
                if rank == root else None
            _finish(dist.gather(dl.tensor(inputs[rank]), parts, dst=root, async_op=async_op),
                    async_op)
            if rank == root:
                for r in range(size):
                    _close(parts[r], inputs[r], dtype, f"gather part {r}")
            out = dl.tensor(np.zeros(SHAPE, dtype=dtype))
            pieces = [dl.tensor(_input(r, dtype, salt=7)) for r in range(size)] \
                if rank == root else None
            _finish(dist.scatter(out, pieces, src=root, async_op=async_op), async_op)
            _close(out, _input(rank, dtype, salt=7), dtype, "scatter")


def ranks_all_to_all_with_uneven_sizes():
    rank, size = dist.get_rank(), dist.get_world_size()

    def part(sender, receiver, dtype):  # what `sender` sends `receiver`: sizes vary by pair
        return _input(sender, dtype, shape=(sender + receiver + 1,), salt=receiver + 3)

    for dtype in DTYPES:
        for async_op in (False, True):
            inputs = [dl.tensor(part(rank, j, dtype)) for j in range(size)]
            outputs = [dl.tensor(np.zeros(j + rank + 1, dtype=dtype)) for j in range(size)]
            _finish(dist.all_to_all(outputs, inputs, async_op=async_op), async_op)
            for j in range(size):
                _close(outputs[j], part(j, rank, dtype), dtype, f"all_to_all from {j}")


def ranks_send_and_recv():
    rank, size = dist.get_rank(), dist.get_world_size()
    right, left = (rank + 1) % size, (rank - 1) % size
    for dtype in DTYPES:
        out = dl.tensor(np.zeros(SHAPE, dtype=dtype))
        sending = dist.isend(dl.tensor(_input(rank, dtype)), right, tag=3)
        receiving = dist.irecv(out, src=left, tag=3)
        sending.wait()
        receiving.wait()
        assert receiving.source_rank == left
        _close(out, _input(left, dtype), dtype, "ring")
    # blocking, from any rank: rank 0 collects one message from every other rank
    if rank == 0:
        senders = set()
        for _ in range(size - 1):
            out = dl.zeros(2, dtype=dl.float64)
            sender = dist.recv(out)
            senders.add(sender)
            np.testing.assert_array_equal(out.numpy(), [sender, -sender])
        assert senders == set(range(1, size))
    else:
        dist.send(dl.tensor([float(rank), -float(rank)], dtype=dl.float64), 0)


def ranks_objects():
    rank, size = dist.get_rank(), dist.get_world_size()
    items = [{"seed": 7}, "text", 3] if rank == 1 else [None, None, None]
    dist.broadcast_object_list(items, src=1)
    assert items == [{"seed": 7}, "text", 3]
    gathered = [None] * size
    dist.all_gather_object(gathered, ("rank", rank))
    assert gathered == [("rank", r) for r in range(size)]


def ranks_disagreeing_ranks_are_an_error_naming_them():
    rank, size = dist.get_rank(), dist.get_world_size()
    dtype = dl.float32 if rank == 0 else dl.float64
    with pytest.raises(dist.DistributedError, match=r"rank 0: all_reduce, float32 \(3,\) on "
                                                    r"cpu.*: all_reduce, float64 \(3,\) on cpu"):
        dist.all_reduce(dl.zeros(3, dtype=dtype))
    with pytest.raises(dist.DistributedError, match=r"rank 0: all_reduce, float64 \(2, 3\)"):
        dist.all_reduce(dl.zeros((2, 3) if rank == 0 else (3, 2), dtype=dl.float64))
    with pytest.raises(dist.DistributedError, match="rank 0: broadcast.*all_reduce"):
        if rank == 0:
            dist.broadcast(dl.zeros(3), 0)
        else:
            dist.all_reduce(dl.zeros(3))
    with pytest.raises(dist.DistributedError, match="op MAX.*op SUM|op SUM.*op MAX"):
        dist.all_reduce(dl.zeros(3), op=dist.ReduceOp.MAX if rank == 0 else dist.ReduceOp.SUM)
    # a recv whose tensor does not match what was sent names the sender
    if rank == 0:
        dist.send(dl.zeros(4, dtype=dl.float64), 1)
    elif rank == 1:
        with pytest.raises(dist.DistributedError, match=r"rank 0 sent float64 \(4,\) on cpu, "
                                                        r"but the receiving tensor is float32"):
            dist.recv(dl.zeros(4, dtype=dl.float32), 0)
    dist.barrier()  # nothing is left pending: the collectives after this still work
    t = dl.ones(2)
    dist.all_reduce(t)
    np.testing.assert_array_equal(t.numpy(), [size, size])


def ranks_a_wait_that_times_out_raises():
    rank = dist.get_rank()
    if rank == 0:
        pending = dist.irecv(dl.zeros(1), src=1, tag=9)
        with pytest.raises(dist.DistributedError, match="did not complete within 0.2 s"):
            pending.wait(timeout=0.2)
        dist.barrier()
        pending.wait()  # rank 1 sends after the barrier
    else:
        dist.barrier()
        if rank == 1:
            dist.send(dl.ones(1), 0, tag=9)
    dist.barrier()


def ranks_groups_and_the_default_group():
    rank, size = dist.get_rank(), dist.get_world_size()
    assert dist.is_initialized() and dist.get_backend() == "mpi"
    dist.destroy_process_group()
    assert not dist.is_initialized()
    with pytest.raises(dist.DistributedError, match=r"world_size=99 was passed but MPI "
                                                    f"started this process as world_size {size}"):
        dist.init_process_group(world_size=99)
    dist.init_process_group(None)  # no GPU here: MPI
    assert dist.get_backend() == "mpi" and (dist.get_rank(), dist.get_world_size()) == \
        (rank, size)
    with pytest.raises(dist.DistributedError, match="already initialized"):
        dist.init_process_group("mpi")
    pair = dist.new_group([0, 1])
    assert pair.ranks == [0, 1] and dist.get_world_size(pair) == 2
    t = dl.tensor([float(rank)])
    if rank in (0, 1):
        assert dist.get_rank(pair) == rank
        dist.all_reduce(t, group=pair)
        assert t.item() == 1.0
        dist.broadcast(t, 1, group=pair)
    else:
        assert dist.get_rank(pair) == -1
        with pytest.warns(UserWarning, match="not a member"):
            assert dist.all_reduce(t, group=pair) is None
    # training wrappers work inside a group, and refuse a process outside it
    dl.manual_seed(rank)
    layer = nn.Linear(3, 1, bias=False).double()
    if rank in (0, 1):
        model = dist.DistributedDataParallel(layer, process_group=pair)
        model(dl.ones(1, 3, dtype=dl.float64) * (rank + 1)).sum().backward()
        np.testing.assert_allclose(layer.weight.grad.numpy(), [[1.5, 1.5, 1.5]])
    else:
        with pytest.raises(dist.DistributedError, match="not a member of ProcessGroup"):
            dist.DistributedDataParallel(layer, process_group=pair)
    with pytest.raises(dist.DistributedError, match="different rank lists"):
        dist.new_group([0] if rank == 0 else [0, 1])
    # the sampler takes its share from the default group
    sampler = dl.data.DistributedSampler(range(10), shuffle=False)
    assert (sampler.num_replicas, sampler.rank) == (size, rank)
    padded = (list(range(10)) * 2)[:sampler.total_size]
    assert list(sampler) == padded[rank::size]


def test_all_reduce(mpi_job):
    mpi_job.check(ranks_all_reduce)


def test_float16_through_float32_where_mpi_has_no_float16(mpi_job):
    mpi_job.check(ranks_float16_through_float32_where_mpi_has_no_float16)


def test_broadcast(mpi_job):
    mpi_job.check(ranks_broadcast)


def test_reduce(mpi_job):
    mpi_job.check(ranks_reduce)


def test_all_gather(mpi_job):
    mpi_job.check(ranks_all_gather)


def test_reduce_scatter(mpi_job):
    mpi_job.check(ranks_reduce_scatter)


def test_gather_and_scatter(mpi_job):
    mpi_job.check(ranks_gather_and_scatter)


def test_all_to_all_with_uneven_sizes(mpi_job):
    mpi_job.check(ranks_all_to_all_with_uneven_sizes)


def test_send_and_recv(mpi_job):
    mpi_job.check(ranks_send_and_recv)


def test_objects(mpi_job):
    mpi_job.check(ranks_objects)


def test_disagreeing_ranks_are_an_error_naming_them(mpi_job):
    mpi_job.check(ranks_disagreeing_ranks_are_an_error_naming_them)


def test_a_wait_that_times_out_raises(mpi_job):
    mpi_job.check(ranks_a_wait_that_times_out_raises)


def test_groups_and_the_default_group(mpi_job):
    mpi_job.check(ranks_groups_and_the_default_group)
