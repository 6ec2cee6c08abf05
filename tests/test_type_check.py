"""The examples and the docs' code blocks pass mypy, as `make lint` checks them, and mypy
sees what they use: the distributions are typed, and the names the core and nn gather
with star imports are visible to it."""

from __future__ import annotations

import runpy
import subprocess
import sys
from pathlib import Path

import dlfree as dl
import dlfree.ops
from dlfree import nn

import pytest

# one worker runs both mypy calls, so that they do not write its cache at once
pytestmark = pytest.mark.xdist_group("mypy")
ROOT = Path(__file__).resolve().parent.parent
CHECK = runpy.run_path(str(ROOT / "scripts" / "check_types.py"))
DISTRIBUTIONS = {"core": "dlfree", "nn": "dlfree/nn", "optim": "dlfree/optim",
                 "metrics": "dlfree/metrics", "hf": "dlfree/hf"}


def _mypy(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mypy", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)


def test_examples_and_docs_pass_mypy():
    result = subprocess.run([sys.executable, "scripts/check_types.py"], cwd=ROOT,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_sees_the_tensor_methods_and_reports_what_does_not_exist(tmp_path):
    code = tmp_path / "uses_dlfree.py"
    code.write_text(
        "import dlfree as dl\n"
        "from dlfree import nn\n"
        "x = dl.randn(3, 4)\n"
        "y: dl.Tensor = (x.sum(dim=1).exp() + 1) @ x.T.float()\n"
        "model: nn.Module = nn.Sequential(nn.Linear(4, 2), nn.ReLU())\n"
        "x.frobnicate()\n"
        "dl.frobnicate(x)\n"
        "nn.Frobnicate()\n"
        "s: str = x.mean()\n")
    out = _mypy(str(code)).stdout
    errors = [line.split(": error: ", 1)[1] for line in out.splitlines() if ": error: " in line]
    assert errors == ['"Tensor" has no attribute "frobnicate"  [attr-defined]',
                      "Module not callable  [operator]",
                      'Module has no attribute "Frobnicate"  [attr-defined]',
                      'Incompatible types in assignment (expression has type "Tensor", variable '
                      'has type "str")  [assignment]'], out


def test_each_doc_becomes_a_module_with_the_docs_line_numbers(tmp_path):
    doc = tmp_path / "guide.md"
    doc.write_text("# Title\n\nProse.\n\n```python\nx = 1\n```\n\nMore.\n\n```python\n"
                   "y = x + 1\nprint(y)\n```\n")
    lines = CHECK["as_module"](doc).splitlines()
    assert lines[5] == "x = 1" and lines[11:13] == ["y = x + 1", "print(y)"]
    assert all(not line for i, line in enumerate(lines) if i not in (5, 11, 12))


def test_dl_and_nn_export_every_name_their_families_gather():
    # dlfree/__init__ and nn/__init__ star-import each family, since a type checker cannot
    # read the computed __all__ of dlfree.ops and dlfree.nn.layers
    assert [n for n in dlfree.ops.__all__ if getattr(dl, n, None) is not
            getattr(dlfree.ops, n)] == []
    assert [n for n in nn.layers.__all__ if getattr(nn, n, None) is not
            getattr(nn.layers, n)] == []


def test_every_distribution_is_marked_typed():
    missing = [name for name, package in DISTRIBUTIONS.items()
               if not (ROOT / "packages" / name / "src" / package / "py.typed").is_file()]
    assert missing == []
