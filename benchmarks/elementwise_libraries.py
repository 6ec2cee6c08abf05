"""Time dl.free's activation and layer-norm kernels, NumPy's and numba's compiled loops,
against plain numexpr and numba expressions on the same arrays: the measurement behind
docs/performance.md's "Elementwise kernels". Each library is skipped when it is not
installed (numba is the optional dlfree[numba]; numexpr is not used by dl.free):

    pip install numexpr numba && python benchmarks/elementwise_libraries.py
"""

from __future__ import annotations

import importlib.util
import math

import dlfree as dl
import dlfree.functional as F
from dlfree.backends import numba_kernels, special

import numpy as np
from median_time import median_ms

ROWS, DIM = 4096, 768
K = np.float32(math.sqrt(2 / math.pi))


def _dlfree_cases(compiled: bool):
    """dl.free's kernels, with numba's compiled loops (dlfree.backends.numba_kernels) on
    or off: GELU forward and backward and layer norm forward, where those loops exist."""
    def cases(x) -> dict:
        numba_kernels.set_enabled(compiled)
        t, g = dl.tensor(x), np.ones_like(x)
        found = {"tanh-GELU": lambda: F.gelu(t, approximate="tanh"), "SiLU": lambda: F.silu(t),
                 "exact GELU": lambda: F.gelu(t), "exact GELU backward":
                 lambda: special.gelu_grad(np, g, x), "LayerNorm(768)":
                 lambda: F.layer_norm(t, (DIM,))}
        return found if not compiled else {k: found[k] for k in
                                           ("exact GELU", "exact GELU backward", "LayerNorm(768)")}
    return cases


def _numexpr_cases(x) -> dict:
    import numexpr as ne

    out = np.empty_like(x)
    return {"tanh-GELU": lambda: ne.evaluate("0.5*x*(1+tanh(k*(x+0.044715*x*x*x)))",
                                             local_dict={"x": x, "k": K}, out=out),
            "SiLU": lambda: ne.evaluate("x/(1+exp(-x))", local_dict={"x": x}, out=out)}


def _numba_cases(x) -> dict:
    import numba

    @numba.njit(parallel=True)
    def exact_gelu(x, out):
        flat, o = x.reshape(-1), out.reshape(-1)
        for i in numba.prange(flat.size):
            v = flat[i]
            o[i] = np.float32(0.5) * v * (np.float32(1) + math.erf(v * np.float32(0.70710678)))

    out = np.empty_like(x)
    return {"exact GELU": lambda: exact_gelu(x, out)}


def main() -> None:
    x = np.random.default_rng(0).standard_normal((ROWS, DIM), dtype=np.float32)
    libraries = {"dl.free (NumPy)": _dlfree_cases(False)}
    if importlib.util.find_spec("numba"):
        libraries["dl.free (numba loops)"] = _dlfree_cases(True)
    for name, cases in (("numexpr", _numexpr_cases), ("numba", _numba_cases)):
        if importlib.util.find_spec(name):
            libraries[name] = cases
        else:
            print(f"{name} is not installed: skipped")
    print(f"forward on ({ROWS}, {DIM}) float32, median ms, {dl.get_num_threads()} thread(s)")
    with dl.no_grad():
        for library, cases in libraries.items():
            timed = ", ".join(f"{case} {median_ms(fn):.2f}" for case, fn in cases(x).items())
            print(f"  {library}: {timed}")


if __name__ == "__main__":
    main()
