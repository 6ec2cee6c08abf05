"""Parity cases for the names programs reach for besides the ops' own rows (see parity.py):
torch's aliases (`multiply`, `greater`, `not_equal`, ...), comparisons and bitwise ops,
creation functions, casts and the Tensor conversion methods (`.double()`, `type_as`,
`new_zeros`, ...), and queries whose answers are compared as tensors (`numel`, `size`,
`stride`, `allclose`, ...)."""

from __future__ import annotations

import numpy as np

from support.parity import Case, run_family
from support.specs import Float, Int

S = (3, 4)
POSITIVE = Float(S, 0.5, 2.0)
BITS = Int(S, 0, 64)


def answer(m, *values):
    """Python answers (ints, bools, sizes) as one tensor, so the harness compares them."""
    return m.tensor([int(v) for v in values])


CASES = [
    # aliases and operators by name
    Case("mul", lambda m, a, b: m.mul(a, b), [S, S]),
    Case("multiply", lambda m, a, b: m.multiply(a, b), [S, (4,)]),
    Case("mul_method", lambda m, a, b: a.mul(b), [S, S]),
    Case("multiply_method", lambda m, a: a.multiply(2.5), [S]),
    Case("floor_divide", lambda m, a, b: m.floor_divide(a, b), [S, POSITIVE], grad=False),
    Case("floor_divide_method", lambda m, a: a.floor_divide(0.7), [S], grad=False),
    Case("matrix_power", lambda m, a: m.matrix_power(a, 3), [(2, 3, 3)]),
    Case("matrix_power_method", lambda m, a: a.matrix_power(2), [(3, 3)]),
    Case("slogdet", lambda m, a: m.slogdet(a)[1], [(2, 3, 3)]),
    Case("slogdet_method", lambda m, a: a.slogdet()[1], [(3, 3)]),
    Case("clone", lambda m, a: m.clone(a) * 2, [S]),
    Case("clone_method", lambda m, a: a.clone(), [S]),
    Case("reshape_as", lambda m, a, b: a.reshape_as(b), [S, (2, 6)]),
    Case("real_imag", lambda m, a, b: (m.real(m.complex(a, b)), m.imag(m.complex(a, b))),
         [S, S]),
    Case("real_imag_methods", lambda m, a, b: (m.complex(a, b).real, m.complex(a, b).imag),
         [S, S]),
    Case("atleast_1d", lambda m, a: m.atleast_1d(a), [()]),
    Case("atleast_2d", lambda m, a: m.atleast_2d(a), [(3,)]),
    Case("atleast_3d", lambda m, a, b: m.atleast_3d(a, b), [(3,), S]),
    # comparisons and finiteness (boolean results)
    *(Case(name, lambda m, a, b, name=name: getattr(m, name)(a, b), [S, S], grad=False)
      for name in ("eq", "ne", "gt", "lt", "greater", "less", "not_equal")),
    *(Case(f"{name}_method", lambda m, a, name=name: getattr(a, name)(0.1), [S], grad=False)
      for name in ("eq", "ne", "gt", "lt", "greater", "less", "not_equal")),
    Case("isfinite", lambda m, a: m.isfinite(a / (a > 0)), [S], grad=False),
    Case("isfinite_method", lambda m, a: (a.log()).isfinite(), [S], grad=False),
    Case("allclose_equal", lambda m, a, b: answer(
        m, m.allclose(a, a + 1e-9), m.allclose(a, b), a.allclose(a * (1 + 1e-7)),
        m.equal(a, a.clone()), a.equal(b)), [S, S], grad=False),
    # bitwise
    *(Case(name, lambda m, a, b, name=name: getattr(m, name)(a, b), [BITS, BITS], grad=False)
      for name in ("bitwise_and", "bitwise_or", "bitwise_xor")),
    *(Case(f"{name}_method", lambda m, a, b, name=name: getattr(a, name)(b), [BITS, BITS],
           grad=False) for name in ("bitwise_and", "bitwise_or", "bitwise_xor")),
    Case("bitwise_not", lambda m, a: (m.bitwise_not(a), a.bitwise_not()), [BITS], grad=False),
    # creation
    Case("arange", lambda m: (m.arange(5), m.arange(1.0, 2.0, 0.25), m.arange(6, 0, -2)), [],
         grad=False),
    Case("linspace", lambda m: m.linspace(-1.0, 2.0, 7), [], grad=False),
    Case("full", lambda m: (m.full((2, 3), 1.5), m.full((2,), 7)), [], grad=False),
    Case("likes", lambda m, a: (m.zeros_like(a), m.ones_like(a), m.full_like(a, -2.0),
                                m.full_like(a, 3, dtype=m.int64)), [S], grad=False),
    Case("as_tensor", lambda m, a: m.as_tensor(a.tolist()) * 2, [S], grad=False),
    Case("from_numpy", lambda m, a: m.from_numpy(np.arange(6.0).reshape(2, 3)) + 0 * a.sum(),
         [()], grad=False),
    Case("new_tensors", lambda m, a: (a.new_zeros(2, 3), a.new_ones((3,)), a.new_full((2,), 4.0),
                                      a.new_tensor([[1.0, 2.0]])), [S], grad=False),
    # casts and conversions
    # (a rounding to 16 bits steps under finite differences: torch's gradients, no gradcheck)
    Case("float_double_half", lambda m, a: (a.double() * 2, a.half().float(),
                                            a.float() * 3), [S], gradcheck=False),
    Case("bfloat16", lambda m, a: a.bfloat16().float(), [S], gradcheck=False),
    Case("integer_casts", lambda m, a: (a.int(), a.long(), a.short(), a.char(),
                                        (a.abs() * 9).byte(), a.bool()),
         [Float(S, -20.0, 20.0)], grad=False),
    Case("type_and_type_as", lambda m, a, b: (a.type(m.float64), a.type_as(b.int())),
         [Float(S, -5.0, 5.0), S], grad=False),
    Case("cpu", lambda m, a: a.cpu() * 2, [S]),
    Case("data", lambda m, a: a.data * 2, [S], grad=False),
    Case("tolist", lambda m, a: m.tensor(a.tolist()), [S], grad=False),
    # sizes, strides and counts
    Case("sizes", lambda m, a: answer(m, a.dim(), a.numel(), a.nelement(), m.numel(a),
                                      a.element_size(), *a.size(), a.size(-1),
                                      *a.stride(), a.stride(0), a.is_contiguous(),
                                      a.mT.is_contiguous(), m.is_tensor(a), m.is_tensor(1.0),
                                      m.is_floating_point(a), a.is_floating_point(),
                                      a.int().is_floating_point(),
                                      *m.broadcast_shapes((3, 1), (1, 4), (4,))),
         [(2, 3, 4)], grad=False),
    # fft's sample frequencies
    Case("fftfreq", lambda m: (m.fft.fftfreq(8, 0.1), m.fft.fftfreq(7)), [], grad=False),
    Case("rfftfreq", lambda m: (m.fft.rfftfreq(8, 0.1), m.fft.rfftfreq(7, 2.0)), [],
         grad=False),
]

test_forward, test_grad, test_gradcheck, test_gradgrad = run_family(CASES)
