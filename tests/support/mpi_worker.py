"""One rank of an `mpi` test job (support/mpi.py): run the named functions of a test module.

    mpiexec -n N python mpi_worker.py MODULE.py LOG_DIR NAME...

Each function runs with the default process group initialized (backend "mpi") and
warnings turned into errors, as pytest's `filterwarnings = error` does. Its outcome goes
to LOG_DIR/rank<R>.jsonl before the next one starts; a failure is logged with its
traceback and then aborts every rank, since the others may be blocked in a collective.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import traceback
import warnings
from pathlib import Path

import dlfree.distributed as dist

from mpi4py import MPI


def main(module_path: str, log_dir: str, names: list[str]) -> None:
    rank = MPI.COMM_WORLD.Get_rank()
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, as pytest has it
    warnings.simplefilter("error")
    spec = importlib.util.spec_from_file_location(f"mpi_{Path(module_path).stem}", module_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with open(Path(log_dir) / f"rank{rank}.jsonl", "a") as log:
        def write(**entry):
            log.write(json.dumps(entry) + "\n")
            log.flush()

        for name in names:
            write(check=name, status="started")
            try:
                dist.init_process_group("mpi", timeout=60)
                getattr(module, name)()
                if dist.is_initialized():
                    dist.destroy_process_group()
            except BaseException:
                write(check=name, status="failed", traceback=traceback.format_exc())
                sys.stderr.write(f"rank {rank}: {name} failed; aborting the job\n")
                sys.stderr.flush()
                MPI.COMM_WORLD.Abort(1)
                os._exit(1)  # MPICH's Abort may return before the launcher kills the job
            write(check=name, status="ok")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3:])
