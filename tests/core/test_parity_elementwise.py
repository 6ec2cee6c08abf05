"""Parity cases for elementwise arithmetic and math functions (see parity.py)."""

from __future__ import annotations

from parity import Case, Float, run_family

S = (3, 4)
POS = Float(S, 0.5, 2.0)

CASES = [
    Case("add", lambda m, a, b: a + b, [S, S], gradgrad=True),
    Case("add_broadcast", lambda m, a, b: a + b, [(2, 3, 4), (3, 1)]),
    Case("add_scalar", lambda m, a: a + 2.5, [S]),
    Case("add_alpha", lambda m, a, b: m.add(a, b, alpha=-0.5), [S, (4,)]),
    Case("radd_scalar", lambda m, a: 2 + a, [S]),
    Case("sub_broadcast", lambda m, a, b: a - b, [(4,), (2, 1, 4)], gradgrad=True),
    Case("rsub_scalar", lambda m, a: 1.5 - a, [S]),
    Case("mul", lambda m, a, b: a * b, [S, S], gradgrad=True),
    Case("mul_broadcast", lambda m, a, b: a * b, [(5, 1, 3), (4, 1)], gradgrad=True),
    Case("mul_0d", lambda m, a, b: a * b, [(), S]),
    Case("div", lambda m, a, b: a / b, [S, POS], gradgrad=True),
    Case("rdiv_scalar", lambda m, a: 2.0 / a, [POS]),
    Case("pow_scalar", lambda m, a: a ** 3, [S], gradgrad=True),
    Case("pow_fractional", lambda m, a: a ** 0.5, [POS], gradgrad=True),
    Case("pow_tensor", lambda m, a, b: a ** b, [POS, S], gradgrad=True),
    Case("rpow", lambda m, a: 2.0 ** a, [S]),
    Case("neg", lambda m, a: -a, [S]),
    Case("exp", lambda m, a: a.exp(), [S], gradgrad=True),
    Case("log", lambda m, a: a.log(), [POS], gradgrad=True),
    Case("tanh", lambda m, a: m.tanh(a), [S], gradgrad=True),
    Case("sigmoid", lambda m, a: m.sigmoid(a), [S], gradgrad=True),
    Case("empty", lambda m, a, b: a * b, [(0, 3), (3,)]),
]

test_forward, test_grad, test_gradcheck, test_gradgrad = run_family(CASES)
