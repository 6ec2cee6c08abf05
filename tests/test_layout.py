"""The test suite's own layout rules: shared helpers live in the tests/support package and are
imported by package name, so that the suite runs under `--import-mode=importlib`; parity
inputs have one spec vocabulary (support/specs.py); conftest.py files hold fixtures and hooks
only. tests/fixtures is left out: it holds plugin distributions that tests install."""

from __future__ import annotations

import ast
import importlib.util
from functools import cache
from pathlib import Path

TESTS = Path(__file__).resolve().parent
SUPPORT = TESTS / "support"
FIXTURES = TESTS / "fixtures"
SPECS = SUPPORT / "specs.py"
# the layer harness's former name for Fixed: a second vocabulary would likely bring it back
FORMER_SPEC_NAMES = {"Const"}


def _sources() -> list[Path]:
    return sorted(p for p in TESTS.rglob("*.py") if FIXTURES not in p.parents)


def _name(path: Path) -> str:
    return path.relative_to(TESTS).as_posix()


@cache
def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(), filename=str(path))


def _inside_tests(location: str | None) -> bool:
    return location is not None and TESTS in Path(location).resolve().parents


@cache
def _is_local(top: str) -> bool:
    """Whether a bare top-level import of `top` names a module or folder of tests/ other than
    the support package: a module anywhere under tests/, or a name that resolves into it."""
    if top == "support":
        return False
    if top in {p.stem for p in _sources()}:
        return True
    spec = importlib.util.find_spec(top)
    if spec is None:
        return False
    return any(_inside_tests(p) for p in [spec.origin, *(spec.submodule_search_locations or [])])


def _imports(tree: ast.Module):
    """(line, top-level module name or None for a relative import, module, names) for every
    import statement, nested ones included."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name.split(".")[0], alias.name, []
        elif isinstance(node, ast.ImportFrom):
            top = None if node.level else node.module.split(".")[0]
            yield node.lineno, top, node.module or "", [a.name for a in node.names]


def test_python_files_beside_the_tests_are_tests_or_conftests():
    """Anything else is a helper, and helpers live in tests/support."""
    strays = [_name(p) for p in _sources() if SUPPORT not in p.parents
              and not (p.name.startswith("test_") or p.name == "conftest.py")]
    assert not strays, f"helpers outside tests/support: {strays}; move them into the package"


def test_helpers_are_imported_by_package_name():
    bare = [f"{_name(p)}:{line} imports {module or '.'}" for p in _sources()
            for line, top, module, _ in _imports(_tree(p)) if top is None or _is_local(top)]
    assert not bare, ("test code imports a test module or helper by bare or relative name "
                      f"(use `from support.<module> import ...`): {bare}")


def _spec_names() -> set[str]:
    return {n.name for n in _tree(SPECS).body if isinstance(n, ast.ClassDef)}


def test_the_spec_vocabulary_is_defined_once():
    names = _spec_names() | FORMER_SPEC_NAMES
    assert {"Float", "Int", "Bool", "Fixed"} <= names
    copies = [f"{_name(p)}:{n.lineno} class {n.name}" for p in _sources() if p != SPECS
              for n in ast.walk(_tree(p)) if isinstance(n, ast.ClassDef) and n.name in names]
    assert not copies, f"input specs are defined in support/specs.py only: {copies}"


def test_spec_names_come_from_support_specs():
    """Not through a harness that happens to import them, so that there is one place to look."""
    names = _spec_names()
    detours = [f"{_name(p)}:{line} from {module} import {sorted(set(imported) & names)}"
               for p in _sources() for line, top, module, imported in _imports(_tree(p))
               if top == "support" and module != "support.specs" and set(imported) & names]
    assert not detours, f"import input specs from support.specs: {detours}"


def test_both_parity_harnesses_use_the_one_vocabulary():
    for harness in ("parity.py", "torch_copy.py"):
        modules = {module for _, _, module, _ in _imports(_tree(SUPPORT / harness))}
        assert "support.specs" in modules, f"support/{harness} does not build support.specs"


def _is_fixture(node: ast.FunctionDef) -> bool:
    for decorator in node.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        if isinstance(target, ast.Attribute) and target.attr == "fixture":
            return True
    return False


def _allowed_in_conftest(node: ast.stmt, first: bool) -> bool:
    if isinstance(node, ast.Import | ast.ImportFrom):
        return True
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
        return first  # the module docstring
    if isinstance(node, ast.FunctionDef):
        return _is_fixture(node) or node.name.startswith("pytest_")
    if isinstance(node, ast.Assign):
        return [getattr(t, "id", None) for t in node.targets] == ["pytest_plugins"]
    return False


def test_conftest_files_hold_fixtures_and_hooks_only():
    others = [f"{_name(p)}:{node.lineno} {type(node).__name__} {getattr(node, 'name', '')}"
              for p in _sources() if p.name == "conftest.py"
              for i, node in enumerate(_tree(p).body) if not _allowed_in_conftest(node, i == 0)]
    assert not others, f"conftest.py holds fixtures and hooks; move the rest to support: {others}"


def test_the_suite_runs_in_importlib_mode_with_tests_on_the_path(pytestconfig):
    assert pytestconfig.getoption("importmode") == "importlib"
    assert TESTS in [Path(p).resolve() for p in pytestconfig.getini("pythonpath")]
