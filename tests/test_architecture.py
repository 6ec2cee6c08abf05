"""The import rules docs/architecture.md states, checked on the source tree and at run time.

- A first-party package uses another dl.free distribution only when its pyproject.toml
  declares it (the namespace `dlfree.<sub>` belongs to one distribution each).
- The core has no import circle at module level, and no core module, imported alone in a
  fresh process, loads a plugin package (`dlfree.nn`, `dlfree.train`, ...).
- `dlfree.tensor` stands below the files, the plugins and the training loop.
- The core's own device types never trigger plugin discovery.
"""

from __future__ import annotations

import ast
import importlib.metadata
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

from dlfree import first_party

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ROOT / "packages"
CORE = PACKAGES / "core" / "src" / "dlfree"
PLUGIN_SUBPACKAGES = sorted(first_party.SUBPACKAGES)


def _module_name(path: Path, src: Path) -> tuple[str, bool]:
    parts = list(path.relative_to(src).with_suffix("").parts)
    is_package = parts[-1] == "__init__"
    return ".".join(parts[:-1] if is_package else parts), is_package


def _imported(tree: ast.AST, name: str, is_package: bool, module_level: bool):
    """The absolute names `tree` imports (`from a import b` gives a.b and a)."""
    package = name.split(".") if is_package else name.split(".")[:-1]
    nodes = ast.walk(tree) if not module_level else [
        n for top in tree.body if not _type_checking_only(top)
        for n in ([top] if isinstance(top, ast.Import | ast.ImportFrom) else
                  ast.walk(top) if isinstance(top, ast.If | ast.Try) else [])]
    for node in nodes:
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            prefix = ".".join(base + ([node.module] if node.module else []))
            yield prefix
            yield from (f"{prefix}.{a.name}" for a in node.names)


def _type_checking_only(node: ast.stmt) -> bool:
    """`if TYPE_CHECKING:` blocks import nothing at run time."""
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def _distribution_of(subpackage: str | None) -> str:
    return first_party.SUBPACKAGES.get(subpackage or "", "dlfree")


def _project_name(package_dir: Path) -> str:
    text = (package_dir / "pyproject.toml").read_text()
    return re.search(r'^name = "([^"]+)"', text, re.M).group(1)


def _declared(package_dir: Path) -> set[str]:
    """The distribution and the distributions it requires, as installed."""
    name = _project_name(package_dir)
    requires = importlib.metadata.requires(name) or []
    return {name} | {re.match(r"[A-Za-z0-9_.-]+", r).group(0) for r in requires
                     if "extra ==" not in r}


@pytest.mark.parametrize("package_dir", sorted(p for p in PACKAGES.iterdir()
                                                if (p / "pyproject.toml").exists()),
                         ids=lambda p: p.name)
def test_packages_use_only_the_distributions_they_declare(package_dir):
    declared = _declared(package_dir)
    src = package_dir / "src"
    wrong = []
    for path in sorted(src.rglob("*.py")):
        name, is_package = _module_name(path, src)
        tree = ast.parse(path.read_text())
        used = {n for n in _imported(tree, name, is_package, module_level=False)
                if n.split(".")[0] == "dlfree"}
        # `dl.nn.Linear` after `import dlfree as dl`
        used |= {f"dlfree.{node.attr}" for node in ast.walk(tree)
                 if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                 and node.value.id == "dl" and node.attr in first_party.SUBPACKAGES}
        for module in sorted({".".join(m.split(".")[:2]) for m in used}):
            dist = _distribution_of(module.partition(".")[2] or None)
            if dist not in declared:
                wrong.append(f"{path.relative_to(ROOT)} uses {module} (from {dist})")
    assert not wrong, (f"{_project_name(package_dir)} declares {sorted(declared)} but:\n"
                       + "\n".join(wrong))


def _core_import_graph() -> dict[str, set[str]]:
    """Module-level imports among the core's modules. Importing `a.b.c` from outside `a.b`
    runs `a.b`'s __init__ first, so such an edge also leads to each package it enters."""
    src = CORE.parent
    modules = {}
    for path in CORE.rglob("*.py"):
        name, is_package = _module_name(path, src)
        modules[name] = (path, is_package)

    def packages_of(module: str) -> set[str]:
        parts = module.split(".")
        return {".".join(parts[:i]) for i in range(2, len(parts))}

    graph = {}
    for name, (path, is_package) in modules.items():
        own = packages_of(name) | {name}
        # `from . import sibling` names the module's own package, which is loaded already
        targets = {m for m in _imported(ast.parse(path.read_text()), name, is_package, True)
                   if m in modules and m not in own and m != "dlfree"}
        entered = {p for t in targets for p in packages_of(t) if p not in own}
        graph[name] = (targets | entered) - {name}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_core_has_no_import_circle():
    cycles = _cycles(_core_import_graph())
    assert not cycles, "module-level import circles in the core:\n" + "\n".join(
        " <-> ".join(c) for c in cycles)


# Each core module imported in a fresh process, as its first dl.free module: the package
# `dlfree` is set up bare (its __init__ would import everything) with the same search path.
_IMPORT_ALONE = textwrap.dedent("""
    import importlib, importlib.util, json, os, pkgutil, sys, types

    spec = importlib.util.find_spec("dlfree")
    bare = types.ModuleType("dlfree")
    bare.__path__ = pkgutil.extend_path(list(spec.submodule_search_locations), "dlfree")
    results = {}
    for module in json.loads(sys.argv[1]):
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read)
            sys.modules["dlfree"] = bare
            try:
                importlib.import_module(module)
                out = {"loaded": sorted(m for m in sys.modules if m.split(".")[0] == "dlfree")}
            except BaseException as e:
                out = {"error": f"{type(e).__name__}: {e}"}
            os.write(write, json.dumps(out).encode())
            os._exit(0)
        os.close(write)
        with os.fdopen(read) as f:
            results[module] = json.loads(f.read())
        os.waitpid(pid, 0)
    print(json.dumps(results))
""")


def _import_alone(modules: list[str]) -> dict[str, dict]:
    env = {**os.environ, "DLFREE_DISABLE_PLUGIN_AUTOLOAD": "1"}
    run = subprocess.run([sys.executable, "-c", _IMPORT_ALONE, json.dumps(modules)], env=env,
                         capture_output=True, text=True, timeout=300, check=True)
    return json.loads(run.stdout)


@pytest.fixture(scope="module")
def imported_alone() -> dict[str, dict]:
    src = CORE.parent
    names = sorted(_module_name(p, src)[0] for p in CORE.rglob("*.py"))
    return _import_alone([n for n in names if n != "dlfree" and not n.endswith("__main__")])


def test_every_core_module_imports_alone_and_loads_no_plugin_package(imported_alone):
    plugin_packages = {f"dlfree.{sub}" for sub in PLUGIN_SUBPACKAGES}
    problems = []
    for module, result in imported_alone.items():
        if "error" in result:
            problems.append(f"{module}: {result['error']}")
            continue
        pulled = {m for m in result["loaded"] if ".".join(m.split(".")[:2]) in plugin_packages}
        if pulled:
            problems.append(f"{module} imports {sorted(pulled)}")
    assert not problems, "\n".join(problems)


def test_the_tensor_stands_below_files_plugins_and_training(imported_alone):
    loaded = set(imported_alone["dlfree.tensor"]["loaded"])
    above = {"io", "train", "plugins", "registry", "builtin_plugins", "data", "ops", "amp",
             "autograd", *PLUGIN_SUBPACKAGES}
    below = {m for m in loaded if m.partition(".")[2].partition(".")[0] in above}
    assert not below, f"dlfree.tensor imports {sorted(below)}"


def test_import_dlfree_loads_no_training_code_and_no_plugin():
    code = ("import dlfree, sys, json; print(json.dumps(sorted(m for m in sys.modules "
            "if m.split('.')[0] in ('dlfree', 'attr', 'tqdm'))))")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    loaded = json.loads(run.stdout)
    assert not [m for m in loaded if m.split(".")[0] in ("attr", "tqdm")], loaded
    assert not [m for m in loaded if len(m.split(".")) > 1 and m.split(".")[1] in
                PLUGIN_SUBPACKAGES], loaded


def test_a_builtin_device_type_loads_no_entry_point():
    code = textwrap.dedent("""
        import importlib.metadata, json, sys
        calls = []
        real = importlib.metadata.entry_points
        importlib.metadata.entry_points = lambda *a, **k: calls.append(k) or real(*a, **k)
        sys.modules["cupy"] = None  # CuPy missing, whether or not it is installed
        import dlfree as dl
        try:
            dl.Device("cuda")
        except dl.DeviceError as e:
            error = str(e)
        print(json.dumps({"calls": calls, "error": error, "available": dl.cuda.is_available(),
                          "manager": dl.plugins._state.pm is not None,
                          "plugins": sorted(m for m in sys.modules if m.split(".")[0] == "dlfree"
                                            and len(m.split(".")) > 1 and m.split(".")[1] in
                                            SUBPACKAGES)}))
    """).replace("SUBPACKAGES", repr(PLUGIN_SUBPACKAGES))
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    result = json.loads(run.stdout)
    assert "CuPy is not installed" in result["error"]
    assert result["available"] is False
    assert result == {**result, "calls": [], "manager": False, "plugins": []}
