"""Activation recomputation (dl.autograd.checkpoint, gradient checkpointing): the same
gradients as the plain model, bit for bit (dropout included, through the preserved RNG
state), for much less peak memory."""

from __future__ import annotations

import gc
import tracemalloc

import dlfree as dl
import dlfree.nn as nn

import numpy as np
import pytest

F = dl.functional
checkpoint, checkpoint_sequential = dl.autograd.checkpoint, dl.autograd.checkpoint_sequential

LAYERS, WIDTH, BATCH = 16, 32, 256


def make_mlp(seed: int = 0, layers: int = LAYERS, width: int = WIDTH) -> nn.Sequential:
    """`layers` blocks of Linear, ReLU and dropout."""
    dl.manual_seed(seed)
    blocks = []
    for _ in range(layers):
        blocks += [nn.Linear(width, width), nn.ReLU(), nn.Dropout(0.1)]
    return nn.Sequential(*blocks)


def batch(seed: int = 1, rows: int = BATCH, width: int = WIDTH, grad: bool = False):
    rng = np.random.default_rng(seed)
    return dl.tensor(rng.standard_normal((rows, width)).astype(np.float32), requires_grad=grad)


def plain(model, x):
    return model(x)


def per_block(model, x):
    """Each Linear-ReLU-dropout block checkpointed on its own."""
    blocks = list(model.children())
    for i in range(0, len(blocks), 3):
        x = checkpoint(nn.Sequential(*blocks[i:i + 3]), x)
    return x


def sequential(model, x):
    return checkpoint_sequential(model, 4, x)


def gradients(forward, model, x) -> list:
    """Seeded forward and backward; the gradients of the weights and of the input."""
    for p in model.parameters():
        p.grad = None
    x.grad = None
    dl.manual_seed(5)
    forward(model, x).square().mean().backward()
    grads = [p.grad.numpy().copy() for p in model.parameters()]
    return grads + ([x.grad.numpy().copy()] if x.requires_grad else [])


def test_gradients_are_bitwise_those_of_the_plain_model():
    model, x = make_mlp(), batch(grad=True)
    expected = gradients(plain, model, x)
    assert len(expected) == 2 * LAYERS + 1
    for forward in (per_block, sequential):
        for a, b in zip(gradients(forward, model, x), expected, strict=True):
            np.testing.assert_array_equal(a, b)


def peak_bytes(forward, model, x) -> int:
    """Peak traced memory above the start of a forward and backward (NumPy reports its
    allocations to tracemalloc)."""
    for p in model.parameters():
        p.grad = None
    gc.collect()
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        dl.manual_seed(5)
        forward(model, x).square().mean().backward()
        return tracemalloc.get_traced_memory()[1] - start
    finally:
        tracemalloc.stop()


def test_peak_memory_is_at_least_40_percent_lower():
    model, x = make_mlp(), batch()
    baseline = peak_bytes(plain, model, x)
    assert baseline > LAYERS * BATCH * WIDTH * 4 * 2  # the plain run keeps every activation
    for forward in (per_block, sequential):
        assert peak_bytes(forward, model, x) <= 0.6 * baseline, forward.__name__


def test_recomputation_leaves_the_random_stream_where_the_plain_run_does():
    model, x = make_mlp(layers=2), batch(rows=8)
    gradients(per_block, model, x)
    after_checkpointed = dl.rand(4).numpy()
    gradients(plain, model, x)
    np.testing.assert_array_equal(after_checkpointed, dl.rand(4).numpy())


def test_without_preserved_rng_state_dropout_draws_new_masks():
    model, x = make_mlp(layers=2), batch(rows=8)
    expected = gradients(plain, model, x)
    got = gradients(lambda m, v: checkpoint(m, v, preserve_rng_state=False), model, x)
    assert not all(np.array_equal(a, b) for a, b in zip(got, expected, strict=True))


def test_autograd_grad_and_double_backward_match_the_plain_model():
    dl.manual_seed(0)
    model = nn.Sequential(nn.Linear(5, 7), nn.Tanh(), nn.Linear(7, 3), nn.Tanh())
    x = batch(rows=4, width=5, grad=True)
    params = list(model.parameters())

    def penalty(forward):
        out = forward(model, x).sum()
        grads = dl.autograd.grad(out, [x] + params, create_graph=True)
        # a gradient penalty: differentiating it needs the second derivatives
        total = sum((g * g).sum() for g in grads)
        return [g.detach().numpy() for g in grads], dl.autograd.grad(total, params)

    (first, second), (first_ckpt, second_ckpt) = penalty(plain), penalty(per_pair)
    for a, b in zip(first + list(second), first_ckpt + list(second_ckpt), strict=True):
        np.testing.assert_allclose(np.asarray(b), np.asarray(a), rtol=1e-6, atol=1e-7)
    assert all(p.grad is None for p in params)  # autograd.grad stores nothing


def per_pair(model, x):
    """`model`'s children checkpointed two at a time."""
    blocks = list(model.children())
    for i in range(0, len(blocks), 2):
        x = checkpoint(nn.Sequential(*blocks[i:i + 2]), x)
    return x


def test_several_outputs_keyword_arguments_and_constants():
    w = dl.Parameter(dl.randn(3, 3))
    x, scale = dl.randn(2, 3, requires_grad=True), dl.tensor(2.0)

    def block(a, *, factor, label):
        h = (a @ w).tanh()
        return h * factor, (h * h).sum(1), label, dl.arange(3)

    def loss(run):
        w.grad = x.grad = None
        h, squares, label, index = run(block, x, factor=scale, label="tag")
        assert label == "tag" and index.dtype == dl.int64 and not index.requires_grad
        (h.sum() + 3 * squares.sum()).backward()
        return w.grad.numpy().copy(), x.grad.numpy().copy()

    for a, b in zip(loss(lambda f, *args, **kw: f(*args, **kw)), loss(checkpoint), strict=True):
        np.testing.assert_array_equal(a, b)


def test_an_unused_output_gets_no_gradient_and_a_list_keeps_its_type():
    x = dl.randn(3, requires_grad=True)
    first, second = checkpoint(lambda a: [a * 2, a * 3], x)
    assert isinstance(checkpoint(lambda a: [a * 2, a * 3], x), list)
    second.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full(3, 3.0, np.float32))


def test_a_non_leaf_the_block_closes_over_gets_its_gradient():
    w = dl.Parameter(dl.randn(4, 4))
    x = dl.randn(3, 4, requires_grad=True)

    def run(use_checkpoint):
        w.grad = x.grad = None
        context = (x @ w).sigmoid()  # computed outside the block, used inside it
        h = checkpoint(lambda a: a * context, x) if use_checkpoint else x * context
        (h.sum() + context.sum()).backward()
        return w.grad.numpy().copy(), x.grad.numpy().copy()

    for a, b in zip(run(True), run(False), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


def test_checkpoint_replays_the_forward_s_autocast_setting():
    model, x = make_mlp(layers=2), batch(rows=8)

    def run(forward):
        for p in model.parameters():
            p.grad = None
        dl.manual_seed(3)
        with dl.amp.autocast():
            out = forward(model, x)
        assert out.dtype == dl.float16
        out.float().square().mean().backward()  # outside the region, as usual
        return [p.grad.numpy().copy() for p in model.parameters()]

    for a, b in zip(run(per_block), run(plain), strict=True):
        np.testing.assert_array_equal(a, b)


def test_under_no_grad_it_is_a_plain_call():
    x = dl.randn(3, requires_grad=True)
    with dl.no_grad():
        out = checkpoint(lambda a: a * 2, x)
    assert out.grad_fn is None and not out.requires_grad
    constant = checkpoint(lambda a: a * 2, dl.randn(3))
    assert constant.grad_fn is None


def test_changing_an_argument_or_a_weight_before_backward_is_an_error():
    w = dl.Parameter(dl.randn(3, 3))
    x = dl.randn(2, 3, requires_grad=True)
    data = dl.randn(2, 3)
    out = checkpoint(lambda a, b: (a + b) @ w, x, data)
    with dl.no_grad():
        data.add_(1.0)
    with pytest.raises(dl.AutogradError, match="argument 1 .* modified in place"):
        out.sum().backward()
    out = checkpoint(lambda a: a @ w, x)
    with dl.no_grad():
        w.mul_(2.0)
    with pytest.raises(dl.AutogradError, match="weight.* modified in place"):
        out.sum().backward()


def test_a_second_backward_needs_retain_graph():
    x = dl.randn(3, requires_grad=True)
    out = checkpoint(lambda a: (a * a).sum(), x)
    out.backward(retain_graph=True)
    out.backward()
    np.testing.assert_allclose(x.grad.numpy(), 4 * x.detach().numpy(), rtol=1e-6)
    with pytest.raises(dl.AutogradError, match="second time"):
        out.backward()


def test_a_block_that_recomputes_differently_is_reported():
    shapes = iter([(3,), (4,)])
    x = dl.randn(5, requires_grad=True)
    out = checkpoint(lambda a: a[: next(shapes)[0]] * 2, x)
    with pytest.raises(dl.AutogradError, match="recomputing the block gave"):
        out.sum().backward()


def test_leaf_hooks_run_once_on_the_summed_gradient():
    w = dl.Parameter(dl.ones(3))
    seen = []
    w.register_hook(lambda g: seen.append(g.numpy().copy()))
    (checkpoint(lambda a: a * w, dl.ones(3)).sum() + (2 * w).sum()).backward()
    assert len(seen) == 1
    np.testing.assert_array_equal(seen[0], np.full(3, 3.0, np.float32))


@pytest.mark.parametrize("call, error", [
    (lambda: checkpoint(3, dl.ones(2)), TypeError),
    (lambda: checkpoint(lambda a: a, dl.ones(2), use_reentrant="no"), TypeError),
    (lambda: checkpoint_sequential([abs, abs], 3, dl.ones(2)), ValueError),
    (lambda: checkpoint_sequential([abs, abs], 0, dl.ones(2)), ValueError),
    (lambda: checkpoint_sequential([abs, abs], 1.5, dl.ones(2)), TypeError),
])
def test_bad_arguments_are_refused(call, error):
    with pytest.raises(error, match="checkpoint"):
        call()


def test_checkpoint_sequential_takes_a_list_of_callables():
    model, x = make_mlp(layers=3), batch(rows=8, grad=True)
    expected = gradients(plain, model, x)
    got = gradients(lambda m, v: checkpoint_sequential(list(m.children()), 3, v), model, x)
    for a, b in zip(got, expected, strict=True):
        np.testing.assert_array_equal(a, b)
