"""Fuzzing every reader: tensor files (`dl.io.load_tensors`), model files (`dl.load`),
training states (`read_checkpoint`, then the Trainer's schema and fit checks and the
restore) and HF folders (`AutoModel.from_pretrained`: config, shard index, paths, weights).
Every damaged input is refused with a CheckpointError naming the file, or loads exactly as
the original; support.fuzz explains the cases and the memory-limited child that loads them.
The default run loads 80 seeded cases of each kind, the slow one every case built."""

from __future__ import annotations

import pytest

from support.fuzz_cases import KINDS, fuzz

SEEDS = {kind: i for i, kind in enumerate(KINDS)}


def _check(kind: str, result: dict) -> None:
    counts = result["counts"]
    print(f"{kind}: {result['cases']} cases: {dict(counts)}")
    assert not result["failures"], "\n".join(result["failures"])
    assert counts["equivalent"] >= 1  # the unchanged control loads (the loader works)


@pytest.mark.parametrize("kind", KINDS)
def test_damaged_files_are_refused(tmp_path, kind):
    _check(kind, fuzz(tmp_path, kind, seed=SEEDS[kind], randoms=8, count=80))


@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
def test_damaged_files_are_refused_many(tmp_path, kind):
    result = fuzz(tmp_path, kind, seed=100 + SEEDS[kind], randoms=150)
    assert result["cases"] >= 250
    _check(kind, result)
