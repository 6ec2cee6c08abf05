"""docs/torch-coverage.md: the page that counts dl.free against torch's public surface is
current, and the rules that sort the names do what the page says."""

from __future__ import annotations

import runpy
from pathlib import Path

import dlfree as dl

ROOT = Path(__file__).resolve().parents[1]
COVERAGE = runpy.run_path(str(ROOT / "scripts" / "gen_torch_coverage.py"))
TORCH_FUNCTIONS = COVERAGE["SURFACES"][0]
TENSOR_METHODS = COVERAGE["SURFACES"][1]


def test_the_coverage_page_is_current():
    written = COVERAGE["PAGE"].read_text()
    fresh = COVERAGE["render"]()
    assert written == fresh, COVERAGE["differences"](written, fresh)


def test_every_note_names_a_torch_name_that_dl_free_implements():
    assert COVERAGE["stale_notes"]() == []


def test_a_name_dl_free_gains_moves_from_missing_to_implemented(monkeypatch):
    before = COVERAGE["classify"](TORCH_FUNCTIONS)
    name = before["missing"][0]
    monkeypatch.setattr(dl, name, lambda *a: None, raising=False)
    after = COVERAGE["classify"](TORCH_FUNCTIONS)
    assert name in after["implemented"] and name not in after["missing"]
    assert len(after["implemented"]) == len(before["implemented"]) + 1


def test_names_are_sorted_by_the_reason_they_are_not_like_torch():
    tensor = COVERAGE["classify"](TENSOR_METHODS)
    assert tensor["differs"]["numpy"] == COVERAGE["DIFFERS"]["torch.Tensor:numpy"]
    assert "numpy" not in tensor["implemented"]
    assert "quantized" in tensor["not_planned"]["q_scale"]
    assert "storage" in tensor["not_planned"]["untyped_storage"]
    # a pattern for one backend's names does not catch an ordinary op that contains it
    assert "flipud" not in tensor["not_planned"]


def test_a_note_for_a_name_dl_free_lacks_is_reported(monkeypatch):
    monkeypatch.setitem(COVERAGE["DIFFERS"], "torch:polar", "a made-up difference")
    monkeypatch.delattr(dl, "polar", raising=False)
    assert COVERAGE["stale_notes"]() == ["DIFFERS names torch:polar, which dl.free does not "
                                         "implement"]
