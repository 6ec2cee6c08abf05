"""Data-parallel SGD steps of mlp_step's 784-512-512-10 ReLU MLP under `mpiexec`.

A step trains on a global batch of 256: on 2 processes each takes its 128 and
DistributedDataParallel averages the gradients, dl.free's over MPI and torch's with the
gloo backend, both launched the same way (`mpiexec -n 2`). "dlfree_1proc" and
"torch_1proc" run the same program on one process, which takes all 256, for the scaling
of samples/s from 1 to 2 processes (run.py reports it). All four compute the same
training, so the smoke test compares them all with torch. The weights start as
mlp_step's; float32, lr 0.1, no momentum; one BLAS/torch thread per process, so two
processes use the two cores.

A step runs in the job, not in the benchmark's worker process: rank 0 reads commands on
stdin ("step": one step, answered with the loss over the global batch; "time N": N steps,
answered with the median step time on rank 0) and the other ranks follow, so `step()` and
`median_time(n)` here only talk to it; the rank program is ddp_mlp_ranks.py.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from .plan import Plan

NAME = "ddp_mlp"
DESCRIPTION = ("DDP SGD step, 784-512-512-10 MLP, batch 256 = 128 on each of 2 processes "
               "under mpiexec (gloo for torch)")
UNIT = "ms"
REFERENCE = "torch"
TARGETS = {"torch": 1.3}
PLANS = {"full": Plan(rounds=11, iterations=20, warmup=10),
         "quick": Plan(rounds=3, iterations=3, warmup=2)}
PROCESSES = {"dlfree": 2, "torch": 2, "dlfree_1proc": 1, "torch_1proc": 1}
# framework -> its one-process run of the same global batch: run.py reports the samples/s
# gained from 1 to 2 processes
SCALING = {"dlfree": "dlfree_1proc", "torch": "torch_1proc"}
# the library each framework name runs (for the versions the worker reports)
LIBRARIES = {"dlfree_1proc": "dlfree", "torch_1proc": "torch"}

BENCHMARKS = Path(__file__).resolve().parents[1]


class Launched:
    """A step that runs in an mpiexec job of `processes` ranks (see the module docstring)."""

    def __init__(self, framework: str, processes: int):
        beside = Path(sys.executable).with_name("mpiexec")
        mpiexec = str(beside) if beside.exists() else shutil.which("mpiexec")
        if mpiexec is None:
            raise ImportError("mpiexec not found: install dlfree[mpi] (mpi4py and the mpich "
                              "wheel)")
        self._store = tempfile.mkdtemp(prefix="ddp_mlp_")
        env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1",
               "MKL_NUM_THREADS": "1", "PYTHONPATH": str(BENCHMARKS)}
        self.process = subprocess.Popen(
            [mpiexec, "-n", str(processes), sys.executable, "-m", "workloads.ddp_mlp_ranks",
             framework, os.path.join(self._store, "store")],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=BENCHMARKS, env=env)
        hello = self.process.stdout.readline().strip()
        if hello != "ready":
            self.close()
            raise ImportError(f"the {framework} job on {processes} processes did not start: "
                              f"{hello or 'no answer (its error is above)'}")

    def _ask(self, command: str) -> float:
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()
        answer = self.process.stdout.readline().split()
        if len(answer) != 2:
            raise RuntimeError(f"the mpiexec job stopped answering (asked {command!r})")
        return float(answer[1])

    def __call__(self) -> float:
        """One step; rank 0's loss."""
        return self._ask("step")

    def median_time(self, n: int) -> float:
        """The median over `n` steps of rank 0's time per step, in seconds."""
        return self._ask(f"time {n}")

    def close(self) -> None:
        """End the job (closing stdin tells rank 0 to stop every rank)."""
        if self.process.poll() is None:
            self.process.stdin.close()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        for pipe in (self.process.stdin, self.process.stdout):
            pipe.close()
        shutil.rmtree(self._store, ignore_errors=True)

    def __del__(self):
        self.close()


def build_dlfree():
    return Launched("dlfree", 2)


def build_torch():
    return Launched("torch", 2)


def build_dlfree_1proc():
    return Launched("dlfree", 1)


def build_torch_1proc():
    return Launched("torch", 1)


BUILDERS = {"dlfree": build_dlfree, "torch": build_torch, "dlfree_1proc": build_dlfree_1proc,
            "torch_1proc": build_torch_1proc}
