"""dl.amp's per-op policies: every op that declares one computes as it says under autocast,
the table `dl.amp.policies()` lists exactly the declarations, and the declarations follow
torch's autocast lists.

autocast follows torch's CUDA float16 policy. torch's CPU autocast differs (it keeps fewer ops
in float32 and promotes only cat and stack), so each policy is checked as written: "lower"
ops on float32 inputs give the op on float16 inputs bit for bit, "float32" ops on float16
inputs the op on float32 inputs, "promote" ops on mixed inputs the op on inputs cast to the
widest. Where torch.autocast("cpu", float16) applies the same policy it is the oracle too.
Case ids are "op" or "op:variant", so that the tables can be checked against the policy table.
"""

from __future__ import annotations

import ast
import gc
import importlib.util
import pathlib

import dlfree as dl
import dlfree.nn as nn

import numpy as np
import pytest
import torch

F = dl.functional
TF = torch.nn.functional
HALF, FLOAT = "float16", "float32"


def _int(*shape, high=3):
    return ("int", shape, high)


# (case, call written once for both libraries as fn(module, functional, *inputs), inputs).
# Inputs are float shapes unless marked int, drawn from [0.2, 1) (valid probabilities,
# variances, targets and arguments of asin, acos and erfinv).
LOWER = [
    ("linear", lambda m, f, x, w, b: f.linear(x, w, b), [(4, 6), (5, 6), (5,)]),
    ("linear:3d", lambda m, f, x, w: f.linear(x, w), [(2, 4, 6), (5, 6)]),
    ("matmul", lambda m, f, a, b: m.matmul(a, b), [(2, 3, 4), (4, 5)]),
    ("matmul:operator", lambda m, f, a, b: a @ b, [(3, 4), (4,)]),
    ("mm", lambda m, f, a, b: m.mm(a, b), [(3, 4), (4, 5)]),
    ("multi_dot", lambda m, f, a, b, c: m.linalg.multi_dot([a, b, c]), [(2, 3), (3, 4), (4, 2)]),
    ("vecdot", lambda m, f, a, b: m.linalg.vecdot(a, b), [(3, 4), (3, 4)]),
    ("bmm", lambda m, f, a, b: m.bmm(a, b), [(2, 3, 4), (2, 4, 5)]),
    ("einsum", lambda m, f, a, b: m.einsum("bij,jk->bik", a, b), [(2, 3, 4), (4, 5)]),
    ("einsum:list", lambda m, f, a, b: m.einsum("ij,ij->i", [a, b]), [(3, 4), (3, 4)]),
    ("conv1d", lambda m, f, x, w, b: f.conv1d(x, w, b, padding=1), [(2, 3, 7), (4, 3, 3), (4,)]),
    ("conv2d", lambda m, f, x, w: f.conv2d(x, w, stride=2), [(2, 3, 6, 6), (4, 3, 3, 3)]),
    ("conv3d", lambda m, f, x, w: f.conv3d(x, w), [(1, 2, 4, 4, 4), (3, 2, 2, 2, 2)]),
    ("conv_transpose1d", lambda m, f, x, w, b: f.conv_transpose1d(x, w, b, stride=2),
     [(2, 3, 5), (3, 4, 3), (4,)]),
    ("conv_transpose2d", lambda m, f, x, w: f.conv_transpose2d(x, w), [(1, 3, 4, 4), (3, 2, 3, 3)]),
    ("conv_transpose3d", lambda m, f, x, w: f.conv_transpose3d(x, w),
     [(1, 2, 3, 3, 3), (2, 2, 2, 2, 2)]),
    ("scaled_dot_product_attention",
     lambda m, f, q, k, v: f.scaled_dot_product_attention(q, k, v, is_causal=True),
     [(2, 3, 5, 4), (2, 3, 5, 4), (2, 3, 5, 4)]),
    ("prelu", lambda m, f, x, w: f.prelu(x, w), [(2, 3, 4), (3,)]),
    ("prelu:shared", lambda m, f, x, w: f.prelu(x, w), [(2, 3), (1,)]),
    ("mv", lambda m, f, a, v: m.mv(a, v), [(3, 4), (4,)]),
    ("addmm", lambda m, f, c, a, b: m.addmm(c, a, b), [(3, 5), (3, 4), (4, 5)]),
    ("addmv", lambda m, f, c, a, v: m.addmv(c, a, v), [(3,), (3, 4), (4,)]),
    ("baddbmm", lambda m, f, c, a, b: m.baddbmm(c, a, b), [(2, 3, 5), (2, 3, 4), (2, 4, 5)]),
    ("addbmm", lambda m, f, c, a, b: c.addbmm(a, b), [(3, 5), (2, 3, 4), (2, 4, 5)]),
]

FLOAT32 = [
    ("softmax", lambda m, f, x: f.softmax(x, dim=1), [(3, 5)]),
    ("softmax:method", lambda m, f, x: x.softmax(0), [(3, 5)]),
    ("log_softmax", lambda m, f, x: f.log_softmax(x, dim=-1), [(3, 5)]),
    ("softmin", lambda m, f, x: f.softmin(x, dim=1), [(3, 5)]),
    ("logsumexp", lambda m, f, x: m.logsumexp(x, 1), [(3, 5)]),
    ("softplus", lambda m, f, x: f.softplus(x, beta=2.0), [(3, 5)]),
    ("layer_norm", lambda m, f, x, w, b: f.layer_norm(x, (5,), w, b), [(3, 5), (5,), (5,)]),
    # torch runs batch_norm in the input's dtype; dl.free keeps it in float32 with the
    # other norms, and never casts the running statistics (they are updated in place)
    ("batch_norm", lambda m, f, x, w, b: f.batch_norm(x, None, None, w, b, training=True),
     [(4, 3, 2), (3,), (3,)]),
    ("group_norm", lambda m, f, x, w, b: f.group_norm(x, 2, w, b), [(2, 4, 3), (4,), (4,)]),
    ("rms_norm", lambda m, f, x, w: f.rms_norm(x, (5,), w, eps=1e-6), [(3, 5), (5,)]),
    ("normalize", lambda m, f, x: f.normalize(x, dim=1), [(3, 5)]),
    ("mse_loss", lambda m, f, x, t: f.mse_loss(x, t), [(3, 4), (3, 4)]),
    ("l1_loss", lambda m, f, x, t: f.l1_loss(x, t), [(3, 4), (3, 4)]),
    ("smooth_l1_loss", lambda m, f, x, t: f.smooth_l1_loss(x, t), [(3, 4), (3, 4)]),
    ("huber_loss", lambda m, f, x, t: f.huber_loss(x, t, delta=0.5), [(3, 4), (3, 4)]),
    ("cross_entropy", lambda m, f, x, t: f.cross_entropy(x, t), [(4, 3), _int(4)]),
    ("cross_entropy:weighted", lambda m, f, x, t, w: f.cross_entropy(x, t, weight=w),
     [(4, 3), _int(4), (3,)]),
    ("nll_loss", lambda m, f, x, t: f.nll_loss(x, t), [(4, 3), _int(4)]),
    ("binary_cross_entropy_with_logits",
     lambda m, f, x, t: f.binary_cross_entropy_with_logits(x, t), [(3, 4), (3, 4)]),
    ("binary_cross_entropy", lambda m, f, x, t: f.binary_cross_entropy(x, t),
     [(3, 4), (3, 4)]),
    ("kl_div", lambda m, f, x, t: f.kl_div(x, t, reduction="batchmean", log_target=True),
     [(3, 4), (3, 4)]),
    ("poisson_nll_loss", lambda m, f, x, t: f.poisson_nll_loss(x, t), [(3, 4), (3, 4)]),
    ("gaussian_nll_loss", lambda m, f, x, t, v: f.gaussian_nll_loss(x, t, v),
     [(3, 4), (3, 4), (3, 4)]),
    ("cosine_embedding_loss", lambda m, f, a, b, t: f.cosine_embedding_loss(a, b, t.sign()),
     [(3, 4), (3, 4), (3,)]),
    ("margin_ranking_loss", lambda m, f, a, b, t: f.margin_ranking_loss(a, b, t.sign()),
     [(4,), (4,), (4,)]),
    ("hinge_embedding_loss", lambda m, f, x, t: f.hinge_embedding_loss(x, t.sign()),
     [(3, 4), (3, 4)]),
    ("triplet_margin_loss", lambda m, f, a, p, n: f.triplet_margin_loss(a, p, n),
     [(3, 4), (3, 4), (3, 4)]),
    ("multi_margin_loss", lambda m, f, x, t: f.multi_margin_loss(x, t), [(4, 3), _int(4)]),
    ("multilabel_soft_margin_loss",
     lambda m, f, x, t: f.multilabel_soft_margin_loss(x, t), [(3, 4), (3, 4)]),
    # blank is class 0, so the targets are shifted to classes 1 and 2
    ("ctc_loss", lambda m, f, x, t: f.ctc_loss(x, t + 1, [5, 5], [2, 2]),
     [(5, 2, 4), _int(2, 2, high=2)]),
    ("sum", lambda m, f, x: x.sum(), [(3, 4)]),
    ("sum:dim", lambda m, f, x: m.sum(x, 1, keepdim=True), [(3, 4)]),
    ("prod", lambda m, f, x: x.prod(1), [(3, 4)]),
    ("cumsum", lambda m, f, x: x.cumsum(0), [(3, 4)]),
    ("cumprod", lambda m, f, x: m.cumprod(x, 1), [(3, 4)]),
    ("norm", lambda m, f, x: x.norm(), [(3, 4)]),
    ("vector_norm", lambda m, f, x: m.linalg.vector_norm(x, 3, dim=1), [(3, 4)]),
    ("matrix_norm", lambda m, f, x: m.linalg.matrix_norm(x, 1), [(3, 4)]),
    ("exp", lambda m, f, x: x.exp(), [(3, 4)]),
    ("expm1", lambda m, f, x: m.expm1(x), [(3, 4)]),
    ("log", lambda m, f, x: m.log(x), [(3, 4)]),
    ("log2", lambda m, f, x: x.log2(), [(3, 4)]),
    ("log10", lambda m, f, x: x.log10(), [(3, 4)]),
    ("log1p", lambda m, f, x: x.log1p(), [(3, 4)]),
    ("rsqrt", lambda m, f, x: x.rsqrt(), [(3, 4)]),
    ("reciprocal", lambda m, f, x: x.reciprocal(), [(3, 4)]),
    ("tan", lambda m, f, x: x.tan(), [(3, 4)]),
    ("asin", lambda m, f, x: x.asin(), [(3, 4)]),
    ("acos", lambda m, f, x: m.acos(x), [(3, 4)]),
    ("sinh", lambda m, f, x: x.sinh(), [(3, 4)]),
    ("cosh", lambda m, f, x: x.cosh(), [(3, 4)]),
    ("erfinv", lambda m, f, x: x.erfinv(), [(3, 4)]),
    ("pow", lambda m, f, x: x ** 2, [(3, 4)]),
    ("pow:tensor", lambda m, f, x, y: m.pow(x, y), [(3, 4), (3, 4)]),
    ("pow:reflected", lambda m, f, x: 2.0 ** x, [(3, 4)]),
    ("pow:square", lambda m, f, x: m.square(x), [(3, 4)]),
    ("cdist", lambda m, f, a, b: m.cdist(a, b), [(3, 4), (5, 4)]),
    ("dist", lambda m, f, a, b: m.dist(a, b), [(3, 4), (3, 4)]),
    ("renorm", lambda m, f, x: x.renorm(2, 0, 0.5), [(3, 4)]),
]

# torch.autocast("cpu") keeps these in float32 as well (torch's CPU list)
TORCH_CPU_FLOAT32 = {"mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "nll_loss",
                     "binary_cross_entropy_with_logits", "binary_cross_entropy",
                     "poisson_nll_loss", "cosine_embedding_loss", "margin_ranking_loss",
                     "hinge_embedding_loss", "triplet_margin_loss", "multi_margin_loss",
                     "ctc_loss"}

# the first floating input is float16, the others float32
PROMOTE = [
    ("dot", lambda m, f, a, b: m.dot(a, b), [(4,), (4,)]),
    ("vdot", lambda m, f, a, b: m.vdot(a, b), [(4,), (4,)]),
    ("cross", lambda m, f, a, b: m.cross(a, b, dim=1), [(2, 3), (2, 3)]),
    ("tensordot", lambda m, f, a, b: m.tensordot(a, b, 1), [(3, 4), (4, 5)]),
    ("bilinear", lambda m, f, a, b, w, c: f.bilinear(a, b, w, c),
     [(2, 3), (2, 4), (5, 3, 4), (5,)]),
    ("addcmul", lambda m, f, x, a, b: m.addcmul(x, a, b, value=0.5), [(3, 4), (3, 4), (3, 4)]),
    ("addcdiv", lambda m, f, x, a, b: m.addcdiv(x, a, b), [(3, 4), (3, 4), (3, 4)]),
    ("atan2", lambda m, f, a, b: m.atan2(a, b), [(3, 4), (3, 4)]),
    ("cat", lambda m, f, a, b: m.cat([a, b], 1), [(3, 4), (3, 2)]),
    ("stack", lambda m, f, a, b: m.stack((a, b)), [(3, 4), (3, 4)]),
    ("index_put", lambda m, f, x, i, v: m.index_put(x, (i,), v), [(4, 3), _int(2, high=4), (2, 3)]),
    ("scatter_add", lambda m, f, x, i, s: m.scatter_add(x, 0, i, s),
     [(4, 3), _int(2, 3, high=4), (2, 3)]),
]

# torch.autocast("cpu") gives the widest dtype too (cat and stack by its policy, the rest
# by their own promotion)
TORCH_CPU_PROMOTE = {"cat", "stack", "atan2", "addcmul", "addcdiv"}

# ops without a policy run in their inputs' dtype (mixed inputs promote as usual)
UNCHANGED = [
    ("relu", lambda m, f, x: f.relu(x), [(3, 4)], HALF),
    ("mean", lambda m, f, x: x.mean(), [(3, 4)], HALF),
    ("sqrt", lambda m, f, x: x.sqrt(), [(3, 4)], HALF),
    ("sigmoid", lambda m, f, x: x.sigmoid(), [(3, 4)], HALF),
    ("add_promotes", lambda m, f, x, y: x + y.float(), [(3, 4), (3, 4)], FLOAT),
    ("mul", lambda m, f, x, y: x * y, [(3, 4), (3, 4)], HALF),
    # an op without a policy that is written from ops with one (a local response norm of
    # matmul and pow) takes theirs, as its torch version does
    ("local_response_norm", lambda m, f, x: f.local_response_norm(x, 2), [(2, 3, 4)], FLOAT),
]

# the recurrence behind nn.RNN/LSTM/GRU and their cells, checked by its own test below
SEPARATE = {"recurrence"}


def _op(case: str) -> str:
    return case.split(":")[0]


def _inputs(specs, dtypes, seed: int = 0) -> list:
    """Arrays for `specs`; floating ones take the dtypes in turn (the last one repeats)."""
    rng = np.random.default_rng(seed)
    arrays, floating = [], 0
    for spec in specs:
        if isinstance(spec, tuple) and spec and spec[0] == "int":
            arrays.append(rng.integers(0, spec[2], spec[1]))
        else:
            dtype = dtypes[min(floating, len(dtypes) - 1)]
            arrays.append(rng.uniform(0.2, 1.0, spec).astype(dtype))
            floating += 1
    return arrays


def _run(fn, arrays, requires_grad: bool = False):
    tensors = [dl.tensor(a, requires_grad=requires_grad and a.dtype.kind == "f")
               for a in arrays]
    return fn(dl, F, *tensors), tensors


def _as(arrays, dtype: str) -> list:
    return [a.astype(dtype) if a.dtype.kind == "f" else a for a in arrays]


def _torch(fn, arrays):
    return fn(torch, TF, *[torch.from_numpy(a) for a in arrays])


# ------------------------------------------------------------- each policy's effect
# lowered by torch's CUDA autocast (which dl.free follows) but not by its CPU one
TORCH_CUDA_ONLY_LOWER = {"mv", "addmv"}


@pytest.mark.parametrize("case, fn, specs", LOWER, ids=[c[0] for c in LOWER])
def test_lower_precision_ops_compute_in_float16(case, fn, specs):
    arrays = _inputs(specs, [FLOAT])
    with dl.amp.autocast("cpu"):
        out, _ = _run(fn, arrays)
    with torch.autocast("cpu", dtype=torch.float16):
        expected = _torch(fn, arrays)
    assert out.dtype == dl.float16
    assert expected.dtype == (torch.float32 if _op(case) in TORCH_CUDA_ONLY_LOWER else
                              torch.float16)
    # the cast happens at the op's entry: the same op on float16 inputs, bit for bit
    plain, _ = _run(fn, _as(arrays, HALF))
    np.testing.assert_array_equal(out.numpy(), plain.numpy())
    np.testing.assert_allclose(out.numpy(), expected.float().numpy(), rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("case, fn, specs", FLOAT32, ids=[c[0] for c in FLOAT32])
def test_float32_ops_compute_in_float32(case, fn, specs):
    arrays = _inputs(specs, [HALF])
    with dl.amp.autocast("cpu"):
        out, _ = _run(fn, arrays)
    assert out.dtype == dl.float32
    plain, _ = _run(fn, _as(arrays, FLOAT))
    np.testing.assert_array_equal(out.numpy(), plain.numpy())
    if _op(case) in TORCH_CPU_FLOAT32:
        with torch.autocast("cpu", dtype=torch.float16):
            expected = _torch(fn, arrays)
        assert expected.dtype == torch.float32
        # float32 on both sides; the losses sum a few terms in different orders
        np.testing.assert_allclose(out.numpy(), expected.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("case, fn, specs", PROMOTE, ids=[c[0] for c in PROMOTE])
def test_promoting_ops_compute_in_the_widest_input_dtype(case, fn, specs):
    arrays = _inputs(specs, [HALF, FLOAT])
    with dl.amp.autocast("cpu"):
        out, _ = _run(fn, arrays)
    assert out.dtype == dl.float32
    plain, _ = _run(fn, _as(arrays, FLOAT))
    np.testing.assert_array_equal(out.numpy(), plain.numpy())
    if _op(case) in TORCH_CPU_PROMOTE:
        with torch.autocast("cpu", dtype=torch.float16):
            expected = _torch(fn, arrays)
        assert expected.dtype == torch.float32
        np.testing.assert_allclose(out.numpy(), expected.numpy(), rtol=1e-6, atol=1e-7)
    # inputs of one dtype stay in it: promoting ops are not lowered, and their inner ops
    # (bilinear's sum, tensordot's einsum) are not autocast on their own
    for dtype, name in ((FLOAT, dl.float32), (HALF, dl.float16)):
        same = _as(arrays, dtype)
        with dl.amp.autocast("cpu"):
            out, _ = _run(fn, same)
        assert out.dtype == name
        np.testing.assert_array_equal(out.numpy(), _run(fn, same)[0].numpy())


@pytest.mark.parametrize("case, fn, specs, dtype", UNCHANGED, ids=[c[0] for c in UNCHANGED])
def test_other_ops_keep_their_inputs_dtype(case, fn, specs, dtype):
    with dl.amp.autocast("cpu"):
        out, _ = _run(fn, _inputs(specs, [HALF]))
    assert out.dtype == getattr(dl, dtype)


_ALL = [(c, fn, specs, [FLOAT]) for c, fn, specs in LOWER] + \
    [(c, fn, specs, [HALF]) for c, fn, specs in FLOAT32] + \
    [(c, fn, specs, [HALF, FLOAT]) for c, fn, specs in PROMOTE]


@pytest.mark.parametrize("case, fn, specs, dtypes", _ALL, ids=[c[0] for c in _ALL])
def test_gradients_come_back_in_each_inputs_dtype(case, fn, specs, dtypes):
    """The casts are recorded: a float32 weight of a float16 op gets a float32 gradient,
    a float16 input of a float32 op a float16 one."""
    with dl.amp.autocast("cpu"):
        out, leaves = _run(fn, _inputs(specs, dtypes), requires_grad=True)
    out.float().sum().backward()
    floating = [t for t in leaves if t.requires_grad]
    assert floating[0].grad is not None
    for t in floating:
        assert t.grad is None or t.grad.dtype == t.dtype


@pytest.mark.parametrize("layer", [
    lambda: nn.LSTM(4, 6, num_layers=2, bidirectional=True),
    lambda: nn.LSTM(4, 6, proj_size=3),
    lambda: nn.GRU(4, 6),
    lambda: nn.RNN(4, 6, nonlinearity="relu"),
    lambda: nn.LSTMCell(4, 6),
    lambda: nn.GRUCell(4, 6),
], ids=["lstm", "lstm_proj", "gru", "rnn", "lstm_cell", "gru_cell"])
def test_the_recurrence_computes_in_float16(layer):
    """torch casts its RNN cells and cuDNN's RNN to float16 ("lower"); its CPU autocast has
    no RNN policy (LSTMs fail in oneDNN), so the check is the policy: the float32 layer
    under autocast computes as its float16 copy, and its weights get float32 gradients."""
    dl.manual_seed(0)
    model = layer()
    half = layer()
    half.load_state_dict(model.state_dict())
    half.half()
    x = dl.rand(5, 4) if "Cell" in type(model).__name__ else dl.rand(5, 2, 4)
    with dl.amp.autocast("cpu"):
        out = model(x)
    out = out[0] if isinstance(out, tuple) else out
    plain = half(x.half())
    plain = plain[0] if isinstance(plain, tuple) else plain
    assert out.dtype == dl.float16
    np.testing.assert_array_equal(out.detach().numpy(), plain.detach().numpy())
    out.float().sum().backward()
    assert all(p.grad is not None and p.grad.dtype == dl.float32 for p in model.parameters())


# ------------------------------------------------------------------- the table
def test_the_table_lists_every_declared_policy_and_each_has_a_test():
    table = dl.amp.policies()
    assert set(table.values()) <= set(dl.autograd.autocasting.POLICIES)
    tested = {_op(c[0]): "lower" for c in LOWER} | {_op(c[0]): "float32" for c in FLOAT32} | \
        {_op(c[0]): "promote" for c in PROMOTE} | {"recurrence": "lower"}
    assert table == tested
    assert list(table) == sorted(table)


def _scale3_run() -> tuple:
    """A Function declared with a policy, used inside and outside a region."""
    class Scale3(dl.autograd.Function):
        autocast = "lower"

        def forward(self, x):
            return x * 3

        def backward(self, g):
            return (g * 3,)

    x = dl.ones(2, requires_grad=True)
    with dl.amp.autocast():
        y = Scale3.apply(x)
    listed = dl.amp.policies().get("scale3")
    y.float().sum().backward()
    return y.dtype, listed, x.grad.dtype, x.grad.tolist(), Scale3.apply(x).dtype


def test_a_function_declares_its_policy_and_joins_the_table():
    inside, listed, grad_dtype, grad, outside = _scale3_run()
    assert inside == dl.float16 and listed == "lower"
    assert grad_dtype == dl.float32 and grad == [3.0, 3.0]
    assert outside == dl.float32  # outside a region nothing is cast
    gc.collect()  # the table follows the classes that exist
    assert "scale3" not in dl.amp.policies()


def _typo_errors() -> list:
    class Typo(dl.autograd.Function):
        autocast = "float"

        def forward(self, x):
            return x

    errors = []
    for call in (dl.amp.policies, lambda: Typo.apply(dl.ones(2))):
        try:
            with dl.amp.autocast():
                call()
        except ValueError as e:
            errors.append(str(e))
    return errors


def test_declarations_are_checked():
    autocast_policy = dl.autograd.autocasting.autocast_policy
    with pytest.raises(ValueError, match="unknown autocast policy 'fp16'"):
        autocast_policy("fp16")
    with pytest.raises(ValueError, match=r"has no argument\(s\) \['weights'\]"):
        autocast_policy("float32", exclude=("weights",))(lambda input, weight: input)
    with pytest.raises(ValueError, match="'linear' already has autocast policy 'lower'"):
        autocast_policy("float32")(F.linear.__wrapped__)
    first, second = _typo_errors()
    assert "Function " in first and "unknown autocast policy 'float'" in first
    assert "unknown policy 'float'" in second
    gc.collect()
    dl.amp.policies()  # the class is gone, and the table with it


# ------------------------------------------------------ the policies follow torch's
def _torch_autocast_lists() -> dict:
    """{op: policy} from the lists torch's own autocast tests use (read from the installed
    torch without importing that module, which needs test-only packages): CUDA's, and
    CPU's for the ops CUDA's do not name."""
    spec = importlib.util.find_spec("torch")
    path = pathlib.Path(spec.submodule_search_locations[0], "testing", "_internal",
                        "autocast_test_lists.py")
    kinds = {"fp16": "lower", "16": "lower", "fp32": "float32",
             "need_autocast_promote": "promote"}
    found: dict = {"AutocastTestLists": {}, "AutocastCPUTestLists": {}}
    for cls in ast.parse(path.read_text()).body:
        if not isinstance(cls, ast.ClassDef) or cls.name not in found:
            continue
        for node in ast.walk(cls):
            if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.List)
                    and isinstance(node.targets[0], ast.Attribute)):
                continue
            kind = next((v for k, v in kinds.items()
                         if node.targets[0].attr.endswith("_" + k)), None)
            for entry in node.value.elts if kind else []:
                found[cls.name][entry.elts[0].value] = kind
    assert len(found["AutocastTestLists"]) > 80, "torch's autocast test lists moved"
    return found["AutocastCPUTestLists"] | found["AutocastTestLists"]


# torch's names that are spelled differently here
_SPELLED = {"nll_loss2d": "nll_loss", "__matmul__": "matmul", "__pow__": "pow",
            "linalg_multi_dot": "multi_dot", "linalg_vecdot": "vecdot"}

# the ops torch's test lists autocast that dl.free has but runs in their inputs' dtype, and why
THEIRS_ONLY = {
    "avg_pool3d": "torch's CPU list only; its CUDA policy, which dl.free follows, leaves it",
}

# the policies dl.free declares beyond torch's test lists, and why
OURS = {
    "cross_entropy": "torch computes it from log_softmax and nll_loss, both kept in float32 "
                     "(cross_entropy_loss in its CPU list)",
    "batch_norm": "every norm computes in float32 here; torch runs batch_norm in its input's "
                  "dtype",
    "binary_cross_entropy": "torch's CPU policy; its CUDA autocast refuses the op",
    "gaussian_nll_loss": "torch writes this loss in Python from ops it keeps in float32",
    "multilabel_soft_margin_loss": "torch writes this loss in Python from ops it keeps in "
                                   "float32",
    "normalize": "torch writes it in Python from norm, which it keeps in float32",
    "softmin": "torch writes it in Python from softmax, which it keeps in float32",
    "vector_norm": "in torch's C++ list (linalg_vector_norm), not in its test lists",
    "matrix_norm": "in torch's C++ list (linalg_matrix_norm), not in its test lists",
    "scaled_dot_product_attention": "in torch's C++ list, not in its test lists",
    "ctc_loss": "in torch's documented CPU list, not in its test lists",
    "recurrence": "torch casts its RNN cells and cuDNN's RNN to float16",
}


def _here(name: str):
    """The op dl.free has under torch's name, or None."""
    name = _SPELLED.get(name, name)
    if name.startswith("linalg_"):
        return getattr(dl.linalg, name[len("linalg_"):], None)
    return getattr(dl, name, None) or getattr(F, name, None)


def test_every_op_torch_autocasts_has_its_policy_here():
    table, theirs = dl.amp.policies(), _torch_autocast_lists()
    missing = {name: policy for name, policy in theirs.items()
               if _here(name) is not None and table.get(_SPELLED.get(name, name)) != policy
               and name not in THEIRS_ONLY}
    assert missing == {}
    assert all(_here(name) is not None and name not in table for name in THEIRS_ONLY)


def test_every_policy_here_is_torch_s_or_explained():
    theirs = {_SPELLED.get(k, k): v for k, v in _torch_autocast_lists().items()}
    unexplained = {name: policy for name, policy in dl.amp.policies().items()
                   if theirs.get(name) != policy and name not in OURS}
    assert unexplained == {}
    assert set(OURS) <= set(dl.amp.policies())


# ------------------------------------------------------------- the mechanism's rules
def test_no_op_file_and_no_autograd_file_imports_amp():
    root = pathlib.Path(dl.__file__).parent
    offenders = []
    for path in sorted([*root.joinpath("ops").glob("*.py"), *root.joinpath("autograd").glob(
            "*.py")]):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                names = [node.module or ""] + [a.name for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            if any(n == "amp" or n.startswith("amp.") or ".amp" in n for n in names):
                offenders.append(f"{path.parent.name}/{path.name}:{node.lineno}")
    assert offenders == []


def test_an_explicit_dtype_turns_the_float32_cast_off():
    x = dl.rand(3, 4).half()
    with dl.amp.autocast():
        assert x.sum(dtype=dl.float16).dtype == dl.float16
        assert x.cumsum(0, dtype=dl.float16).dtype == dl.float16
        assert F.softmax(x, 1, dl.float16).dtype == dl.float16  # dtype given by position
        assert F.log_softmax(x, 1, dtype=dl.float64).dtype == dl.float64
        assert dl.linalg.vector_norm(x, dtype=dl.float16).dtype == dl.float16
        assert x.sum(dtype=None).dtype == dl.float32


def test_batch_norm_updates_its_running_statistics_in_place_uncast():
    x = dl.rand(4, 3, 2).half()
    mean, var = dl.zeros(3).half(), dl.ones(3).half()
    with dl.amp.autocast():
        out = F.batch_norm(x, mean, var, training=True, momentum=0.5)
    assert out.dtype == dl.float32 and mean.dtype == var.dtype == dl.float16
    expected_mean = 0.5 * x.float().mean((0, 2))
    np.testing.assert_allclose(mean.float().numpy(), expected_mean.numpy(), rtol=1e-3)


def test_in_place_ops_keep_their_tensors_dtype():
    """torch never autocasts an in-place op: exp_ on a float16 tensor stays float16."""
    x = dl.rand(3).half()
    expected = x.exp()
    with dl.amp.autocast():
        y = x.clone().requires_grad_() * 1
        y.exp_()
        z = dl.rand(3).half()
        z.addcmul_(dl.rand(3), dl.rand(3))
    assert y.dtype == z.dtype == dl.float16
    np.testing.assert_array_equal(y.detach().numpy(), expected.numpy())
    y.sum().backward()


def test_an_error_inside_an_op_leaves_the_region_as_it_was():
    with dl.amp.autocast():
        with pytest.raises(dl.ShapeError):
            F.linear(dl.rand(2, 3), dl.rand(4, 5))
        assert dl.amp.is_autocast_enabled()
        assert (dl.rand(2, 3) @ dl.rand(3, 2)).dtype == dl.float16
