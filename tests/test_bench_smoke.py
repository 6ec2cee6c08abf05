"""Smoke tests of `make bench`: the workloads compute the same thing in every framework,
and `benchmarks/run.py` runs end to end and writes its JSON.

A benchmark is only honest if dl.free, the hand-written NumPy and PyTorch do the same
work, so each workload's implementations run one step here from the same fixed data
and must agree to float32 accuracy.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def _load_workloads():
    """benchmarks/workloads as the package `bench_workloads`, leaving sys.path alone."""
    init = BENCHMARKS / "workloads" / "__init__.py"
    spec = importlib.util.spec_from_file_location("bench_workloads", init,
                                                  submodule_search_locations=[str(init.parent)])
    package = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = package
    spec.loader.exec_module(package)
    return package.WORKLOADS


WORKLOADS = _load_workloads()
# op_overhead's steps compute nothing worth comparing (its dl.free and torch steps
# return nothing); the subprocess test below runs it.
COMPARED = [name for name in WORKLOADS if name != "op_overhead"]


def _array(value) -> np.ndarray:
    """A float64 copy of a NumPy array or scalar, a dl.free tensor or a torch tensor."""
    if hasattr(value, "detach"):
        value = value.detach().numpy()
    return np.array(value, dtype=np.float64)


def _observe(name: str, framework: str) -> list[np.ndarray]:
    """What the first steps of `framework`'s implementation compute, as float64 arrays.

    A step returns either its outputs and gradients (compared as they are), the loss of
    a training step (compared with the loss of the next step, which depends on every
    gradient through the update), or (loss, parameters) of a training step (compared
    with the gradients recovered from the update, (before - after) / lr).
    """
    module = WORKLOADS[name]
    step = module.BUILDERS[framework]()
    result = step()
    if not isinstance(result, tuple):
        return [_array(result), _array(step())]
    if isinstance(result[1], list):
        loss, params = result
        before = module._problem()[2]
        return [_array(loss)] + [(b - _array(p)) / module.LR for b, p in zip(before, params)]
    return [_array(value) for value in result]


@functools.cache
def _reference(name: str) -> tuple:
    """The hand-written NumPy implementation's results, which the others must match."""
    return tuple(_observe(name, "numpy"))


def test_every_workload_is_complete():
    for name, module in WORKLOADS.items():
        assert name == module.NAME
        assert module.UNIT in ("us", "ms")
        assert set(module.BUILDERS) == {"dlfree", "numpy", "torch"}
        assert set(module.PLANS) == {"full", "quick"}
        assert set(module.TARGETS) <= {"numpy", "torch"}


@pytest.mark.parametrize("framework", ["dlfree", "torch"])
@pytest.mark.parametrize("name", COMPARED)
def test_frameworks_agree(name, framework):
    if framework == "torch":
        pytest.importorskip("torch")
    expected = _reference(name)
    actual = _observe(name, framework)
    assert len(actual) == len(expected)
    for i, (a, e) in enumerate(zip(actual, expected)):
        assert a.shape == e.shape, f"{name} result {i}: shape {a.shape} != {e.shape}"
        np.testing.assert_allclose(a, e, rtol=1e-3, atol=1e-4 * np.abs(e).max(),
                                   err_msg=f"{name}: result {i} of {framework} vs NumPy")


def test_run_quick_writes_json(tmp_path):
    """`run.py --quick --only op_overhead`, from a copy so that results/ stays untouched."""
    copy = tmp_path / "benchmarks"
    shutil.copytree(BENCHMARKS, copy, ignore=shutil.ignore_patterns("results", "__pycache__"))
    done = subprocess.run([sys.executable, str(copy / "run.py"), "--quick", "--only",
                           "op_overhead"], capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    assert "op_overhead:" in done.stdout
    results = json.loads((copy / "results" / "latest.json").read_text())
    assert set(results) == {"started", "command", "mode", "machine", "workloads"}
    assert results["mode"] == "quick"
    assert set(results["machine"]) >= {"python", "cpus", "load_average_1min"}
    assert list(results["workloads"]) == ["op_overhead"]
    result = results["workloads"]["op_overhead"]
    assert set(result) == {"description", "unit", "plan", "frameworks", "skipped", "ratios"}
    rounds = result["plan"]["rounds"]
    assert {"dlfree", "numpy"} <= set(result["frameworks"])
    for timing in result["frameworks"].values():
        assert set(timing) == {"median_s", "round_medians_s", "environment"}
        assert timing["median_s"] > 0 and len(timing["round_medians_s"]) == rounds
    assert set(result["ratios"]) == set(result["frameworks"]) - {"dlfree"}
    for ratio in result["ratios"].values():
        assert set(ratio) == {"median", "min", "max", "per_round", "target", "met"}
        assert len(ratio["per_round"]) == rounds
