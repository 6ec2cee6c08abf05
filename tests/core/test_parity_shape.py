"""Parity cases for shape and layout ops (see parity.py).

Every op here is linear, so a second derivative of the op alone is zero in both libraries
and checks nothing; the gradgrad rows cube the outputs (`cubed`), which keeps the forward
check exact and makes the second derivative run through the op's backward.
"""

from __future__ import annotations

from support.parity import Case, cubed, run_family
from support.specs import Float, Int

S = (3, 4)
S3 = (2, 3, 4)


CASES = [
    # reshape / view / flatten
    Case("reshape", cubed(lambda m, a: a.reshape(2, 6)), [S], gradgrad=True),
    Case("reshape_infer", lambda m, a: m.reshape(a, (-1, 4)), [S3]),
    Case("reshape_noncontiguous", cubed(lambda m, a: a.t().reshape(-1)), [S], gradgrad=True),
    Case("reshape_0d", lambda m, a: a.reshape(1, 1), [()]),
    Case("reshape_to_0d", lambda m, a: a.reshape(()), [(1, 1)]),
    Case("reshape_empty", lambda m, a: a.reshape(3, 0, 2), [(0, 3)], gradcheck=False),
    Case("view", cubed(lambda m, a: a.view(6, 4)), [S3], gradgrad=True),
    Case("view_as", lambda m, a, b: a.view_as(b), [S, Float((2, 6), grad=False)]),
    Case("view_of_transpose", lambda m, a: a.t().view(4, 3, 1), [S]),
    Case("flatten", cubed(lambda m, a: a.flatten()), [S3], gradgrad=True),
    Case("flatten_range_neg", lambda m, a: m.flatten(a, 1, -2), [(2, 3, 2, 2)]),
    Case("flatten_0d", lambda m, a: a.flatten(), [()]),
    Case("unflatten", cubed(lambda m, a: a.unflatten(1, (3, -1))), [(2, 12)], gradgrad=True),
    Case("unflatten_neg", lambda m, a: m.unflatten(a, -1, (2, 2)), [S]),
    # squeeze / unsqueeze
    Case("squeeze_all", cubed(lambda m, a: a.squeeze()), [(1, 3, 1, 4)], gradgrad=True),
    Case("squeeze_neg", lambda m, a: a.squeeze(-2), [(1, 3, 1, 4)]),
    Case("squeeze_tuple", lambda m, a: m.squeeze(a, (0, 1, 2)), [(1, 3, 1, 4)]),
    Case("squeeze_0d", lambda m, a: a.squeeze(0), [()]),
    Case("unsqueeze_neg", cubed(lambda m, a: a.unsqueeze(-1)), [S], gradgrad=True),
    Case("unsqueeze_0d", lambda m, a: m.unsqueeze(a, 0), [()]),
    # permutations
    Case("permute", cubed(lambda m, a: a.permute(2, 0, 1)), [S3], gradgrad=True),
    Case("permute_neg", lambda m, a: m.permute(a, (-1, 0, -2)), [S3]),
    Case("transpose_neg", cubed(lambda m, a: a.transpose(-1, 0)), [S3], gradgrad=True),
    Case("swapaxes", lambda m, a: m.swapaxes(a, 0, 2), [S3]),
    Case("t", lambda m, a: a.t(), [S]),
    Case("t_1d", lambda m, a: m.t(a), [(4,)]),
    Case("mT", cubed(lambda m, a: a.mT), [S3], gradgrad=True),
    Case("T", lambda m, a: a.T, [S]),
    Case("movedim", cubed(lambda m, a: a.movedim((0, 1), (2, 0))), [S3], gradgrad=True),
    Case("moveaxis_neg", lambda m, a: m.moveaxis(a, -1, 0), [S3]),
    # broadcasting
    Case("expand", cubed(lambda m, a: a.expand(2, 3, 4)), [(3, 1)], gradgrad=True),
    Case("expand_keep", lambda m, a: a.expand(-1, 5), [(3, 1)]),
    Case("expand_0d", lambda m, a: a.expand(2, 3), [()]),
    Case("expand_as", lambda m, a, b: a.expand_as(b), [(4,), Float(S, grad=False)]),
    Case("broadcast_to", lambda m, a: m.broadcast_to(a, (2, 3, 4)), [(1, 4)]),
    Case("broadcast_tensors", cubed(lambda m, a, b: m.broadcast_tensors(a, b)),
         [(3, 1), (1, 4)], gradgrad=True),
    # repeat / tile / flip / roll
    Case("repeat", cubed(lambda m, a: a.repeat(2, 1, 3)), [(2, 3)], gradgrad=True),
    Case("repeat_0d", lambda m, a: a.repeat(2, 3), [()]),
    Case("repeat_zero", lambda m, a: a.repeat(0, 2), [(2, 3)], gradcheck=False),
    Case("tile_short", lambda m, a: m.tile(a, (2,)), [(2, 3)]),
    Case("tile_long", lambda m, a: a.tile(2, 1, 2), [(3,)]),
    Case("flip", cubed(lambda m, a: a.flip(0, 2)), [S3], gradgrad=True),
    Case("flip_neg", lambda m, a: m.flip(a, [-1]), [S]),
    Case("roll", cubed(lambda m, a: a.roll((1, -2), (0, -1))), [S], gradgrad=True),
    Case("roll_flat", lambda m, a: m.roll(a, 5), [S]),
    # cat / stack
    Case("cat", cubed(lambda m, a, b, c: m.cat([a, b, c], 1)), [(2, 1), (2, 3), (2, 2)],
         gradgrad=True),
    Case("cat_neg", lambda m, a, b: m.cat((a, b), -1), [S3, (2, 3, 1)]),
    Case("concat", lambda m, a, b: m.concat([a, b]), [(1, 4), S]),
    Case("cat_promote", lambda m, a, b: m.cat([a, b]), [S, Int((2, 4), 0, 9)]),
    Case("cat_skips_empty_1d", lambda m, a, b: m.cat([a, m.zeros(0), b]), [S, (1, 4)]),
    Case("cat_empty_piece", lambda m, a, b: m.cat([a, b], 1), [S, (3, 0)], gradcheck=False),
    Case("stack", cubed(lambda m, a, b: m.stack([a, b], 1)), [S, S], gradgrad=True),
    Case("stack_neg", lambda m, a, b, c: m.stack((a, b, c), -1), [(2, 3)] * 3),
    Case("stack_0d", lambda m, a, b: m.stack([a, b]), [(), ()]),
    # split / chunk / unbind / narrow / select
    Case("split_int", cubed(lambda m, a: a.split(2, 1)), [(3, 5)], gradgrad=True),
    Case("split_sizes_neg", lambda m, a: m.split(a, [1, 0, 3], -1), [S]),
    Case("chunk", cubed(lambda m, a: a.chunk(3)), [(7, 2)], gradgrad=True),
    Case("chunk_fewer", lambda m, a: m.chunk(a, 4, -1), [(2, 6)]),
    Case("unbind", cubed(lambda m, a: a.unbind(1)), [S], gradgrad=True),
    Case("iter", lambda m, a: tuple(a), [S]),
    Case("narrow", cubed(lambda m, a: a.narrow(1, 1, 2)), [S], gradgrad=True),
    Case("narrow_neg", lambda m, a: m.narrow(a, -1, -3, 2), [S3]),
    Case("select", cubed(lambda m, a: a.select(1, -1)), [S3], gradgrad=True),
    Case("select_fn", lambda m, a: m.select(a, 0, 2), [S]),
    # diagonals
    Case("diagonal", cubed(lambda m, a: a.diagonal()), [S], gradgrad=True),
    Case("diagonal_dims", lambda m, a: m.diagonal(a, 1, 0, 2), [S3]),
    Case("diagonal_neg_offset", lambda m, a: a.diagonal(-1, -1, -2), [S3]),
    Case("diag_embed", cubed(lambda m, a: a.diag_embed()), [(2, 3)], gradgrad=True),
    Case("diag_embed_dims", lambda m, a: m.diag_embed(a, -1, 0, 2), [(2, 3)]),
    Case("diag_1d", lambda m, a: m.diag(a, 1), [(3,)]),
    Case("diag_2d", lambda m, a: m.diag(a, -1), [S]),
    Case("contiguous", lambda m, a: a.t().contiguous(), [S]),
]

test_forward, test_grad, test_gradcheck, test_gradgrad = run_family(CASES)
