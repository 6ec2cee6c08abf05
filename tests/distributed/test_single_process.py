"""The parts of dlfree.distributed that need no MPI job: the lazy import, the errors before
init_process_group, the reductions' arithmetic, the bucket and shard plans, the mismatch
message, what the command line reports, what DDP wraps, and SyncBatchNorm outside a
process group."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import dlfree as dl
import dlfree.distributed as dist
from dlfree import cli, nn
from dlfree.distributed import agreement
from dlfree.distributed.info import engine_info, engine_lines
from dlfree.distributed.parameter_server import shard_by_size
from dlfree.distributed.reduce_op import as_reduce_op, divide_by_ranks
from dlfree.distributed.reducer import bucket_members

import numpy as np
import pytest


def test_import_dlfree_imports_no_mpi4py():
    code = ("import sys, dlfree, dlfree.distributed, dlfree.nn\n"
            "assert dlfree.distributed.is_available()\n"
            "assert not dlfree.distributed.is_initialized()\n"
            "print(sorted(m for m in sys.modules if m.startswith(('mpi4py', 'cupy'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"


def test_calls_before_init_process_group_say_so():
    for call in (dist.get_rank, dist.get_world_size, dist.barrier,
                 lambda: dist.all_reduce(dl.ones(2))):
        with pytest.raises(dist.DistributedError, match="call dlfree.distributed"
                                                        r".init_process_group\(\) first"):
            call()
    with pytest.raises(ValueError, match="backend must be one of"):
        dist.init_process_group("gloo")


def test_reduce_ops_and_integer_averages():
    assert as_reduce_op("avg", "x") is dist.ReduceOp.AVG
    with pytest.raises(ValueError, match="SUM, AVG, PRODUCT, MIN, MAX"):
        as_reduce_op("mean", "all_reduce")
    ints = np.array([-7, 7, -1, 1, 6])
    divide_by_ranks(ints, 2, np)
    np.testing.assert_array_equal(ints, [-3, 3, 0, 0, 3])  # toward zero, as NCCL's ncclAvg
    floats = np.array([-7.0, 1.0], dtype=np.float16)
    divide_by_ranks(floats, 2, np)
    np.testing.assert_array_equal(floats, [-3.5, 0.5])


def test_a_mismatch_names_each_rank_and_what_it_passed():
    rows = np.stack([agreement.describe("all_reduce", np.zeros((2, 3), np.float32), "cpu",
                                        dist.ReduceOp.SUM),
                     agreement.describe("all_reduce", np.zeros((2, 3), np.float32), "cuda",
                                        dist.ReduceOp.SUM),
                     agreement.describe("broadcast", np.zeros(4, np.int64), "cpu", root=0)])
    message = agreement.mismatch_message("all_reduce", rows, [0, 2, 5])
    assert "rank 0: all_reduce, float32 (2, 3) on cpu, op SUM" in message
    assert "rank 2: all_reduce, float32 (2, 3) on cuda, op SUM" in message
    assert "rank 5: broadcast, int64 (4,) on cpu, root 0" in message
    same = agreement.mismatch_message("barrier", np.stack([rows[0], rows[0], rows[2]]), [0, 1, 2])
    assert same.startswith("barrier: the ranks disagree on the call: ranks 0, 1: all_reduce")
    long = agreement.describe("all_reduce", np.zeros((1,) * 12, np.float64))
    assert agreement.tensor_text(long).startswith("float64 (1, 1, 1, 1, 1, 1, 1, 1, ...)")


def test_buckets_take_parameters_in_reverse_order_up_to_the_cap():
    params = [dl.Parameter(dl.zeros(n, dtype=dtype)) for n, dtype in
              ((1000, dl.float64), (10, dl.float64), (100, dl.float64), (100, dl.float32),
               (50, dl.float32))]
    mb = 1024 * 1024
    # bytes: 8000, 80, 800, 400, 200. Reverse order; a new bucket when the dtype changes or
    # the cap would be passed (the first bucket's cap is smaller); a larger parameter alone
    assert bucket_members(params, cap_mb=900 / mb, first_cap_mb=500 / mb) == \
        [[4], [3], [2, 1], [0]]
    assert bucket_members(params, cap_mb=900 / mb, first_cap_mb=600 / mb) == \
        [[4, 3], [2, 1], [0]]
    assert bucket_members(params, 25, 1) == [[4, 3], [2, 1, 0]]


def test_shards_balance_the_numbers_each_server_holds():
    sizes = [100, 7, 60, 50, 10, 5, 45]
    shards = shard_by_size(sizes, 3)
    assert sorted(i for shard in shards for i in shard) == list(range(len(sizes)))
    assert all(shard == sorted(shard) for shard in shards)
    # largest first, each to the least loaded server: 100 | 60 7 10 5 | 50 45
    assert shards == [[0], [1, 2, 4, 5], [3, 6]]
    loads = [sum(sizes[i] for i in shard) for shard in shards]
    assert max(loads) - min(loads) <= max(sizes)
    assert shard_by_size([3, 3], 3) == [[0], [1], []]


def test_the_command_line_reports_the_engines(capsys):
    info = engine_info()
    assert info["mpi4py"][0].isdigit() and info["mpi_library"].startswith("MPICH")
    assert info["mpi_cuda_aware"] in (True, False, None)
    assert cli.main(["env"]) == 0
    out = capsys.readouterr().out
    assert "distributed:\n  mpi: MPICH " in out and "CUDA-aware: " in out
    assert "\n  nccl: " in out
    assert cli.main(["plugins"]) == 0
    assert "distributed:\n  mpi: MPICH " in capsys.readouterr().out
    missing = engine_lines({"mpi4py": None, "mpi_library": None, "mpi_standard": None,
                            "mpi_cuda_aware": None, "nccl": None})
    assert missing == ["distributed:", "  mpi: not installed (pip install 'dlfree[mpi]')",
                       "  nccl: not installed (comes with CuPy: pip install 'dlfree[cuda12]')"]
    found = engine_lines({"mpi4py": "4.1.2", "mpi_library": "Open MPI v5.0.3",
                          "mpi_standard": "3.1", "mpi_cuda_aware": True, "nccl": "2.21.5"})
    assert found[1:] == ["  mpi: Open MPI v5.0.3 (MPI 3.1, mpi4py 4.1.2), CUDA-aware: yes",
                         "  nccl: 2.21.5"]


def test_ddp_is_in_the_core_and_wraps_anything_shaped_like_a_module():
    """DDP needs no dlfree-nn (which re-exports it); what it wraps must offer parameters,
    buffers and a call."""
    assert dist.DistributedDataParallel is nn.parallel.DistributedDataParallel
    with pytest.raises(TypeError, match="lacks named_parameters, named_buffers, __call__"):
        dist.DistributedDataParallel(object())
    with pytest.raises(AttributeError, match="has no attribute 'Nope'"):
        dist.Nope  # noqa: B018


def test_sync_batch_norm_outside_a_process_group_is_batch_norm(tmp_path):
    rng = np.random.default_rng(0)
    x = dl.tensor(rng.standard_normal((6, 3, 4)))
    sync, plain = nn.SyncBatchNorm(3).double(), nn.BatchNorm1d(3).double()
    np.testing.assert_allclose(sync(x).detach().numpy(), plain(x).detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(sync.running_var.numpy(), plain.running_var.numpy(), rtol=1e-12)
    model = nn.Sequential(nn.Linear(4, 3), nn.BatchNorm1d(3))
    weight = model[1].weight
    converted = nn.SyncBatchNorm.convert_sync_batchnorm(model)
    assert converted is model and isinstance(model[1], nn.SyncBatchNorm)
    assert model[1].weight is weight  # the same parameters (an optimizer holding them works)
    assert "process_group" not in model[1].get_config()
    dl.save(model, tmp_path / "model.safetensors")
    assert isinstance(dl.load(tmp_path / "model.safetensors")[1], nn.SyncBatchNorm)
    with pytest.raises(ValueError, match="period must be an integer >= 1"):
        dist.PeriodicAveraging(model, period=0)


def test_every_mpi_test_is_where_make_test_runs_them():
    """`make test` runs the `mpi` tests in a second pass over MPI_TESTS only (collecting the
    whole suite again would cost more than they take): an `mpi` test elsewhere would be
    left out of both passes."""
    root = Path(__file__).resolve().parents[2]
    line = re.search(r"^MPI_TESTS := (.*)$", (root / "Makefile").read_text(), re.M)
    places = [root / part for part in line.group(1).split()]
    for path in (root / "tests").rglob("*.py"):
        if "mark.mpi" in path.read_text():
            assert any(path == p or p in path.parents for p in places), \
                f"{path.relative_to(root)} has mpi tests but is not in the Makefile's MPI_TESTS"
