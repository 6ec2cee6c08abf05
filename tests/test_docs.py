"""Every ```python block in README.md and docs/*.md runs, in order, as a test per file.

A block whose first line is a command such as `# mpiexec -n 2 python train.py` is a
multi-process program: it is written to that file and run with that command (the
mpiexec beside this Python), in the same folder as the other blocks, and must exit 0.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
LAUNCHED = re.compile(r"# mpiexec -n (\d+) python (\S+\.py)\n")
MPI_TIMEOUT_S = 300


def _blocks(path: Path) -> list[str]:
    return BLOCK.findall(path.read_text())


def _launches(path: Path) -> bool:
    return path.exists() and any(LAUNCHED.match(b) for b in _blocks(path))


def _run_launched(code: str, name: str, tmp_path: Path) -> None:
    processes, script = LAUNCHED.match(code).groups()
    (tmp_path / script).write_text(code)
    beside = Path(sys.executable).with_name("mpiexec")
    mpiexec = str(beside) if beside.exists() else shutil.which("mpiexec")
    assert mpiexec, "mpiexec not found (it comes with the dev group's mpich wheel)"
    done = subprocess.run([mpiexec, "-n", processes, sys.executable, script], cwd=tmp_path,
                          capture_output=True, text=True, timeout=MPI_TIMEOUT_S)
    assert done.returncode == 0, (f"{name}: mpiexec -n {processes} python {script} exited "
                                  f"{done.returncode}\n{done.stdout}\n{done.stderr}")


# a page that launches MPI jobs is an `mpi` test: it runs with them, after the others
@pytest.mark.parametrize("path", [pytest.param(p, marks=[pytest.mark.mpi])
                                  if _launches(p) else p for p in DOCS if p.exists()],
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_code_blocks_run(path, tmp_path, monkeypatch):
    blocks = _blocks(path)
    assert blocks, f"{path.name} has no python code blocks"
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "__docs__"}
    for i, code in enumerate(blocks):
        if LAUNCHED.match(code):
            _run_launched(code, f"{path.name}[block {i}]", tmp_path)
            continue
        try:
            exec(compile(code, f"{path.name}[block {i}]", "exec"), namespace)
        except Exception as e:
            raise AssertionError(f"{path.name}, block {i} failed: {e!r}\n{code}") from e
