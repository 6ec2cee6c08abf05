"""Fuzzing the tensor-file reader (`dl.io.load_tensors`): every damaged file is refused with
a CheckpointError naming it, or loads exactly as the original (support.fuzz explains the
cases and the memory-limited child process that loads them)."""

from __future__ import annotations

import pytest

from support.fuzz_cases import fuzz


def _check(result: dict) -> None:
    counts = result["counts"]
    print(f"tensor files: {result['cases']} cases: {dict(counts)}")
    assert not result["failures"], "\n".join(result["failures"])
    assert counts["equivalent"] >= 1 and counts["refused"] >= result["cases"] - 5


def test_damaged_tensor_files_are_refused(tmp_path):
    _check(fuzz(tmp_path, "tensors", seed=1, randoms=8, count=80))


@pytest.mark.slow
def test_damaged_tensor_files_are_refused_many(tmp_path):
    result = fuzz(tmp_path, "tensors", seed=2, randoms=150)
    assert result["cases"] >= 250
    _check(result)
