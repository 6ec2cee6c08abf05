"""Every ```python block in README.md and docs/*.md runs, in order, as a test per file."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def _blocks(path: Path) -> list[str]:
    return BLOCK.findall(path.read_text())


@pytest.mark.parametrize("path", [p for p in DOCS if p.exists()],
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_code_blocks_run(path, tmp_path, monkeypatch):
    blocks = _blocks(path)
    assert blocks, f"{path.name} has no python code blocks"
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "__docs__"}
    for i, code in enumerate(blocks):
        try:
            exec(compile(code, f"{path.name}[block {i}]", "exec"), namespace)
        except Exception as e:
            raise AssertionError(f"{path.name}, block {i} failed: {e!r}\n{code}") from e
