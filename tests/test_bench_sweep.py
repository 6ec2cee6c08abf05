"""`make bench-sweep` (benchmarks/run.py --sweep): a swept workload is timed in dl.free and
PyTorch at each size, in workers built at that size, and the JSON and the HTML page with
one SVG curve per framework are written."""

from __future__ import annotations

import json
import multiprocessing
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"

# The sweep at two tiny batch sizes.
SCRIPT = """
import sys
sys.path.insert(0, {bench!r})
sys.argv = ["run.py", "--sweep", "--quick"]
import sweep

sweep.SWEEPS = {{"mlp_step": sweep.Sweep("BATCH", "batch size", (4, 16))}}
sys.exit(sweep.main("quick"))
"""


def test_the_sweep_times_each_size_in_both_frameworks_and_draws_them(tmp_path):
    copy = tmp_path / "benchmarks"
    shutil.copytree(BENCHMARKS, copy, ignore=shutil.ignore_patterns("results", "__pycache__"))
    environ = {k: v for k, v in os.environ.items() if k != "OPENBLAS_THREAD_TIMEOUT"}
    done = subprocess.run([sys.executable, "-c", SCRIPT.format(bench=str(copy))],
                          capture_output=True, text=True, timeout=300, env=environ)
    assert done.returncode == 0, done.stderr
    assert "batch size 4:" in done.stdout and "batch size 16:" in done.stdout
    results = json.loads((copy / "results" / "sweep-latest.json").read_text())
    assert results["mode"] == "quick" and list(results["sweeps"]) == ["mlp_step"]
    points = results["sweeps"]["mlp_step"]["points"]
    assert [p["size"] for p in points] == [4, 16] and [p["samples"] for p in points] == [4, 16]
    for p in points:
        assert set(p["frameworks"]) == {"dlfree", "torch"}
        for timing in p["frameworks"].values():
            assert timing["per_sample_s"] * p["samples"] == timing["median_s"] > 0
        assert p["ratio"] > 0
    page = (copy / "results" / "sweep-latest.html").read_text()
    curves = re.findall(r'<polyline class="curve" data-framework="(\w+)"[^>]* points="([^"]+)"',
                        page)
    assert [fw for fw, _ in curves] == ["dlfree", "torch"]
    assert all(len(xy.split()) == 2 for _, xy in curves)  # a point per size
    assert page.count("<svg") == 1 and "<td>16</td>" in page
    stamped = sorted(p.name for p in (copy / "results").glob("sweep-2*"))
    assert [Path(n).suffix for n in stamped] == [".html", ".json"]


def test_a_workload_that_is_not_swept_is_refused_naming_the_swept_ones(tmp_path):
    done = subprocess.run([sys.executable, str(BENCHMARKS / "run.py"), "--sweep", "--quick",
                           "--only", "op_overhead"], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2
    assert "op_overhead cannot be swept; the swept workloads are mlp_step, resnet20_step, " \
           "attention_block" in done.stderr


def test_a_worker_builds_its_step_at_the_sizes_it_is_given(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    for name in ("worker", "workloads", "environment"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    import worker
    from workloads import WORKLOADS

    mlp = WORKLOADS["mlp_step"]
    built_at = []
    monkeypatch.setattr(mlp, "BATCH", mlp.BATCH)  # put back after the test
    monkeypatch.setitem(mlp.BUILDERS, "numpy",
                        lambda: built_at.append(mlp.BATCH) or (lambda: None))
    coordinator, child = multiprocessing.Pipe()
    coordinator.send(None)  # stop after the hello
    worker.serve(child, "mlp_step", "numpy", {"BATCH": 7})
    assert built_at == [7] and "environment" in coordinator.recv()
    for name in ("worker", "workloads", "environment"):
        sys.modules.pop(name, None)
