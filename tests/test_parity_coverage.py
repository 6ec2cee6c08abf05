"""Every torch name dl.free implements (as scripts/gen_torch_coverage.py counts them) is
exercised by a row of the op-parity harness, or is listed in `ELSEWHERE` with the test
file that checks it and the reason it has no row.

A row exercises a name when its call, run on dl.free's side, calls the name itself: for
the run every implemented name of each surface is wrapped so that a top-level call is
recorded (the calls ops make among themselves are not). A name bound to the same function
on two surfaces (`Tensor.sin` and `dl.sin`) is exercised by a row that calls either. The
rows are the `Case`s of every test module that uses support.parity.
"""

from __future__ import annotations

import functools
import importlib.util
import inspect
import re
import runpy
import warnings
from pathlib import Path

import dlfree as dl

import pytest

from support.parity import Case, _build
from support.specs import make_arrays

ROOT = Path(__file__).resolve().parents[1]
COVERAGE = runpy.run_path(str(ROOT / "scripts" / "gen_torch_coverage.py"))

RANDOM = ("draws random numbers: NumPy's PCG64 generator gives other values than torch's, "
          "so the distributions and the seeding are tested instead")
STATE = "the generator's state and seeding, tested for reproducibility"
NOT_AN_OP = "not an op on tensor values: a query, setting or conversion, tested directly"
AUTOGRAD = "autograd machinery: tested on graphs against torch's results"
FILES = "reads and writes files, tested by round trips and damaged files"
UNINITIALISED = "returns uninitialised memory: only its shape and dtype can be compared"
FUNCTIONAL = ("transforms of functions (jacobian, hessian, ...), tested against "
              "torch.autograd.functional")
DEVICES = "moves or pins memory across devices, tested on the devices present"

CORE = "tests/core/"
ELSEWHERE = {
    **{f"torch:{n}": (CORE + "test_sampling.py", RANDOM) for n in ("bernoulli", "multinomial")},
    **{f"torch:{n}": (CORE + "test_creation.py", RANDOM) for n in (
        "normal", "rand", "rand_like", "randint", "randint_like", "randn", "randn_like",
        "randperm")},
    **{f"torch.Tensor:{n}": (CORE + "test_sampling.py", RANDOM) for n in (
        "bernoulli", "bernoulli_", "cauchy_", "exponential_", "geometric_", "log_normal_",
        "multinomial", "normal_", "random_", "uniform_")},
    **{f"torch.nn.functional:{n}": (CORE + "test_dropout.py", RANDOM) for n in (
        "dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout",
        "feature_alpha_dropout")},
    **{f"torch:{n}": (CORE + "test_creation.py", STATE) for n in (
        "get_rng_state", "set_rng_state", "manual_seed", "seed", "initial_seed")},
    **{f"torch:{n}": (CORE + "test_io_objects.py", FILES) for n in ("save", "load")},
    **{f"torch.autograd.functional:{n}": (CORE + "test_autograd_functional.py", FUNCTIONAL)
       for n in ("hessian", "hvp", "jacobian", "jvp", "vhp", "vjp")},
    "torch:vmap": (CORE + "test_autograd_functional.py", FUNCTIONAL),
    **{f"torch.Tensor:{n}": (CORE + "test_autograd.py", AUTOGRAD) for n in (
        "backward", "grad", "grad_fn", "register_hook", "register_post_accumulate_grad_hook",
        "requires_grad", "requires_grad_", "retain_grad", "retains_grad")},
    "torch.Tensor:is_leaf": (CORE + "test_tensor.py", AUTOGRAD),
    "torch:is_grad_enabled": (CORE + "test_autograd.py", NOT_AN_OP),
    **{f"torch:{n}": (CORE + "test_creation.py", NOT_AN_OP) for n in (
        "get_default_dtype", "set_default_dtype")},
    **{f"torch:{n}": (CORE + "test_threads.py", NOT_AN_OP) for n in (
        "get_num_threads", "set_num_threads")},
    "torch:compile": (CORE + "test_torch_names.py", "returns the model as it is (dl.free "
                                                    "runs eagerly), tested as such"),
    "torch.Tensor:numpy": (CORE + "test_tensor.py", NOT_AN_OP),
    "torch.Tensor:device": (CORE + "test_tensor.py", NOT_AN_OP),
    **{f"torch.Tensor:{n}": (CORE + "test_tensor.py", DEVICES) for n in ("cuda", "is_cuda")},
    **{f"torch.Tensor:{n}": (CORE + "test_torch_names.py", DEVICES) for n in (
        "pin_memory", "is_pinned")},
    "torch:empty": (CORE + "test_creation.py", UNINITIALISED),
    "torch:empty_like": (CORE + "test_creation.py", UNINITIALISED),
    "torch.Tensor:new_empty": (CORE + "test_creation.py", UNINITIALISED),
}


def _rows() -> list[Case]:
    """The Case rows of every test module that uses the parity harness."""
    rows = []
    for path in sorted((ROOT / "tests").rglob("test_*.py")):
        if "from support.parity import" not in path.read_text():
            continue
        spec = importlib.util.spec_from_file_location(f"_rows_of_{path.stem}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        for value in vars(module).values():
            items = value if isinstance(value, list | tuple) else [value]
            rows += [c for c in items if isinstance(c, Case)]
    return rows


def _implemented() -> dict:
    """surface:name -> (dl.free's object holding it, the name), for every implemented name."""
    names = {}
    for surface in COVERAGE["SURFACES"]:
        found = COVERAGE["classify"](surface)
        ours = COVERAGE["_resolve"](surface.ours_path)
        for name in [*found["implemented"], *found["differs"]]:
            names[f"{surface.torch_path}:{name}"] = (ours, name)
    return names


def _recording(calls: set, key: str, fn, depth: list):
    @functools.wraps(fn)
    def call(*args, **kwargs):
        if not depth[0]:
            calls.add(key)
        depth[0] += 1
        try:
            return fn(*args, **kwargs)
        finally:
            depth[0] -= 1

    return call


def _exercised(monkeypatch, implemented: dict) -> tuple[set, dict]:
    """The names the rows call, and for each name the names bound to the same function."""
    calls: set = set()
    depth = [0]
    same: dict = {}
    for key, (ours, name) in implemented.items():
        raw = inspect.getattr_static(ours, name) if isinstance(ours, type) else \
            getattr(ours, name)
        if isinstance(raw, property):  # an attribute such as Tensor.mT: record its getter
            wrapped = property(_recording(calls, key, raw.fget, depth), raw.fset, raw.fdel)
            monkeypatch.setattr(ours, name, wrapped)
        elif callable(raw) and not isinstance(raw, staticmethod | classmethod | type):
            monkeypatch.setattr(ours, name, _recording(calls, key, raw, depth))
        same.setdefault(id(raw), []).append(key)
    with warnings.catch_warnings():  # what the rows warn about, their own tests check
        warnings.simplefilter("ignore")
        for case in _rows():
            inputs, _ = _build(case, make_arrays(case.inputs, 0), case.dtypes[0], "cpu")
            case.fn(dl, *inputs)
    aliases = {key: group for group in same.values() for key in group}
    return calls, aliases


@pytest.fixture(scope="module")
def uncovered():
    implemented = _implemented()
    with pytest.MonkeyPatch.context() as monkeypatch:
        calls, aliases = _exercised(monkeypatch, implemented)
    return sorted(key for key in implemented
                  if not any(k in calls for k in aliases.get(key, [key])))


def test_every_implemented_name_has_a_parity_row_or_says_where_it_is_tested(uncovered):
    missing = [key for key in uncovered if key not in ELSEWHERE]
    assert not missing, (f"{len(missing)} implemented torch names have no parity row and no "
                         f"entry in ELSEWHERE: {', '.join(missing)}")


def test_no_name_is_listed_elsewhere_once_a_row_covers_it(uncovered):
    stale = sorted(set(ELSEWHERE) - set(uncovered))
    assert not stale, f"listed in ELSEWHERE but covered by a row (or not implemented): {stale}"


@pytest.mark.parametrize("key", sorted(ELSEWHERE))
def test_the_file_named_for_a_name_tests_it(key):
    path, reason = ELSEWHERE[key]
    name = key.partition(":")[2]
    assert reason and (ROOT / path).is_file(), f"{key}: {path} does not exist"
    assert re.search(rf"\b{re.escape(name)}\b", (ROOT / path).read_text()), \
        f"{key}: {path} never mentions {name}"
