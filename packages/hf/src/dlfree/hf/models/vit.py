"""ViT (Dosovitskiy et al., 2021): an image cut into patches, each linearly embedded, a [CLS]
token and learned positions, then a pre-norm transformer encoder; with the checkpoints' weight
names (`vit.encoder.layer.0.attention.attention.query`, ...). `interpolate_pos_encoding`
resizes the position grid (bicubic) for images of another size than the training one."""

from __future__ import annotations

import dlfree as dl
from dlfree import ShapeError, nn
from dlfree import functional as F

import attrs

from ..configuration import (
    PretrainedConfig,
    boolean,
    one_of,
    optional,
    positive_float,
    positive_int,
    probability,
)
from ..modeling import (
    ACTIVATIONS,
    BaseModelOutputWithPooling,
    ImageClassifierOutput,
    PreTrainedModel,
    get_activation,
    sequence_classification_loss,
)
from .encoder import LayerStack, self_attention

__all__ = ["ViTConfig", "ViTPreTrainedModel", "ViTModel", "ViTForImageClassification"]


def _size_pair(value, name: str) -> tuple[int, int]:
    pair = tuple(value) if isinstance(value, (list, tuple)) else (value, value)
    if len(pair) != 2 or not all(isinstance(v, int) and not isinstance(v, bool) and v > 0
                                 for v in pair):
        raise ValueError(f"ViTConfig.{name} must be a positive int or a [height, width] pair, "
                         f"got {value!r}")
    return pair  # type: ignore[return-value]


@attrs.define(kw_only=True, slots=False)
class ViTConfig(PretrainedConfig):
    """transformers' ViTConfig fields (vit-base-patch16-224's values by default)."""

    model_type = "vit"

    hidden_size: int = attrs.field(default=768, validator=positive_int)
    num_hidden_layers: int = attrs.field(default=12, validator=positive_int)
    num_attention_heads: int = attrs.field(default=12, validator=positive_int)
    intermediate_size: int = attrs.field(default=3072, validator=positive_int)
    hidden_act: str = attrs.field(default="gelu", validator=one_of(*ACTIVATIONS))
    hidden_dropout_prob: float = attrs.field(default=0.0, validator=probability)
    attention_probs_dropout_prob: float = attrs.field(default=0.0, validator=probability)
    initializer_range: float = attrs.field(default=0.02, validator=positive_float)
    layer_norm_eps: float = attrs.field(default=1e-12, validator=positive_float)
    image_size: int | list[int] = 224
    patch_size: int | list[int] = 16
    num_channels: int = attrs.field(default=3, validator=positive_int)
    qkv_bias: bool = attrs.field(default=True, validator=boolean)
    encoder_stride: int = attrs.field(default=16, validator=positive_int)
    pooler_output_size: int | None = attrs.field(default=None, validator=optional(positive_int))
    pooler_act: str = attrs.field(default="tanh", validator=one_of(*ACTIVATIONS))

    def validate(self) -> None:
        image, patch = _size_pair(self.image_size, "image_size"), \
            _size_pair(self.patch_size, "patch_size")
        if image[0] % patch[0] or image[1] % patch[1]:
            raise ValueError(f"ViTConfig: image_size {image} must be a whole number of patches "
                             f"of patch_size {patch}")
        if self.hidden_size % self.num_attention_heads:
            raise ValueError(f"ViTConfig: hidden_size ({self.hidden_size}) must be divisible "
                             f"by num_attention_heads ({self.num_attention_heads})")


# ------------------------------------------------------------------------ layers
class ViTPatchEmbeddings(nn.Module):
    """Non-overlapping patches, each projected to the hidden size by a strided convolution;
    (batch, channels, height, width) in, (batch, patches, hidden) out."""

    def __init__(self, config: ViTConfig):
        super().__init__()
        self.patch_size = _size_pair(config.patch_size, "patch_size")
        self.num_channels = config.num_channels
        self.projection = nn.Conv2d(config.num_channels, config.hidden_size,
                                    kernel_size=self.patch_size, stride=self.patch_size)

    def forward(self, pixel_values):
        return self.projection(pixel_values).flatten(2).transpose(1, 2)


class ViTEmbeddings(nn.Module):
    """[CLS] and the patch embeddings, plus learned positions (interpolated for another image
    size when asked), then dropout."""

    def __init__(self, config: ViTConfig):
        super().__init__()
        self.image_size = _size_pair(config.image_size, "image_size")
        self.patch_embeddings = ViTPatchEmbeddings(config)
        patch = self.patch_embeddings.patch_size
        self.grid = (self.image_size[0] // patch[0], self.image_size[1] // patch[1])
        self.cls_token = nn.Parameter(dl.zeros(1, 1, config.hidden_size))
        self.position_embeddings = nn.Parameter(
            dl.zeros(1, self.grid[0] * self.grid[1] + 1, config.hidden_size))
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def interpolate_pos_encoding(self, height: int, width: int):
        """The position embeddings for an image of `height` × `width` pixels: the patch grid's
        table resized bicubically (transformers' rule), [CLS]'s kept."""
        patch = self.patch_embeddings.patch_size
        rows, cols = height // patch[0], width // patch[1]
        if (rows, cols) == self.grid:
            return self.position_embeddings
        dim = self.position_embeddings.shape[-1]
        grid = self.position_embeddings[:, 1:].reshape(1, *self.grid, dim).permute(0, 3, 1, 2)
        grid = F.interpolate(grid, size=(rows, cols), mode="bicubic", align_corners=False)
        return dl.cat([self.position_embeddings[:, :1],
                       grid.permute(0, 2, 3, 1).reshape(1, rows * cols, dim)], dim=1)

    def forward(self, pixel_values, interpolate_pos_encoding: bool = False):
        batch, channels, height, width = pixel_values.shape
        if not interpolate_pos_encoding and (height, width) != self.image_size:
            raise ShapeError(f"ViT: the image is {height}×{width} but the model was made for "
                             f"{self.image_size[0]}×{self.image_size[1]}; resize it (the image "
                             "processor does) or pass interpolate_pos_encoding=True")
        patches = self.patch_embeddings(pixel_values)
        cls = self.cls_token.expand(batch, -1, -1).to(patches.dtype)
        embeddings = dl.cat([cls, patches], dim=1)
        if interpolate_pos_encoding:
            embeddings = embeddings + self.interpolate_pos_encoding(height, width)
        else:
            embeddings = embeddings + self.position_embeddings
        return self.dropout(embeddings)


class ViTSelfAttention(nn.Module):
    def __init__(self, config: ViTConfig):
        super().__init__()
        self.num_heads = config.num_attention_heads
        width = config.hidden_size
        self.query = nn.Linear(width, width, bias=config.qkv_bias)
        self.key = nn.Linear(width, width, bias=config.qkv_bias)
        self.value = nn.Linear(width, width, bias=config.qkv_bias)
        self.dropout_p = config.attention_probs_dropout_prob

    def forward(self, hidden_states):
        return self_attention(hidden_states, self.query, self.key, self.value, self.num_heads,
                              None, self.dropout_p if self.training else 0.0)


class ViTDenseDropout(nn.Module):
    """A projection and dropout (ViT's attention output and feed-forward output; the
    residuals are added by the layer)."""

    def __init__(self, in_features: int, out_features: int, dropout: float):
        super().__init__()
        self.dense = nn.Linear(in_features, out_features)
        self.dropout = nn.Dropout(dropout)

    def forward(self, hidden_states):
        return self.dropout(self.dense(hidden_states))


class ViTAttention(nn.Module):
    def __init__(self, config: ViTConfig):
        super().__init__()
        self.attention = ViTSelfAttention(config)
        self.output = ViTDenseDropout(config.hidden_size, config.hidden_size,
                                      config.hidden_dropout_prob)

    def forward(self, hidden_states):
        return self.output(self.attention(hidden_states))


class ViTIntermediate(nn.Module):
    def __init__(self, config: ViTConfig):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.intermediate_size)
        self.activation = get_activation(config.hidden_act)

    def forward(self, hidden_states):
        return self.activation(self.dense(hidden_states))


class ViTLayer(nn.Module):
    """Pre-norm: x + attention(layernorm_before(x)), then + feed-forward(layernorm_after)."""

    def __init__(self, config: ViTConfig):
        super().__init__()
        self.attention = ViTAttention(config)
        self.intermediate = ViTIntermediate(config)
        self.output = ViTDenseDropout(config.intermediate_size, config.hidden_size,
                                      config.hidden_dropout_prob)
        self.layernorm_before = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.layernorm_after = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)

    def forward(self, hidden_states, mask=None):
        attended = self.attention(self.layernorm_before(hidden_states)) + hidden_states
        return self.output(self.intermediate(self.layernorm_after(attended))) + attended


class ViTEncoder(LayerStack):
    def __init__(self, config: ViTConfig):
        super().__init__()
        self.layer = nn.ModuleList([ViTLayer(config) for _ in range(config.num_hidden_layers)])


class ViTPooler(nn.Module):
    """activation(dense([CLS]'s final state))."""

    def __init__(self, config: ViTConfig):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size,
                               config.pooler_output_size or config.hidden_size)
        self.activation = get_activation(config.pooler_act)

    def forward(self, hidden_states):
        return self.activation(self.dense(hidden_states[:, 0]))


# ------------------------------------------------------------------------ models
def _pixel_values(pixel_values, channels: int):
    values = pixel_values if isinstance(pixel_values, dl.Tensor) else dl.as_tensor(pixel_values)
    if values.ndim != 4 or values.shape[1] != channels:
        raise ShapeError(f"ViT: pixel_values must be (batch, {channels}, height, width), got "
                         f"{tuple(values.shape)}")
    if not values.is_floating_point():
        raise dl.DTypeError(f"ViT: pixel_values must be floating (the image processor's "
                            f"output), got {values.dtype}")
    return values


class ViTPreTrainedModel(PreTrainedModel):
    """ViT's config class, weight prefix and initialisation (normal weights, including the
    [CLS] token and the positions)."""

    config_class = ViTConfig
    base_model_prefix = "vit"

    def _init_weights(self, module: nn.Module) -> None:
        super()._init_weights(module)
        std = self.config.initializer_range
        if isinstance(module, nn.Conv2d):
            nn.init.trunc_normal_(module.weight, 0.0, std)
            nn.init.zeros_(module.bias)
        elif isinstance(module, ViTEmbeddings):
            nn.init.trunc_normal_(module.position_embeddings, 0.0, std)
            nn.init.trunc_normal_(module.cls_token, 0.0, std)


class ViTModel(ViTPreTrainedModel):
    """The ViT encoder: `last_hidden_state` (batch, 1 + patches, hidden) after the final
    layer norm and, with the pooling layer, `pooler_output`."""

    def __init__(self, config: ViTConfig, add_pooling_layer: bool = True):
        super().__init__(config)
        self.embeddings = ViTEmbeddings(config)
        self.encoder = ViTEncoder(config)
        self.layernorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.pooler = ViTPooler(config) if add_pooling_layer else None
        self.post_init()

    def forward(self, pixel_values=None, output_hidden_states: bool = False,
                interpolate_pos_encoding: bool = False):
        """`pixel_values` (batch, channels, height, width), as the image processor makes
        them; another size than config.image_size needs `interpolate_pos_encoding=True`."""
        values = _pixel_values(pixel_values, self.config.num_channels)
        hidden = self.embeddings(values, interpolate_pos_encoding)
        last, states = self.encoder(hidden, None, output_hidden_states)
        last = self.layernorm(last)
        pooled = self.pooler(last) if self.pooler is not None else None
        return BaseModelOutputWithPooling(last_hidden_state=last, pooler_output=pooled,
                                          hidden_states=states)


class ViTForImageClassification(ViTPreTrainedModel):
    """A linear classifier on [CLS]'s final state; `labels` gives the loss for
    `config.problem_type`, and `config.id2label` names the classes."""

    def __init__(self, config: ViTConfig):
        super().__init__(config)
        self.vit = ViTModel(config, add_pooling_layer=False)
        self.classifier = nn.Linear(config.hidden_size, config.num_labels)
        self.post_init()

    def forward(self, pixel_values=None, labels=None, output_hidden_states: bool = False,
                interpolate_pos_encoding: bool = False):
        out = self.vit(pixel_values, output_hidden_states, interpolate_pos_encoding)
        logits = self.classifier(out.last_hidden_state[:, 0])
        loss = sequence_classification_loss(logits, labels, self.config) \
            if labels is not None else None
        return ImageClassifierOutput(loss=loss, logits=logits, hidden_states=out.hidden_states)


MODEL_TYPE = "vit"
CONFIG = ViTConfig
HEADS = {"base": ViTModel, "image_classification": ViTForImageClassification}
