"""Views: ops whose result shares memory with the input record it (`as_view`), share its
version counter, and can replay the view from the root tensor; copies do neither."""

from __future__ import annotations

import dlfree as dl

import numpy as np
import pytest

VIEWS = {
    "reshape": lambda a: a.reshape(4, 6),
    "view": lambda a: a.view(-1),
    "flatten": lambda a: a.flatten(1),
    "unflatten": lambda a: a.unflatten(2, (2, 2)),
    "squeeze": lambda a: a[:, :1].squeeze(1),
    "unsqueeze": lambda a: a.unsqueeze(0),
    "permute": lambda a: a.permute(2, 0, 1),
    "transpose": lambda a: a.transpose(0, -1),
    "mT": lambda a: a.mT,
    "T": lambda a: a.T,
    "movedim": lambda a: a.movedim(0, -1),
    "expand": lambda a: a[:, :1].expand(2, 3, 4),
    "narrow": lambda a: a.narrow(1, 1, 2),
    "select": lambda a: a.select(-1, 2),
    "split": lambda a: a.split(2, 1)[1],
    "chunk": lambda a: a.chunk(2, 2)[0],
    "unbind": lambda a: a.unbind(1)[2],
    "getitem_int": lambda a: a[1],
    "getitem_slices": lambda a: a[:, 1::2, None, ...],
    "diagonal": lambda a: a.diagonal(1, 1, 2),
    "chain": lambda a: a.transpose(0, 1)[1:].reshape(2, 2, 4)[0].t(),
    "reshape_of_transpose_no_copy": lambda a: a.transpose(0, 1).unsqueeze(1),
}

COPIES = {
    "reshape_of_transpose": lambda a: a.transpose(0, 2).reshape(-1),
    "flatten_of_transpose": lambda a: a.mT.flatten(),
    "advanced_index": lambda a: a[[0, 1]],
    "mask": lambda a: a[a > 0],
    "flip": lambda a: a.flip(0),
    "roll": lambda a: a.roll(1),
    "repeat": lambda a: a.repeat(1, 1, 1),
    "cat": lambda a: dl.cat([a]),
    "index_select": lambda a: a.index_select(0, dl.tensor([0])),
    "diag": lambda a: a[0].diag(),
}


def _base():
    return dl.arange(24, dtype=dl.float32).reshape(2, 3, 4).clone()


@pytest.mark.parametrize("op", VIEWS.values(), ids=VIEWS.keys())
def test_view_shares_memory_version_counter_and_replays(op):
    a = _base()
    v = op(a)
    assert v._view is not None and v._vc is a._vc
    root, replay = v._view
    assert root is a
    np.testing.assert_array_equal(replay(a).numpy(), v.numpy())
    assert np.shares_memory(v.numpy(), a.numpy())


@pytest.mark.parametrize("op", COPIES.values(), ids=COPIES.keys())
def test_copy_is_not_a_view(op):
    a = _base()
    c = op(a)
    assert c._view is None and c._vc is not a._vc
    assert not np.shares_memory(c.numpy(), a.numpy())


def test_view_of_view_records_the_root():
    a = _base()
    b = a.transpose(0, 2)
    c = b[1].unsqueeze(0)
    assert c._view[0] is a and c._vc is a._vc is b._vc
    np.testing.assert_array_equal(c._view[1](a).numpy(), c.numpy())


def test_base_changes_show_through_the_view():
    a = _base()
    views = [a.mT, a[1], a.narrow(2, 1, 2), a.diagonal(0, 1, 2),
             a.reshape(6, 4), a.unbind(0)[1]]
    a.numpy()[1, 2, 1] = -7.0
    assert views[0][1, 1, 2].item() == -7.0
    assert views[1][2, 1].item() == -7.0
    assert views[2][1, 2, 0].item() == -7.0
    assert views[4][5, 1].item() == -7.0
    assert views[5][2, 1].item() == -7.0
    a.numpy()[1, 1, 1] = -8.0
    assert views[3][1, 1].item() == -8.0


def test_view_changes_show_in_the_base():
    a = _base()
    a.diagonal(0, 1, 2).numpy()[...] = 0.0  # torch's diagonal is a writable view
    a[0, 1].numpy()[...] = -1.0
    assert a.numpy()[1, 2, 2] == 0.0
    assert (a.numpy()[0, 1] == -1.0).all()


def test_view_of_noncontiguous_layout_raises_and_names_reshape():
    a = dl.randn(3, 4)
    with pytest.raises(dl.ShapeError, match=r"reshape"):
        a.t().view(-1)
    with pytest.raises(dl.ShapeError, match=r"strides"):
        a.t().view(2, 6)


def test_view_of_noncontiguous_but_compatible_layout_is_a_view():
    a = dl.randn(3, 4)
    v = a.t().view(4, 3, 1)
    assert v._vc is a._vc and v.shape == (4, 3, 1)


def test_views_keep_gradients_flowing():
    a = dl.randn(2, 3, 4, requires_grad=True)
    out = a.transpose(0, 1)[1:].reshape(2, 2, 4)[0].diagonal()
    out.sum().backward()
    expected = np.zeros((2, 3, 4), dtype=np.float32)
    expected[0, 1, 0] = expected[1, 1, 1] = 1.0
    np.testing.assert_array_equal(a.grad.numpy(), expected)
