"""The `mpi` tests' harness: each test module's rank functions run as one MPI job.

A module lists the world sizes it runs at in `WORLD_SIZES` (default (2,)). For each size,
the first of its tests that asks for the `mpi_job` fixture (tests/distributed/conftest.py)
starts `mpiexec -n SIZE` on support/mpi_worker.py, which imports the module on every rank
and runs each of its functions named `ranks_*`, in file order, inside an initialized
process group; every rank logs each function's outcome to a file. A test then asserts on
its own function's outcome: `mpi_job.check(ranks_all_reduce)`. One pytest process reports
everything, so there is one summary; a failure on any rank aborts the job at once
(MPI_Abort), and a job that hangs is killed at JOB_TIMEOUT_S, so the run fails instead of
blocking. mpi4py and mpiexec come with the dev dependency group: when they are missing
these tests fail, they never skip.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

WORKER = Path(__file__).with_name("mpi_worker.py")
JOB_TIMEOUT_S = 300
_TAIL = 6000


def mpiexec_path() -> str:
    """The mpiexec next to this Python (the mpich wheel's), else the one on PATH."""
    beside = Path(sys.executable).with_name("mpiexec")
    found = str(beside) if beside.exists() else shutil.which("mpiexec")
    if found is None:
        pytest.fail("mpiexec not found: the mpi tests need the dev dependency group's mpich "
                    "wheel (pip install 'dlfree[mpi]')")
    return found


def world_sizes(module) -> tuple:
    """The world sizes a test module's rank functions run at."""
    return getattr(module, "WORLD_SIZES", (2,))


class Job:
    """The outcome of one MPI job: per rank function, what each rank logged."""

    def __init__(self, size: int, names: list[str], logs: dict, returncode, output: str):
        self.size, self.names, self.logs = size, names, logs
        self.returncode, self.output = returncode, output

    def check(self, function) -> None:
        """Fail the calling test unless `function` passed on every rank."""
        name = function.__name__
        failures = [(rank, entry["traceback"]) for rank, entries in sorted(self.logs.items())
                    for entry in entries if entry["check"] == name and entry["status"] == "failed"]
        if failures:
            text = "\n".join(f"--- rank {rank} of {self.size}:\n{tb}" for rank, tb in failures)
            pytest.fail(f"{name} failed under mpiexec -n {self.size}:\n{text}", pytrace=False)
        passed = [rank for rank, entries in self.logs.items()
                  if any(e["check"] == name and e["status"] == "ok" for e in entries)]
        if len(passed) != self.size:
            started = [e["check"] for entries in self.logs.values() for e in entries
                       if e["status"] == "started"]
            last = started[-1] if started else "(none)"
            pytest.fail(f"{name} did not finish on every rank of mpiexec -n {self.size} (done "
                        f"on ranks {sorted(passed)}; last function started: {last}; exit "
                        f"status {self.returncode}); the job's output ends with:\n"
                        f"{self.output[-_TAIL:]}", pytrace=False)


def run_job(module_path: Path, names: list[str], size: int, logs_dir: Path) -> Job:
    """Run the functions `names` of the test module at `module_path` on `size` ranks."""
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1",
           # hydra ends the whole job itself past this, should the process group outlive us
           "MPIEXEC_TIMEOUT": str(JOB_TIMEOUT_S + 30)}
    command = [mpiexec_path(), "-n", str(size), sys.executable, str(WORKER), str(module_path),
               str(logs_dir), *names]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True, env=env, start_new_session=True)
    try:
        output, _ = process.communicate(timeout=JOB_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        output, _ = process.communicate()
        output += f"\n[killed after {JOB_TIMEOUT_S} s]"
    logs = {}
    for path in logs_dir.glob("rank*.jsonl"):
        logs[int(path.stem[4:])] = [json.loads(line) for line in path.read_text().splitlines()]
    return Job(size, names, logs, process.returncode, output)


# (test module, world size) -> its Job, run once: the tests come interleaved by size
# (test_a[2ranks], test_a[3ranks], test_b[2ranks], ...), so a module-scoped fixture would
# start each job again at every switch
_JOBS: dict = {}


def job_for(module, size: int, tmp_path_factory) -> Job:
    """The Job of `module`'s rank functions on `size` ranks, run on the first request."""
    key = (module.__file__, size)
    if key not in _JOBS:
        names = [name for name, value in vars(module).items()
                 if name.startswith("ranks_") and callable(value)]
        logs = tmp_path_factory.mktemp(f"{Path(module.__file__).stem}-{size}ranks")
        _JOBS[key] = run_job(Path(module.__file__), names, size, logs)
    return _JOBS[key]


# A Trainer on every rank whose callback raises on one rank at batch 3 (`{rank}`), with the
# Trainer options `{options}`: the abort tests check that this ends the whole job.
_FAILING_TRAINER = """\
import dlfree as dl
import dlfree.distributed as dist
from dlfree import nn, optim
from dlfree.data import DataLoader, TensorDataset

class Boom:
    def dlfree_train_batch_end(self, trainer, batch, batch_index, loss, outputs):
        if dist.get_rank() == {rank} and batch_index == 3:
            raise RuntimeError("boom in a callback on rank {rank}")

data = TensorDataset(dl.randn(256, 4), dl.randint(0, 2, (256,)))
model = nn.Linear(4, 2)
trainer = dl.train.Trainer(model, optim.SGD(model.parameters(), lr=0.1),
                           nn.CrossEntropyLoss(), max_epochs=1000, callbacks=[Boom()]{options})
trainer.fit(DataLoader(data, batch_size=8, shuffle=True))
"""


def run_failing_trainer(mpiexec: str, tmp_path: Path, size: int, rank: int,
                        options: str = "") -> tuple[float, subprocess.CompletedProcess]:
    """Run `_FAILING_TRAINER` as `mpiexec -n size`, failing on `rank`; returns (seconds it
    took, the finished process). `options` is appended to the Trainer's arguments
    (such as ', strategy="parameter_server"')."""
    script = tmp_path / "fail.py"
    script.write_text(_FAILING_TRAINER.format(rank=rank, options=options))
    started = time.monotonic()
    done = subprocess.run([mpiexec, "-n", str(size), sys.executable, str(script)],
                          capture_output=True, text=True, timeout=60)
    return time.monotonic() - started, done
