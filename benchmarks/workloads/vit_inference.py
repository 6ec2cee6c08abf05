"""Inference of a ViT-Tiny-sized image classifier (12 layers, 192 wide, 3 heads, 16×16
patches of 224×224 images, 1000 classes): dl.free's `AutoModelForImageClassification`
against transformers' on torch, float32, without gradients.

The weights are fixed random ones (seed 0, N(0, 0.02²) as ViT initialises, unit norm
scales), written as a temporary checkpoint folder that each framework loads; the batch is
32 fixed random images already normalised (what the image processor gives). A step is one
forward pass; it returns the (32, 1000) logits, which the smoke test compares.
"""

import json
import tempfile
from pathlib import Path

import numpy as np

from .plan import Plan

NAME = "vit_inference"
DESCRIPTION = "ViT-Tiny-sized classifier forward, batch 32 x 3 x 224 x 224, float32, no grad"
UNIT = "ms"
REFERENCE = "transformers"
TARGETS = {"transformers": 1.5}
PLANS = {"full": Plan(rounds=11, iterations=3, warmup=2),
         "quick": Plan(rounds=3, iterations=1, warmup=1)}

LAYERS, WIDTH, HEADS, FEED_FORWARD, PATCH, CLASSES = 12, 192, 3, 768, 16, 1000
# Read when a step is built, so that the smoke test can run a smaller problem.
BATCH, IMAGE = 32, 224
INIT_STD = 0.02


def _weights() -> dict:
    """The ViTForImageClassification state under transformers' names."""
    rng = np.random.default_rng(0)
    patches = (IMAGE // PATCH) ** 2

    def normal(*shape):
        return rng.standard_normal(shape, dtype=np.float32) * np.float32(INIT_STD)

    def norm(prefix):
        return {f"{prefix}.weight": np.ones(WIDTH, np.float32),
                f"{prefix}.bias": np.zeros(WIDTH, np.float32)}

    def linear(prefix, out, inp):
        return {f"{prefix}.weight": normal(out, inp), f"{prefix}.bias": normal(out)}

    embeddings = "vit.embeddings"
    state = {f"{embeddings}.cls_token": normal(1, 1, WIDTH),
             f"{embeddings}.position_embeddings": normal(1, patches + 1, WIDTH),
             f"{embeddings}.patch_embeddings.projection.weight": normal(WIDTH, 3, PATCH, PATCH),
             f"{embeddings}.patch_embeddings.projection.bias": normal(WIDTH),
             **norm("vit.layernorm"), **linear("classifier", CLASSES, WIDTH)}
    for i in range(LAYERS):
        layer = f"vit.encoder.layer.{i}"
        for name in ("query", "key", "value"):
            state.update(linear(f"{layer}.attention.attention.{name}", WIDTH, WIDTH))
        state.update({**linear(f"{layer}.attention.output.dense", WIDTH, WIDTH),
                      **linear(f"{layer}.intermediate.dense", FEED_FORWARD, WIDTH),
                      **linear(f"{layer}.output.dense", WIDTH, FEED_FORWARD),
                      **norm(f"{layer}.layernorm_before"), **norm(f"{layer}.layernorm_after")})
    return state


def _write_checkpoint(folder: str) -> str:
    """Write config.json and model.safetensors into `folder`; return it."""
    from safetensors.numpy import save_file

    config = {"model_type": "vit", "architectures": ["ViTForImageClassification"],
              "hidden_size": WIDTH, "num_hidden_layers": LAYERS, "num_attention_heads": HEADS,
              "intermediate_size": FEED_FORWARD, "image_size": IMAGE, "patch_size": PATCH,
              "layer_norm_eps": 1e-12, "hidden_act": "gelu",
              "id2label": {str(i): f"class_{i}" for i in range(CLASSES)}}
    (Path(folder) / "config.json").write_text(json.dumps(config))
    save_file(_weights(), str(Path(folder) / "model.safetensors"), metadata={"format": "pt"})
    return folder


def _images() -> np.ndarray:
    return np.random.default_rng(1).standard_normal((BATCH, 3, IMAGE, IMAGE), dtype=np.float32)


def build_dlfree():
    """`dlfree.hf.AutoModelForImageClassification.from_pretrained`, under `dl.no_grad()`."""
    import dlfree as dl
    from dlfree.hf import AutoModelForImageClassification

    with tempfile.TemporaryDirectory() as folder:
        model = AutoModelForImageClassification.from_pretrained(_write_checkpoint(folder))
    images = dl.tensor(_images())

    def step():
        with dl.no_grad():
            return model(images).logits

    return step


def build_transformers():
    """`transformers.AutoModelForImageClassification.from_pretrained` (its default
    attention, SDPA), in eval mode under `torch.no_grad()`."""
    import torch
    import transformers

    with tempfile.TemporaryDirectory() as folder:
        model = transformers.AutoModelForImageClassification.from_pretrained(
            _write_checkpoint(folder)).eval()
    images = torch.from_numpy(_images())

    def step():
        with torch.no_grad():
            return model(images).logits

    return step


BUILDERS = {"dlfree": build_dlfree, "transformers": build_transformers}
