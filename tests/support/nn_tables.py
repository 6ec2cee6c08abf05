"""The dlfree.nn parity tables, one row per configuration, each built with the same
arguments in dlfree.nn and torch.nn: layers (`Row`), activations (name, args, kwargs, input)
and losses (name, kwargs, inputs[, call]). The parity tests check them against torch
(tests/nn/test_layers_parity.py, test_activation_modules.py, test_losses.py); the model-file
round trip (tests/nn/test_layer_files.py) saves and loads every row."""

from __future__ import annotations

from dataclasses import dataclass, field

import dlfree as dl
import dlfree.nn as nn

import numpy as np
import torch

from support.specs import Fixed, Float, Int


# ------------------------------------------------------------------------------- layers
@dataclass
class Row:
    id: str
    layer: str
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)
    inputs: tuple = ()
    call: object = None
    modes: tuple = ("train",)
    steps: int = 1

    def build(self):
        return (getattr(nn, self.layer)(*self.args, **self.kwargs),
                getattr(torch.nn, self.layer)(*self.args, **self.kwargs))


def bag(mode, **kw):
    return {"mode": mode, **kw}


LAYER_ROWS = [
    # ------------------------------------------------------------------ linear
    Row("linear", "Linear", (4, 3), inputs=(Float((2, 4)),)),
    Row("linear_no_bias_3d", "Linear", (4, 3), {"bias": False}, (Float((2, 5, 4)),)),
    Row("linear_batch1", "Linear", (5, 1), inputs=(Float((1, 5)),)),
    Row("linear_unbatched", "Linear", (3, 2), inputs=(Float((3,)),)),
    Row("bilinear", "Bilinear", (3, 2, 4), inputs=(Float((5, 3)), Float((5, 2)))),
    Row("bilinear_no_bias_3d", "Bilinear", (2, 3, 1), {"bias": False},
        (Float((2, 4, 2)), Float((2, 4, 3)))),
    # --------------------------------------------------------------- embedding
    Row("embedding", "Embedding", (6, 3), inputs=(Int((2, 5), 0, 6),)),
    Row("embedding_padding", "Embedding", (6, 3), {"padding_idx": 2},
        (Fixed([[0, 2, 2, 5], [1, 2, 3, 2]]),)),
    Row("embedding_negative_padding_freq", "Embedding", (5, 4),
        {"padding_idx": -1, "scale_grad_by_freq": True}, (Fixed([4, 1, 1, 0, 4, 1, 2]),)),
    Row("embedding_max_norm", "Embedding", (5, 4), {"max_norm": 1.0}, (Fixed([[0, 3], [3, 1]]),)),
    Row("bag_mean_2d", "EmbeddingBag", (7, 3), inputs=(Int((3, 4), 0, 7),)),
    Row("bag_max_2d", "EmbeddingBag", (7, 3), bag("max"), (Int((3, 4), 0, 7),)),
    Row("bag_sum_2d_weights", "EmbeddingBag", (7, 3), bag("sum"),
        (Int((3, 4), 0, 7), Float((3, 4))), call=lambda m, x, w: m(x, per_sample_weights=w)),
    Row("bag_sum_offsets_weights", "EmbeddingBag", (7, 3), bag("sum"),
        (Fixed([0, 3, 6, 1, 1, 5, 2, 4, 6]), Fixed([0, 2, 2, 6]), Float((9,))),
        call=lambda m, x, off, w: m(x, off, w)),
    Row("bag_max_offsets_padding", "EmbeddingBag", (6, 4), bag("max", padding_idx=1),
        (Fixed([2, 1, 5, 0, 1, 1, 3]), Fixed([0, 4, 5, 6])), call=lambda m, x, off: m(x, off)),
    Row("bag_mean_last_offset_padding", "EmbeddingBag", (6, 2),
        bag("mean", padding_idx=0, include_last_offset=True),
        (Fixed([3, 0, 4, 0, 0, 5, 1, 1]), Fixed([0, 3, 3, 5, 8])),
        call=lambda m, x, off: m(x, off)),
    # the repeated index sorts last: torch 2.13's CPU embedding_bag scales the gradient of a
    # once-seen index that sorts after a repeated one by the wrong count (pytorch#190063);
    # test_embedding_bag_scales_gradients_by_frequency covers that case
    Row("bag_sum_max_norm_freq", "EmbeddingBag", (6, 3),
        bag("sum", max_norm=1.5, scale_grad_by_freq=True), (Fixed([[0, 4, 4], [1, 4, 2]]),)),
    Row("bag_max_all_empty", "EmbeddingBag", (4, 2), bag("max"),
        (Fixed([], "int64"), Fixed([0, 0])), call=lambda m, x, off: m(x, off)),
    Row("bag_sum_padding_2d", "EmbeddingBag", (5, 3), bag("sum", padding_idx=4),
        (Fixed([[4, 1, 2], [4, 4, 4]]),)),
    # -------------------------------------------------------------------- conv
    Row("conv1d", "Conv1d", (3, 4, 3), inputs=(Float((2, 3, 9)),)),
    Row("conv1d_strided_groups", "Conv1d", (4, 6, 3),
        {"stride": 2, "padding": 1, "dilation": 2, "groups": 2, "bias": False},
        (Float((1, 4, 11)),)),
    Row("conv1d_same_reflect", "Conv1d", (2, 3, 4), {"padding": "same", "padding_mode": "reflect"},
        (Float((2, 2, 8)),)),
    Row("conv1d_circular", "Conv1d", (2, 2, 3), {"padding": 2, "padding_mode": "circular"},
        (Float((2, 2, 7)),)),
    Row("conv1d_valid_unbatched", "Conv1d", (2, 3, 3), {"padding": "valid"}, (Float((2, 6)),)),
    Row("conv2d", "Conv2d", (3, 4, 3), inputs=(Float((2, 3, 7, 6)),)),
    Row("conv2d_depthwise", "Conv2d", (4, 4, (3, 2)),
        {"stride": (2, 1), "padding": (1, 2), "dilation": (1, 2), "groups": 4},
        (Float((1, 4, 9, 8)),)),
    Row("conv2d_replicate_no_bias", "Conv2d", (2, 3, 3),
        {"padding": 1, "padding_mode": "replicate", "bias": False}, (Float((2, 2, 5, 5)),)),
    Row("conv2d_reflect", "Conv2d", (2, 3, 3), {"padding": (1, 2), "padding_mode": "reflect"},
        (Float((1, 2, 5, 6)),)),
    Row("conv2d_circular", "Conv2d", (2, 2, 3), {"padding": 1, "padding_mode": "circular"},
        (Float((2, 2, 4, 5)),)),
    Row("conv2d_same_even_dilated", "Conv2d", (3, 2, (2, 3)), {"padding": "same", "dilation": 2},
        (Float((2, 3, 6, 7)),)),
    Row("conv2d_strided_unbatched", "Conv2d", (2, 3, 3), {"stride": 2}, (Float((2, 7, 7)),)),
    Row("conv3d", "Conv3d", (2, 3, 2), inputs=(Float((1, 2, 4, 4, 3)),)),
    Row("conv3d_groups_replicate", "Conv3d", (2, 4, (1, 2, 3)),
        {"stride": (1, 2, 1), "padding": (0, 1, 1), "groups": 2, "padding_mode": "replicate"},
        (Float((2, 2, 3, 5, 4)),)),
    Row("conv_transpose1d", "ConvTranspose1d", (3, 2, 3), inputs=(Float((2, 3, 5)),)),
    Row("conv_transpose1d_groups", "ConvTranspose1d", (4, 6, 3),
        {"stride": 2, "padding": 1, "output_padding": 1, "groups": 2, "bias": False},
        (Float((1, 4, 6)),)),
    Row("conv_transpose1d_output_size", "ConvTranspose1d", (2, 3, 4), {"stride": 3},
        (Float((2, 2, 5)),), call=lambda m, x: m(x, output_size=[17])),
    Row("conv_transpose2d", "ConvTranspose2d", (3, 2, 3), inputs=(Float((2, 3, 4, 5)),)),
    Row("conv_transpose2d_output_padding", "ConvTranspose2d", (4, 4, (3, 2)),
        {"stride": (2, 3), "padding": (1, 0), "output_padding": (1, 2), "groups": 2},
        (Float((1, 4, 3, 4)),)),
    Row("conv_transpose2d_output_size_dilated", "ConvTranspose2d", (2, 3, 3),
        {"stride": 2, "padding": 1, "dilation": 2}, (Float((1, 2, 4, 4)),),
        call=lambda m, x: m(x, output_size=(1, 3, 10, 9))),
    Row("conv_transpose2d_unbatched", "ConvTranspose2d", (3, 2, 2), {"stride": 2},
        (Float((3, 4, 4)),)),
    # ----------------------------------------------------------------- pooling
    Row("max_pool1d", "MaxPool1d", (3,), inputs=(Float((2, 3, 10)),)),
    Row("max_pool1d_indices_ceil", "MaxPool1d", (3,),
        {"stride": 2, "padding": 1, "dilation": 2, "ceil_mode": True, "return_indices": True},
        (Float((2, 2, 11)),)),
    Row("max_pool2d", "MaxPool2d", (2,), inputs=(Float((2, 3, 6, 6)),)),
    Row("max_pool2d_indices_ceil", "MaxPool2d", ((3, 2),),
        {"stride": (2, 1), "padding": 1, "dilation": (1, 2), "return_indices": True,
         "ceil_mode": True}, (Float((1, 2, 7, 8)),)),
    Row("max_pool2d_unbatched", "MaxPool2d", (3,), {"stride": 2}, (Float((2, 7, 7)),)),
    Row("avg_pool1d", "AvgPool1d", (3,), inputs=(Float((2, 3, 10)),)),
    Row("avg_pool1d_ceil_exclude_pad", "AvgPool1d", (4,),
        {"stride": 2, "padding": 2, "ceil_mode": True, "count_include_pad": False},
        (Float((1, 2, 9)),)),
    Row("avg_pool2d", "AvgPool2d", (2,), inputs=(Float((2, 3, 6, 6)),)),
    Row("avg_pool2d_ceil_exclude_pad", "AvgPool2d", ((3, 2),),
        {"stride": (2, 1), "padding": 1, "ceil_mode": True, "count_include_pad": False},
        (Float((1, 2, 7, 6)),)),
    Row("avg_pool2d_divisor", "AvgPool2d", (3,), {"stride": 2, "padding": 1,
                                                  "divisor_override": 5}, (Float((2, 2, 7, 7)),)),
    Row("adaptive_avg_pool1d", "AdaptiveAvgPool1d", (4,), inputs=(Float((2, 3, 10)),)),
    Row("adaptive_avg_pool1d_unbatched", "AdaptiveAvgPool1d", (5,), inputs=(Float((2, 7)),)),
    Row("adaptive_avg_pool2d_none", "AdaptiveAvgPool2d", ((3, None),),
        inputs=(Float((2, 3, 7, 5)),)),
    Row("adaptive_avg_pool2d", "AdaptiveAvgPool2d", (2,), inputs=(Float((1, 2, 6, 6)),)),
    Row("adaptive_avg_pool2d_unbatched", "AdaptiveAvgPool2d", ((4, 3),),
        inputs=(Float((2, 5, 7)),)),
    Row("adaptive_max_pool2d", "AdaptiveMaxPool2d", (3,), inputs=(Float((2, 3, 7, 8)),)),
    Row("adaptive_max_pool2d_indices", "AdaptiveMaxPool2d", ((2, 3),), {"return_indices": True},
        (Float((1, 2, 5, 6)),)),
    # ----------------------------------------------------------- normalisation
    Row("batch_norm1d", "BatchNorm1d", (4,), inputs=(Float((6, 4), -1, 3),),
        modes=("train", "eval"), steps=3),
    Row("batch_norm1d_cumulative_3d", "BatchNorm1d", (3,), {"momentum": None},
        (Float((5, 3, 7), 0, 2),), modes=("train", "eval"), steps=3),
    Row("batch_norm1d_no_affine", "BatchNorm1d", (3,), {"affine": False}, (Float((4, 3)),),
        modes=("train", "eval"), steps=2),
    Row("batch_norm1d_untracked", "BatchNorm1d", (3,), {"track_running_stats": False},
        (Float((4, 3, 5)),), modes=("train", "eval")),
    Row("batch_norm1d_no_bias", "BatchNorm1d", (4,), {"eps": 1e-3, "momentum": 0.3,
                                                      "bias": False},
        (Float((6, 4), 1, 2),), modes=("train", "eval"), steps=2),
    Row("batch_norm2d", "BatchNorm2d", (3,), inputs=(Float((4, 3, 5, 5), -2, 1),),
        modes=("train", "eval"), steps=3),
    Row("batch_norm2d_cumulative_no_affine", "BatchNorm2d", (2,),
        {"momentum": None, "affine": False}, (Float((3, 2, 4, 4)),), modes=("train", "eval"),
        steps=3),
    Row("batch_norm2d_batch1", "BatchNorm2d", (2,), inputs=(Float((1, 2, 3, 3)),),
        modes=("train", "eval")),
    # outside a process group SyncBatchNorm is BatchNorm, in both libraries (the synchronised
    # statistics are tested under mpiexec, tests/distributed/test_ddp.py)
    Row("sync_batch_norm_3d", "SyncBatchNorm", (3,), inputs=(Float((4, 3, 5), -1, 2),),
        modes=("train", "eval"), steps=2),
    Row("sync_batch_norm_4d_cumulative", "SyncBatchNorm", (2,), {"momentum": None},
        (Float((3, 2, 4, 4)),), modes=("train", "eval"), steps=2),
    Row("instance_norm2d", "InstanceNorm2d", (3,), inputs=(Float((2, 3, 5, 5)),)),
    Row("instance_norm2d_tracked", "InstanceNorm2d", (3,),
        {"affine": True, "track_running_stats": True}, (Float((2, 3, 4, 5), 0, 3),),
        modes=("train", "eval"), steps=2),
    Row("instance_norm2d_unbatched", "InstanceNorm2d", (2,), {"affine": True},
        (Float((2, 4, 4)),)),
    Row("layer_norm", "LayerNorm", (5,), inputs=(Float((3, 5)),)),
    Row("layer_norm_2d_no_affine", "LayerNorm", ((3, 4),), {"elementwise_affine": False},
        (Float((2, 3, 4)),)),
    Row("layer_norm_no_bias", "LayerNorm", ((4,),), {"bias": False, "eps": 1e-3},
        (Float((2, 3, 4)),)),
    Row("group_norm", "GroupNorm", (2, 4), inputs=(Float((3, 4, 5)),)),
    Row("group_norm_no_affine", "GroupNorm", (3, 6), {"affine": False},
        (Float((2, 6, 3, 3)),)),
    Row("group_norm_one_group_no_bias", "GroupNorm", (1, 4), {"eps": 1e-3, "bias": False},
        (Float((2, 4, 2, 2)),)),
    Row("rms_norm", "RMSNorm", (5,), inputs=(Float((3, 5)),)),
    Row("rms_norm_2d_eps", "RMSNorm", ((2, 3),), {"eps": 1e-4}, (Float((4, 2, 3)),)),
    Row("rms_norm_no_affine", "RMSNorm", (4,), {"elementwise_affine": False}, (Float((2, 4)),)),
    # ----------------------------------------------------------------- dropout
    Row("dropout_eval", "Dropout", (0.3,), inputs=(Float((4, 5)),), modes=("eval",)),
    Row("dropout2d_eval", "Dropout2d", (0.2,), inputs=(Float((2, 3, 4, 4)),), modes=("eval",)),
    Row("alpha_dropout_eval", "AlphaDropout", (0.4,), inputs=(Float((3, 4)),), modes=("eval",)),
    Row("dropout_p0_train", "Dropout", (0.0,), inputs=(Float((3, 4)),)),
    # ------------------------------------------------------------------- shape
    Row("flatten", "Flatten", inputs=(Float((2, 3, 4, 5)),)),
    Row("flatten_range", "Flatten", (0, 2), inputs=(Float((2, 3, 4, 5)),)),
    Row("unflatten", "Unflatten", (1, (2, 3)), inputs=(Float((4, 6, 5)),)),
    Row("unflatten_inferred", "Unflatten", (-1, [2, -1]), inputs=(Float((3, 8)),)),
    Row("upsample_nearest", "Upsample", (), {"scale_factor": 2}, (Float((1, 2, 3, 4)),)),
    Row("upsample_bilinear_size", "Upsample", (), {"size": (5, 7), "mode": "bilinear",
                                                   "align_corners": False},
        (Float((2, 2, 3, 4)),)),
    Row("upsample_bilinear_corners", "Upsample", (), {"scale_factor": 1.5, "mode": "bilinear",
                                                      "align_corners": True},
        (Float((1, 2, 4, 4)),)),
    Row("upsample_linear", "Upsample", (), {"size": 7, "mode": "linear"}, (Float((2, 3, 4)),)),
    Row("upsample_bicubic", "Upsample", (), {"scale_factor": (2, 3), "mode": "bicubic"},
        (Float((1, 1, 3, 3)),)),
    Row("pixel_shuffle", "PixelShuffle", (2,), inputs=(Float((2, 8, 3, 3)),)),
    Row("pixel_shuffle_unbatched", "PixelShuffle", (3,), inputs=(Float((9, 2, 2)),)),
    Row("pixel_unshuffle", "PixelUnshuffle", (2,), inputs=(Float((2, 2, 4, 6)),)),
    Row("unfold", "Unfold", (2,), inputs=(Float((2, 3, 4, 5)),)),
    Row("unfold_options", "Unfold", ((2, 3),), {"dilation": (1, 2), "padding": 1,
                                                "stride": (2, 1)}, (Float((1, 2, 5, 6)),)),
    Row("fold", "Fold", ((4, 5), 2), inputs=(Float((2, 12, 12)),)),
    Row("fold_options", "Fold", ((5, 6), (2, 3)), {"padding": 1, "stride": 2},
        (Float((1, 12, 9)),)),
    # ---------------------------- 3-d layers, padding, channel shuffle (issue 21)
    Row("conv_transpose3d", "ConvTranspose3d", (2, 3, 2), {"stride": 2, "padding": 1},
        (Float((1, 2, 3, 3, 2)),)),
    Row("batch_norm3d", "BatchNorm3d", (2,), inputs=(Float((3, 2, 2, 3, 2), -1, 2),),
        modes=("train", "eval"), steps=2),
    Row("instance_norm1d", "InstanceNorm1d", (3,), {"affine": True}, (Float((2, 3, 6)),)),
    Row("instance_norm1d_unbatched_tracked", "InstanceNorm1d", (2,),
        {"track_running_stats": True}, (Float((2, 5), 1, 2),), modes=("train", "eval")),
    Row("instance_norm3d", "InstanceNorm3d", (2,), inputs=(Float((2, 2, 3, 3, 2)),)),
    Row("max_pool3d", "MaxPool3d", (2,), {"stride": 1, "padding": 1},
        (Float((1, 2, 3, 4, 3)),)),
    Row("avg_pool3d", "AvgPool3d", ((2, 2, 3),), {"count_include_pad": False, "padding": 1},
        (Float((2, 1, 3, 4, 3)),)),
    Row("adaptive_max_pool1d_indices", "AdaptiveMaxPool1d", (3,), {"return_indices": True},
        (Float((2, 3, 8)),)),
    Row("adaptive_max_pool3d", "AdaptiveMaxPool3d", ((2, 1, 2),), inputs=(Float((1, 2, 4, 3, 5)),)),
    Row("adaptive_avg_pool3d", "AdaptiveAvgPool3d", (2,), inputs=(Float((2, 1, 5, 4, 3)),)),
    Row("local_response_norm", "LocalResponseNorm", (3,), {"alpha": 0.1, "k": 2.0},
        (Float((2, 5, 3, 3)),)),
    Row("channel_shuffle", "ChannelShuffle", (3,), inputs=(Float((2, 6, 2, 2)),)),
    Row("zero_pad1d", "ZeroPad1d", ((1, 2),), inputs=(Float((2, 3, 4)),)),
    Row("zero_pad2d", "ZeroPad2d", ((1, 0, 2, 1),), inputs=(Float((1, 2, 3, 3)),)),
    Row("zero_pad3d", "ZeroPad3d", (1,), inputs=(Float((1, 1, 2, 2, 2)),)),
    Row("constant_pad1d", "ConstantPad1d", (2, 3.5), inputs=(Float((2, 4)),)),
    Row("constant_pad2d", "ConstantPad2d", ((1, 1, 0, 2), -1.0), inputs=(Float((1, 2, 3, 3)),)),
    Row("constant_pad3d", "ConstantPad3d", (1, 0.5), inputs=(Float((1, 1, 2, 2, 2)),)),
    Row("reflection_pad1d", "ReflectionPad1d", ((2, 1),), inputs=(Float((2, 3, 5)),)),
    Row("reflection_pad2d", "ReflectionPad2d", (1,), inputs=(Float((1, 2, 4, 4)),)),
    Row("reflection_pad3d", "ReflectionPad3d", ((1, 0, 1, 1, 0, 1),),
        inputs=(Float((1, 1, 3, 3, 3)),)),
    Row("replication_pad1d", "ReplicationPad1d", ((1, 3),), inputs=(Float((2, 3, 4)),)),
    Row("replication_pad2d", "ReplicationPad2d", (2,), inputs=(Float((1, 1, 3, 3)),)),
    Row("replication_pad3d", "ReplicationPad3d", (1,), inputs=(Float((1, 1, 2, 3, 2)),)),
    Row("circular_pad1d", "CircularPad1d", ((2, 1),), inputs=(Float((2, 3, 4)),)),
    Row("circular_pad2d", "CircularPad2d", (1,), inputs=(Float((1, 2, 3, 3)),)),
    Row("circular_pad3d", "CircularPad3d", ((1, 1, 0, 1, 1, 0),),
        inputs=(Float((1, 1, 2, 3, 3)),)),
]


# -------------------------------------------------------------------------- activations
WIDE = Float((3, 4), -4, 4)

ACTIVATION_ROWS = [
    ("ReLU", (), {}, WIDE), ("ReLU6", (), {}, Float((3, 4), -3, 9)),
    ("LeakyReLU", (), {}, WIDE), ("LeakyReLU", (0.2,), {}, WIDE),
    ("ELU", (), {}, WIDE), ("ELU", (), {"alpha": 0.7}, WIDE), ("SELU", (), {}, WIDE),
    ("CELU", (), {}, WIDE), ("CELU", (1.5,), {}, WIDE),
    ("GELU", (), {}, WIDE), ("GELU", ("tanh",), {}, WIDE),
    ("SiLU", (), {}, WIDE), ("Mish", (), {}, WIDE),
    ("Softplus", (), {}, WIDE), ("Softplus", (), {"beta": 2, "threshold": 1.5}, WIDE),
    ("Softsign", (), {}, WIDE),
    ("Hardtanh", (), {}, Float((3, 4), -2, 2)), ("Hardtanh", (-0.5, 0.8), {}, WIDE),
    ("Hardsigmoid", (), {}, WIDE), ("Hardswish", (), {}, WIDE),
    ("PReLU", (), {}, WIDE), ("PReLU", (3,), {"init": 0.1}, Float((2, 3, 4))),
    ("GLU", (), {}, WIDE), ("GLU", (), {"dim": 1}, Float((2, 4, 3))),
    ("LogSigmoid", (), {}, WIDE), ("Tanhshrink", (), {}, WIDE),
    ("Softmin", (), {"dim": 1}, WIDE), ("Softmin", (0,), {}, Float((3, 2, 2))),
    ("Threshold", (0.1, -2.0), {}, WIDE),
    ("Softmax", (), {"dim": -1}, WIDE), ("Softmax", (0,), {}, Float((3, 4, 2))),
    ("LogSoftmax", (), {"dim": 1}, WIDE),
    ("Sigmoid", (), {}, WIDE), ("Tanh", (), {}, WIDE),
    ("Hardshrink", (), {}, WIDE), ("Hardshrink", (0.3,), {}, WIDE),
    ("Softshrink", (), {}, WIDE), ("Softshrink", (), {"lambd": 1.2}, WIDE),
]


# ------------------------------------------------------------------------------- losses
@dataclass(frozen=True)
class W:
    """A weight tensor argument, built in each library from the same values."""

    value: tuple


def weight_args(kwargs: dict, tensor) -> dict:
    return {k: tensor(np.asarray(v.value, np.float32)) if isinstance(v, W) else v
            for k, v in kwargs.items()}


def log_softmax_input(m, x, *rest):
    return m(x.log_softmax(2), *rest)


SIGNS = Fixed([1.0, -1.0, 1.0, -1.0], "float32")
PROBS = Float((3, 4), 0.05, 0.95)
TARGET01 = Float((3, 4), 0, 1, grad=False)

LOSS_ROWS = [
    ("MSELoss", {}, (Float((3, 4)), Float((3, 4)))),
    ("MSELoss", {"reduction": "sum"}, (Float((2, 3)), Float((2, 3)))),
    ("L1Loss", {"reduction": "none"}, (Float((3, 4)), Float((3, 4)))),
    ("SmoothL1Loss", {"beta": 0.5}, (Float((3, 4)), Float((3, 4)))),
    ("SmoothL1Loss", {"reduction": "none"}, (Float((5,)), Float((5,)))),
    ("HuberLoss", {"delta": 0.7}, (Float((3, 4)), Float((3, 4)))),
    ("HuberLoss", {"reduction": "sum"}, (Float((3, 4)), Float((3, 4)))),
    ("CrossEntropyLoss", {}, (Float((4, 5)), Int((4,), 0, 5))),
    ("CrossEntropyLoss", {"weight": W((1, 2, 0.5, 1, 3)), "ignore_index": 2,
                          "label_smoothing": 0.1}, (Float((5, 5)), Fixed([2, 0, 4, 2, 1]))),
    ("CrossEntropyLoss", {"reduction": "none"}, (Float((2, 3, 4, 4)), Int((2, 4, 4), 0, 3))),
    ("CrossEntropyLoss", {"reduction": "sum", "label_smoothing": 0.2},
     (Float((4, 5)), Float((4, 5), 0, 1, grad=False))),
    ("NLLLoss", {}, (Float((4, 5)), Int((4,), 0, 5))),
    ("NLLLoss", {"weight": W((1, 2, 0.5)), "ignore_index": 1, "reduction": "none"},
     (Float((4, 3)), Fixed([1, 0, 2, 1]))),
    ("BCELoss", {}, (PROBS, TARGET01)),
    ("BCELoss", {"weight": W((1, 2, 0.5, 1)), "reduction": "sum"}, (PROBS, TARGET01)),
    ("BCEWithLogitsLoss", {}, (Float((3, 4)), TARGET01)),
    ("BCEWithLogitsLoss", {"weight": W(((1.0,), (2.0,), (0.5,))),
                           "pos_weight": W((1, 3, 0.5, 2)), "reduction": "none"},
     (Float((3, 4)), TARGET01)),
    ("KLDivLoss", {"reduction": "batchmean"}, (Float((3, 4)), Float((3, 4), 0.1, 1))),
    ("KLDivLoss", {"log_target": True, "reduction": "sum"}, (Float((3, 4)), Float((3, 4)))),
    ("PoissonNLLLoss", {}, (Float((3, 4)), Float((3, 4), 0, 3, grad=False))),
    ("PoissonNLLLoss", {"log_input": False, "full": True, "reduction": "none"},
     (Float((3, 4), 0.5, 2), Float((3, 4), 0, 4, grad=False))),
    ("GaussianNLLLoss", {}, (Float((3, 4)), Float((3, 4)), Float((3, 4), 0.1, 1))),
    ("GaussianNLLLoss", {"full": True, "eps": 1e-3, "reduction": "sum"},
     (Float((3, 4)), Float((3, 4)), Float((3, 1), 0.1, 1))),
    ("CosineEmbeddingLoss", {}, (Float((4, 5)), Float((4, 5)), SIGNS)),
    ("CosineEmbeddingLoss", {"margin": 0.2, "reduction": "none"},
     (Float((4, 5)), Float((4, 5)), SIGNS)),
    ("MarginRankingLoss", {"margin": 0.1}, (Float((4,)), Float((4,)), SIGNS)),
    ("HingeEmbeddingLoss", {}, (Float((4,)), SIGNS)),
    ("HingeEmbeddingLoss", {"margin": 0.5, "reduction": "sum"}, (Float((4,), 0, 1), SIGNS)),
    ("TripletMarginLoss", {}, (Float((4, 5)), Float((4, 5)), Float((4, 5)))),
    ("TripletMarginLoss", {"margin": 0.5, "p": 1, "swap": True, "reduction": "none"},
     (Float((4, 5)), Float((4, 5)), Float((4, 5)))),
    ("MultiMarginLoss", {}, (Float((4, 5)), Int((4,), 0, 5))),
    ("MultiMarginLoss", {"p": 2, "margin": 0.5, "weight": W((1, 2, 0.5, 1, 3))},
     (Float((4, 5)), Int((4,), 0, 5))),
    ("MultiLabelSoftMarginLoss", {}, (Float((3, 5)), Fixed([[0, 1, 1, 0, 0], [1, 0, 0, 0, 1],
                                                           [0, 0, 1, 1, 1]], "float32"))),
    ("MultiLabelSoftMarginLoss", {"weight": W((1, 2, 0.5, 1, 3)), "reduction": "none"},
     (Float((2, 5)), Fixed([[0, 1, 1, 0, 0], [1, 0, 0, 0, 1]], "float32"))),
    ("CTCLoss", {}, (Float((6, 2, 4)), Fixed([[1, 2, 1], [3, 1, 0]]), Fixed([6, 5]),
                     Fixed([3, 2])), log_softmax_input),
    ("CTCLoss", {"blank": 3, "reduction": "sum", "zero_infinity": True},
     (Float((5, 2, 4)), Fixed([0, 1, 1, 2, 2, 2]), Fixed([5, 5]), Fixed([2, 4])),
     log_softmax_input),
]


def build_loss(name: str, kwargs: dict):
    return (getattr(nn, name)(**weight_args(kwargs, dl.tensor)),
            getattr(torch.nn, name)(**weight_args(kwargs, torch.tensor)))
