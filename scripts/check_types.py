"""`make lint`'s type check: mypy over examples/ and the python blocks of the docs.

A user's editor sees our examples as mypy does, through the packages' py.typed markers
and the generated tensor.pyi; this checks that what the examples and README.md and
docs/*.md use exists and is used as typed. The blocks of one doc run in one namespace
(tests/test_docs.py), so each doc becomes one module whose lines are the doc's lines
(prose blanked out), and mypy's messages are reported against the doc itself. The stub
is checked as well. mypy's settings are [tool.mypy] in pyproject.toml.

    python scripts/check_types.py [extra mypy arguments]
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
STUB = ROOT / "packages" / "core" / "src" / "dlfree" / "tensor.pyi"
# Where the docs' modules are written: a fixed place, since mypy's cache (beside it in .venv)
# keeps each module's messages under the path it had.
MODULES = Path(".venv") / "mypy-docs"


def blocks(path: Path) -> list[str]:
    """The python code blocks of a Markdown file, in order."""
    return BLOCK.findall(path.read_text())


def as_module(path: Path) -> str:
    """The doc with everything but its python blocks blanked, so line numbers stay."""
    text = path.read_text()
    lines = [""] * (text.count("\n") + 1)
    for match in BLOCK.finditer(text):
        first = text.count("\n", 0, match.start(1))
        for i, line in enumerate(match.group(1).splitlines()):
            lines[first + i] = line
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    (ROOT / MODULES).mkdir(parents=True, exist_ok=True)
    modules = {}
    for doc in DOCS:
        module = MODULES / f"docs_{doc.stem.lower()}.py"  # no clash with a real module name
        (ROOT / module).write_text(as_module(doc))
        modules[str(module)] = str(doc.relative_to(ROOT))
    result = subprocess.run(
        [sys.executable, "-m", "mypy", *argv, "examples", str(STUB.relative_to(ROOT)), *modules],
        cwd=ROOT, capture_output=True, text=True)
    output = result.stdout + result.stderr
    for module, doc in modules.items():
        output = output.replace(module, doc)
    print(output, end="")
    return result.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
