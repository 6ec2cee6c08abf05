"""Fuzzing the training-state reader (`read_checkpoint`, then the Trainer's schema and fit
checks and the restore): every damaged file is refused with a CheckpointError naming it, or
loads exactly as the original (support.fuzz explains the cases and the memory-limited child
process that loads them)."""

from __future__ import annotations

import pytest

from support.fuzz_cases import fuzz


def _check(result: dict) -> None:
    counts = result["counts"]
    print(f"training states: {result['cases']} cases: {dict(counts)}")
    assert not result["failures"], "\n".join(result["failures"])
    assert counts["equivalent"] >= 1 and counts["refused"] >= result["cases"] - 5


def test_damaged_training_states_are_refused(tmp_path):
    _check(fuzz(tmp_path, "state", seed=5, randoms=8, count=80))


@pytest.mark.slow
def test_damaged_training_states_are_refused_many(tmp_path):
    result = fuzz(tmp_path, "state", seed=6, randoms=150)
    assert result["cases"] >= 250
    _check(result)
