"""MultiheadAttention and the Transformer layers, stacks and model against torch.nn: outputs,
attention weights and the gradients of inputs and every parameter after copying weights
torch -> dl.free and dl.free -> torch (float32: forward 1e-5, gradients 1e-4).

torch's fused "fast paths" run only when no gradient is wanted; every comparison here
backpropagates, so torch computes with its reference math, as dl.free does.
"""

from __future__ import annotations

import dlfree as dl
from dlfree.nn import attention, transformer

import numpy as np
import pytest
import torch

from support.specs import Fixed, Float
from support.torch_copy import assert_same_state, check_pair, dl_to_torch, to_numpy, torch_to_dl

E, HEADS, L, S, N, FF = 8, 2, 4, 5, 3, 16


def _copy(direction: str, ours, theirs) -> None:
    if direction == "torch_to_dl":
        torch_to_dl(theirs, ours)
    else:
        dl_to_torch(ours, theirs)
    assert_same_state(ours, theirs)


def _padding(rows: int, keys: int) -> np.ndarray:
    """A key padding mask (True = padding) that leaves every row some keys."""
    mask = np.zeros((rows, keys), dtype=bool)
    mask[0, -2:] = True
    mask[-1, 0] = True
    return mask


def _float_mask(shape: tuple, seed: int = 3) -> np.ndarray:
    values = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    values[..., 0, -1] = -np.inf  # a masked-out pair, with the rest of its row open
    return values


def _causal(size: int) -> np.ndarray:
    return np.triu(np.ones((size, size), dtype=bool), 1)


def _seq(length: int, features: int, batch_first: bool, batched: bool = True) -> tuple:
    if not batched:
        return (length, features)
    return (N, length, features) if batch_first else (length, N, features)


def _mha_call(inputs: str, masks: tuple = (), **options):
    """Call the layer on query/key/value (`inputs`: "self" uses one tensor for all three,
    "shared" one for key and value) followed by the named masks; returns the output and,
    when computed, the weights."""
    count = {"self": 1, "shared": 2, "cross": 3}[inputs]

    def call(module, *args):
        x, rest = args[:count], args[count:]
        q, k, v = {"self": lambda: (x[0],) * 3, "shared": lambda: (x[0], x[1], x[1]),
                   "cross": lambda: x}[inputs]()
        out, weights = module(q, k, v, **dict(zip(masks, rest, strict=True)), **options)
        return [out] if weights is None else [out, weights]

    return call


# (id, constructor kwargs, input specs, call)
MHA_CASES = [
    ("self_weights_averaged", {}, [Float(_seq(L, E, False))], _mha_call("self")),
    ("self_batch_first_weights_per_head", {"batch_first": True}, [Float(_seq(L, E, True))],
     _mha_call("self", average_attn_weights=False)),
    ("self_no_weights_sdpa", {}, [Float(_seq(L, E, False))],
     _mha_call("self", need_weights=False)),
    ("cross_shared_key_value", {}, [Float(_seq(L, E, False)), Float(_seq(S, E, False))],
     _mha_call("shared")),
    ("cross_kdim_vdim_sdpa", {"kdim": 6, "vdim": 3, "batch_first": True},
     [Float(_seq(L, E, True)), Float(_seq(S, 6, True)), Float(_seq(S, 3, True))],
     _mha_call("cross", need_weights=False)),
    ("cross_kdim_vdim_padding", {"kdim": 6, "vdim": 3},
     [Float(_seq(L, E, False)), Float(_seq(S, 6, False)), Float(_seq(S, 3, False)),
      Fixed(_padding(N, S), "bool")],
     _mha_call("cross", ("key_padding_mask",))),
    ("float_padding_sdpa", {}, [Float(_seq(L, E, False)), Float(_seq(S, E, False)),
                                Fixed(_float_mask((N, S)), "float32")],
     _mha_call("shared", ("key_padding_mask",), need_weights=False)),
    ("bool_attn_mask", {"batch_first": True},
     [Float(_seq(L, E, True)), Float(_seq(S, E, True)),
      Fixed(np.triu(np.ones((L, S), dtype=bool), 2), "bool")],
     _mha_call("shared", ("attn_mask",))),
    ("float_attn_mask_sdpa", {}, [Float(_seq(L, E, False)), Float(_seq(S, E, False)),
                                  Fixed(_float_mask((L, S)), "float32")],
     _mha_call("shared", ("attn_mask",), need_weights=False)),
    ("per_head_attn_mask_and_padding", {},
     [Float(_seq(L, E, False)), Float(_seq(S, E, False)),
      Fixed(_float_mask((N * HEADS, L, S)), "float32"), Fixed(_float_mask((N, S), 4), "float32")],
     _mha_call("shared", ("attn_mask", "key_padding_mask"), average_attn_weights=False)),
    ("is_causal_sdpa", {"batch_first": True}, [Float(_seq(L, E, True)),
                                               Fixed(_causal(L), "bool")],
     _mha_call("self", ("attn_mask",), need_weights=False, is_causal=True)),
    ("is_causal_with_weights", {}, [Float(_seq(L, E, False)), Fixed(_causal(L), "bool")],
     _mha_call("self", ("attn_mask",), is_causal=True)),
    ("is_causal_with_padding", {}, [Float(_seq(L, E, False)), Fixed(_causal(L), "bool"),
                                    Fixed(_padding(N, L), "bool")],
     _mha_call("self", ("attn_mask", "key_padding_mask"), need_weights=False, is_causal=True)),
    ("add_bias_kv_masks", {"add_bias_kv": True},
     [Float(_seq(L, E, False)), Float(_seq(S, E, False)), Fixed(_float_mask((L, S)), "float32"),
      Fixed(_float_mask((N, S), 5), "float32")],
     _mha_call("shared", ("attn_mask", "key_padding_mask"))),
    ("add_zero_attn_masks_sdpa", {"add_zero_attn": True, "batch_first": True},
     [Float(_seq(L, E, True)), Float(_seq(S, E, True)), Float(_seq(S, E, True)),
      Fixed(_padding(N, S), "bool")],
     _mha_call("cross", ("key_padding_mask",), need_weights=False)),
    ("bias_kv_zero_attn_per_head_mask", {"add_bias_kv": True, "add_zero_attn": True},
     [Float(_seq(L, E, False)), Fixed(_float_mask((N * HEADS, L, L)), "float32")],
     _mha_call("self", ("attn_mask",), average_attn_weights=False)),
    ("no_bias", {"bias": False}, [Float(_seq(L, E, False)), Float(_seq(S, E, False))],
     _mha_call("shared")),
    ("unbatched_per_head_mask_padding", {"batch_first": True},
     [Float((L, E)), Float((S, E)), Fixed(_float_mask((HEADS, L, S)), "float32"),
      Fixed(np.where(_padding(1, S)[0], -np.inf, 0), "float32")],
     _mha_call("shared", ("attn_mask", "key_padding_mask"), average_attn_weights=False)),
    ("unbatched_sdpa", {}, [Float((L, E))], _mha_call("self", need_weights=False)),
]


def _mask_types_match(specs) -> bool:
    kinds = {s.dtype for s in specs if isinstance(s, Fixed)}
    return len(kinds) <= 1


@pytest.mark.parametrize("direction", ["torch_to_dl", "dl_to_torch"])
@pytest.mark.parametrize("case", MHA_CASES, ids=[c[0] for c in MHA_CASES])
def test_multihead_attention_matches_torch(case, direction, device):
    _, kwargs, specs, call = case
    assert _mask_types_match(specs)  # torch warns on mixed bool/float masks
    ours = attention.MultiheadAttention(E, HEADS, **kwargs)
    theirs = torch.nn.MultiheadAttention(E, HEADS, **kwargs)
    _copy(direction, ours, theirs)
    ours.to(device)
    ours.eval(), theirs.eval()
    check_pair(ours, theirs, specs, call=call, device=device)


def test_attention_dropout_drops_and_rescales_the_returned_weights():
    layer = attention.MultiheadAttention(E, HEADS, dropout=0.5)
    x = dl.randn(64, 8, E)
    layer.eval()
    _, kept = layer(x, x, x, average_attn_weights=False)
    layer.train()
    _, dropped = layer(x, x, x, average_attn_weights=False)
    kept, dropped = to_numpy(kept), to_numpy(dropped)
    zero = dropped == 0
    # 8 * 2 * 64 * 64 weights: the dropped fraction lies within 0.5 ± 0.02 (> 10 sigma)
    assert abs(zero.mean() - 0.5) < 0.02
    np.testing.assert_allclose(dropped[~zero], 2 * kept[~zero], rtol=1e-5, atol=1e-7)


def _layer_pair(name: str, *args, **kwargs):
    return getattr(transformer, name)(*args, **kwargs), getattr(torch.nn, name)(*args, **kwargs)


def _encoder_layer_call(masks: tuple = (), **options):
    def call(module, x, *rest):
        return module(x, **dict(zip(masks, rest, strict=True)), **options)

    return call


def _decoder_call(masks: tuple = (), **options):
    def call(module, tgt, memory, *rest):
        return module(tgt, memory, **dict(zip(masks, rest, strict=True)), **options)

    return call


def _float_causal(size: int) -> np.ndarray:
    return np.where(_causal(size), -np.inf, 0).astype(np.float32)


# (id, norm_first, activation, batch_first, input specs after src/tgt, call)
ENCODER_LAYER_CASES = [
    ("post_norm_relu", False, "relu", False, [], _encoder_layer_call()),
    ("pre_norm_gelu_batch_first_masks", True, "gelu", True,
     [Fixed(_causal(L), "bool"), Fixed(_padding(N, L), "bool")],
     _encoder_layer_call(("src_mask", "src_key_padding_mask"), is_causal=True)),
    ("post_norm_gelu_float_mask", False, "gelu", True, [Fixed(_float_mask((L, L)), "float32")],
     _encoder_layer_call(("src_mask",))),
    ("pre_norm_relu_padding", True, "relu", False, [Fixed(_padding(N, L), "bool")],
     _encoder_layer_call(("src_key_padding_mask",))),
]


@pytest.mark.parametrize("direction", ["torch_to_dl", "dl_to_torch"])
@pytest.mark.parametrize("case", ENCODER_LAYER_CASES, ids=[c[0] for c in ENCODER_LAYER_CASES])
def test_encoder_layer_matches_torch(case, direction, device):
    _, norm_first, activation, batch_first, masks, call = case
    ours, theirs = _layer_pair("TransformerEncoderLayer", E, HEADS, FF, dropout=0.1,
                               activation=activation, batch_first=batch_first,
                               norm_first=norm_first)
    _copy(direction, ours, theirs)
    ours.to(device)
    ours.eval(), theirs.eval()
    check_pair(ours, theirs, [Float(_seq(L, E, batch_first))] + masks, call=call,
               device=device)


DECODER_LAYER_CASES = [
    ("post_norm_relu", False, "relu", False, [], _decoder_call()),
    ("pre_norm_gelu_causal_padding", True, "gelu", True,
     [Fixed(_float_causal(L), "float32"), Fixed(_float_mask((N, S)), "float32")],
     _decoder_call(("tgt_mask", "memory_key_padding_mask"), tgt_is_causal=True)),
    ("post_norm_gelu_all_masks", False, "gelu", False,
     [Fixed(_causal(L), "bool"), Fixed(np.triu(np.ones((L, S), dtype=bool), 2), "bool"),
      Fixed(_padding(N, L), "bool"), Fixed(_padding(N, S), "bool")],
     _decoder_call(("tgt_mask", "memory_mask", "tgt_key_padding_mask",
                    "memory_key_padding_mask"))),
]


@pytest.mark.parametrize("direction", ["torch_to_dl", "dl_to_torch"])
@pytest.mark.parametrize("case", DECODER_LAYER_CASES, ids=[c[0] for c in DECODER_LAYER_CASES])
def test_decoder_layer_matches_torch(case, direction, device):
    _, norm_first, activation, batch_first, masks, call = case
    ours, theirs = _layer_pair("TransformerDecoderLayer", E, HEADS, FF, dropout=0.1,
                               activation=activation, batch_first=batch_first,
                               norm_first=norm_first)
    _copy(direction, ours, theirs)
    ours.to(device)
    ours.eval(), theirs.eval()
    specs = [Float(_seq(L, E, batch_first)), Float(_seq(S, E, batch_first))] + masks
    check_pair(ours, theirs, specs, call=call, device=device)


@pytest.mark.parametrize("batch_first", [False, True])
def test_encoder_stack_with_causal_and_padding_masks_matches_torch(batch_first, device):
    ours_layer, theirs_layer = _layer_pair("TransformerEncoderLayer", E, HEADS, FF,
                                           dropout=0.0, batch_first=batch_first)
    ours = transformer.TransformerEncoder(ours_layer, 2, transformer.LayerNorm(E))
    theirs = torch.nn.TransformerEncoder(theirs_layer, 2, torch.nn.LayerNorm(E),
                                         enable_nested_tensor=False)
    _copy("torch_to_dl", ours, theirs)
    ours.to(device)
    # the float causal mask is detected as causal (is_causal=None) by both
    specs = [Float(_seq(L, E, batch_first)), Fixed(_float_causal(L), "float32"),
             Fixed(np.where(_padding(N, L), -np.inf, 0), "float32")]
    check_pair(ours, theirs, specs, device=device,
               call=lambda m, x, mask, pad: m(x, mask=mask, src_key_padding_mask=pad))


def test_decoder_stack_with_detected_causal_mask_matches_torch(device):
    ours_layer, theirs_layer = _layer_pair("TransformerDecoderLayer", E, HEADS, FF,
                                           dropout=0.0, norm_first=True)
    ours = transformer.TransformerDecoder(ours_layer, 2, transformer.LayerNorm(E))
    theirs = torch.nn.TransformerDecoder(theirs_layer, 2, torch.nn.LayerNorm(E))
    _copy("dl_to_torch", ours, theirs)
    ours.to(device)
    specs = [Float(_seq(L, E, False)), Float(_seq(S, E, False)), Fixed(_causal(L), "bool"),
             Fixed(_padding(N, S), "bool")]
    check_pair(ours, theirs, specs, device=device,
               call=lambda m, t, mem, mask, pad: m(t, mem, tgt_mask=mask,
                                                   memory_key_padding_mask=pad))


@pytest.mark.filterwarnings("ignore:enable_nested_tensor is True")  # torch's, batch_first=False
@pytest.mark.parametrize("batch_first,norm_first", [(True, False), (False, True)])
@pytest.mark.parametrize("direction", ["torch_to_dl", "dl_to_torch"])
def test_full_transformer_matches_torch(batch_first, norm_first, direction, device):
    ours, theirs = _layer_pair("Transformer", E, HEADS, 2, 2, FF, dropout=0.1,
                               batch_first=batch_first, norm_first=norm_first)
    _copy(direction, ours, theirs)
    ours.to(device)
    ours.eval(), theirs.eval()
    specs = [Float(_seq(S, E, batch_first)), Float(_seq(L, E, batch_first)),
             Fixed(_float_causal(L), "float32"),
             Fixed(np.where(_padding(N, S), -np.inf, 0), "float32"),
             Fixed(np.where(_padding(N, L), -np.inf, 0), "float32")]

    def call(module, src, tgt, tgt_mask, src_pad, tgt_pad):
        return module(src, tgt, tgt_mask=tgt_mask, src_key_padding_mask=src_pad,
                      tgt_key_padding_mask=tgt_pad, memory_key_padding_mask=src_pad)

    check_pair(ours, theirs, specs, call=call, device=device)


def test_unbatched_transformer_matches_torch():
    ours, theirs = _layer_pair("Transformer", E, HEADS, 1, 1, FF, dropout=0.0,
                               batch_first=True)
    _copy("torch_to_dl", ours, theirs)
    check_pair(ours, theirs, [Float((S, E)), Float((L, E))],
               call=lambda m, src, tgt: m(src, tgt, tgt_is_causal=False))


@pytest.mark.parametrize("size", [1, 4])
def test_square_subsequent_mask_matches_torch(size):
    ours = transformer.Transformer.generate_square_subsequent_mask(size, dtype=dl.float64)
    theirs = torch.nn.Transformer.generate_square_subsequent_mask(size, dtype=torch.float64)
    assert ours.dtype == dl.float64
    np.testing.assert_array_equal(to_numpy(ours), to_numpy(theirs))


def test_transformer_initialisation():
    dl.manual_seed(0)
    model = transformer.Transformer(E, HEADS, 1, 1, FF)
    for name, p in model.named_parameters():
        values = to_numpy(p)
        if values.ndim > 1:  # xavier-uniform: U(-b, b), b = sqrt(6 / (fan_in + fan_out))
            bound = np.sqrt(6 / sum(values.shape))
            assert np.abs(values).max() <= bound, name
            assert np.abs(values).max() > 0.8 * bound, name
        elif name.endswith("in_proj_bias") or name.endswith("out_proj.bias"):
            np.testing.assert_array_equal(values, 0, err_msg=name)
        elif ".norm" in name:
            np.testing.assert_array_equal(values, 1 if name.endswith("weight") else 0,
                                          err_msg=name)


def test_stacks_hold_independent_copies_and_rebuild_from_config():
    layer = transformer.TransformerEncoderLayer(E, HEADS, FF, dropout=0.0, activation="gelu")
    stack = transformer.TransformerEncoder(layer, 2)
    first, second = stack.layers[0].linear1.weight, stack.layers[1].linear1.weight
    assert first is not second and first is not layer.linear1.weight
    np.testing.assert_array_equal(to_numpy(first), to_numpy(second))
    config = stack.get_config()
    assert config["encoder_layer"] is layer and config["num_layers"] == 2
    twin = transformer.TransformerEncoder(**config)
    assert list(twin.state_dict()) == list(stack.state_dict())
    with dl.no_grad():
        stack.layers[1].linear1.weight.mul_(2)
    twin.load_state_dict(stack.state_dict())
    x = dl.randn(L, N, E)
    np.testing.assert_array_equal(to_numpy(twin(x)), to_numpy(stack(x)))
    assert not np.array_equal(to_numpy(stack.layers[0].linear1.weight),
                              to_numpy(stack.layers[1].linear1.weight))


def test_model_file_round_trip(tmp_path):
    model = transformer.Transformer(E, HEADS, 2, 1, FF, dropout=0.0, activation="gelu",
                                    batch_first=True, norm_first=True)
    dl.save(model, tmp_path / "transformer.safetensors")
    loaded = dl.load(tmp_path / "transformer.safetensors")
    assert type(loaded) is transformer.Transformer
    assert list(loaded.state_dict()) == list(model.state_dict())
    src, tgt = dl.randn(N, S, E), dl.randn(N, L, E)
    mask = transformer.Transformer.generate_square_subsequent_mask(L)
    np.testing.assert_array_equal(to_numpy(loaded(src, tgt, tgt_mask=mask)),
                                  to_numpy(model(src, tgt, tgt_mask=mask)))


def _self_attention(**options):
    layer = attention.MultiheadAttention(E, HEADS)
    x = dl.randn(L, N, E)
    return lambda: layer(x, x, x, **options)


@pytest.mark.parametrize("action,error,match", [
    (lambda: attention.MultiheadAttention(6, 4), ValueError, "divisible"),
    (lambda: attention.MultiheadAttention(E, 0), ValueError, "num_heads"),
    (_self_attention(is_causal=True), ValueError, "needs attn_mask"),
    (_self_attention(attn_mask=dl.zeros(L, L, dtype=dl.int64)), dl.DTypeError, "bool"),
    (_self_attention(attn_mask=dl.zeros(L, L + 1)), dl.ShapeError, r"\(L, S\) = \(4, 4\)"),
    (_self_attention(attn_mask=dl.zeros(1, 1, L, L)), dl.ShapeError, "attn_mask"),
    (_self_attention(key_padding_mask=dl.zeros(N + 1, L, dtype=dl.bool)), dl.ShapeError,
     r"key_padding_mask must be \(N, S\)"),
    (lambda: attention.MultiheadAttention(E, HEADS)(dl.randn(L, N, E), dl.randn(S, N, E + 1),
                                                    dl.randn(S, N, E)),
     dl.ShapeError, "feature sizes"),
    (lambda: attention.MultiheadAttention(E, HEADS)(dl.randn(L, N, E), dl.randn(S, N + 1, E),
                                                    dl.randn(S, N + 1, E)),
     dl.ShapeError, "batch sizes"),
    (lambda: transformer.TransformerEncoderLayer(E, HEADS, activation="tanh"), ValueError,
     "'relu', 'gelu'"),
    (lambda: transformer.TransformerEncoder(transformer.TransformerEncoderLayer(E, HEADS), 0),
     ValueError, "num_layers"),
    (lambda: transformer.Transformer(E, HEADS, 1, 1, FF)(dl.randn(S, N, E), dl.randn(L, N + 1, E)),
     dl.ShapeError, "same batch size"),
    (lambda: transformer.Transformer(E, HEADS, 1, 1, FF)(dl.randn(S, N, E), dl.randn(L, N, 4)),
     dl.ShapeError, "d_model"),
])
def test_bad_arguments_raise_clear_errors(action, error, match):
    with pytest.raises(error, match=match):
        action()
