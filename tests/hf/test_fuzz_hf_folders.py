"""Fuzzing the HF folder reader (`AutoModel.from_pretrained`: config, shard index, paths,
weights): every damaged folder is refused with a CheckpointError naming the file, or loads
exactly as the original (support.fuzz explains the cases and the memory-limited child
process that loads them)."""

from __future__ import annotations

import pytest

from support.fuzz_cases import fuzz


def _check(result: dict) -> None:
    counts = result["counts"]
    print(f"HF folders: {result['cases']} cases: {dict(counts)}")
    assert not result["failures"], "\n".join(result["failures"])
    assert counts["equivalent"] >= 1 and counts["refused"] >= result["cases"] - 5


def test_damaged_hf_folders_are_refused(tmp_path):
    _check(fuzz(tmp_path, "hf", seed=7, randoms=8, count=80))


@pytest.mark.slow
def test_damaged_hf_folders_are_refused_many(tmp_path):
    result = fuzz(tmp_path, "hf", seed=8, randoms=150)
    assert result["cases"] >= 250
    _check(result)
