"""ViT against transformers on a tiny random model (32×32 images, 8×8 patches): outputs,
position interpolation for other image sizes, gradients, export both ways; the NumPy image
processor against transformers' (Pillow-backed) one on random images of several sizes; and
the image_classification task."""

from __future__ import annotations

import copy

import dlfree as dl
from dlfree import hf
from dlfree.hf.image_processing import AutoImageProcessor, ViTImageProcessor
from dlfree.hf.tasks import image_classification

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

SHAPE = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=37,
             image_size=32, patch_size=8, initializer_range=0.2,
             id2label={0: "cat", 1: "dog", 2: "fox", 3: "owl", 4: "eel"})
# sizes that up- and downscale, and both orders of Pillow's two passes (heights that shrink
# by more than twice the widths' shrinkage are resized vertically first)
SIZES = [(32, 32, 3), (77, 50, 3), (13, 9, 3), (300, 200, 3), (3, 40, 40), (110, 24, 3),
         (31, 21, 3)]


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory, one_torch_thread):
    """(folder, transformers ViTForImageClassification) with its preprocessor_config.json."""
    folder = tmp_path_factory.mktemp("tiny-vit")
    torch.manual_seed(0)
    model = transformers.ViTForImageClassification(transformers.ViTConfig(**SHAPE)).eval()
    model.save_pretrained(folder)
    pytest.importorskip("PIL")
    transformers.ViTImageProcessorPil(size={"height": 32, "width": 32}).save_pretrained(folder)
    return folder, model


def pixels(height: int = 32, width: int = 32, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((2, 3, height, width)).astype(np.float32)


def close(actual, expected, atol: float = 1e-4, what: str = "") -> None:
    np.testing.assert_allclose(actual.numpy(), expected.detach().numpy(), rtol=0, atol=atol,
                               err_msg=what)


def test_classifier_matches_transformers(checkpoint):
    folder, theirs = checkpoint
    model = hf.AutoModelForImageClassification.from_pretrained(folder)
    assert type(model) is hf.ViTForImageClassification and model.load_report == ([], [])
    assert model.config.id2label[2] == "fox"
    with dl.no_grad():
        ours = model(dl.tensor(pixels()), output_hidden_states=True)
    with torch.no_grad():
        expected = theirs(torch.as_tensor(pixels()), output_hidden_states=True)
    close(ours.logits, expected.logits, what="logits")
    assert len(ours.hidden_states) == len(expected.hidden_states) == 3
    for k, (a, b) in enumerate(zip(ours.hidden_states, expected.hidden_states)):
        close(a, b, what=f"hidden_states[{k}]")


def test_base_model_with_pooler(tmp_path):
    torch.manual_seed(1)
    theirs = transformers.ViTModel(transformers.ViTConfig(**SHAPE)).eval()
    theirs.save_pretrained(tmp_path)
    model = hf.AutoModel.from_pretrained(tmp_path)
    assert type(model) is hf.ViTModel and model.load_report == ([], [])
    with dl.no_grad():
        ours = model(dl.tensor(pixels()))
    with torch.no_grad():
        expected = theirs(torch.as_tensor(pixels()))
    close(ours.last_hidden_state, expected.last_hidden_state, what="last_hidden_state")
    close(ours.pooler_output, expected.pooler_output, what="pooler_output")


@pytest.mark.parametrize("height, width", [(48, 40), (16, 24)])
def test_interpolated_positions_for_other_sizes(checkpoint, height, width):
    folder, theirs = checkpoint
    model = hf.ViTForImageClassification.from_pretrained(folder)
    values = pixels(height, width)
    with dl.no_grad():
        ours = model(dl.tensor(values), interpolate_pos_encoding=True)
    with torch.no_grad():
        expected = theirs(torch.as_tensor(values), interpolate_pos_encoding=True)
    close(ours.logits, expected.logits, what="logits")
    with pytest.raises(dl.ShapeError, match=r"48×40|16×24"):
        model(dl.tensor(values))


def test_gradients_match_transformers(checkpoint):
    folder, theirs = checkpoint
    theirs = copy.deepcopy(theirs)
    model = hf.ViTForImageClassification.from_pretrained(folder)
    labels = np.array([1, 4])
    ours_in = dl.tensor(pixels(), requires_grad=True)
    model(ours_in, labels=dl.tensor(labels)).loss.backward()
    their_in = torch.tensor(pixels(), requires_grad=True)
    theirs(their_in, labels=torch.as_tensor(labels)).loss.backward()
    close(ours_in.grad, their_in.grad, what="pixel gradient")
    close(model.vit.embeddings.position_embeddings.grad,
          theirs.vit.embeddings.position_embeddings.grad, what="position embedding gradient")


def test_export_both_ways(checkpoint, tmp_path):
    from safetensors.numpy import load_file

    folder, theirs = checkpoint
    hf.ViTForImageClassification.from_pretrained(folder).save_pretrained(tmp_path / "round")
    original, ours = load_file(folder / "model.safetensors"), load_file(
        tmp_path / "round" / "model.safetensors")
    assert sorted(ours) == sorted(original)
    for name, value in original.items():
        np.testing.assert_array_equal(ours[name], value, err_msg=name)
    dl.manual_seed(0)
    fresh = hf.ViTForImageClassification(hf.ViTConfig(**SHAPE)).eval()
    fresh.save_pretrained(tmp_path / "fresh")
    loaded, info = transformers.ViTForImageClassification.from_pretrained(
        tmp_path / "fresh", output_loading_info=True)
    assert not any(info[k] for k in ("missing_keys", "unexpected_keys", "mismatched_keys")), info
    assert loaded.config.id2label == SHAPE["id2label"]
    with dl.no_grad():
        ours_logits = fresh(dl.tensor(pixels())).logits
    with torch.no_grad():
        close(ours_logits, loaded.eval()(torch.as_tensor(pixels())).logits)


# ----------------------------------------------------------------- image processor
@pytest.mark.parametrize("resample", [2, 3], ids=["bilinear", "bicubic"])
@pytest.mark.parametrize("shape", SIZES, ids=["x".join(map(str, s)) for s in SIZES])
def test_image_processor_equals_transformers(resample, shape):
    pytest.importorskip("PIL")
    image = np.random.default_rng(sum(shape)).integers(0, 256, shape, dtype=np.uint8)
    settings = dict(size={"height": 24, "width": 20}, resample=resample,
                    image_mean=[0.485, 0.456, 0.406], image_std=[0.229, 0.224, 0.225])
    expected = transformers.ViTImageProcessorPil(**settings)(image, return_tensors="np")
    ours = ViTImageProcessor(**settings)(image, return_tensors="np")
    np.testing.assert_array_equal(ours["pixel_values"], expected["pixel_values"])


def test_processor_from_the_folder_and_classification_task(checkpoint):
    folder, theirs = checkpoint
    processor = AutoImageProcessor.from_pretrained(folder)
    images = [np.random.default_rng(k).integers(0, 256, (40 + k, 36, 3), dtype=np.uint8)
              for k in range(2)]
    expected_pixels = transformers.AutoImageProcessor.from_pretrained(folder)(
        images, return_tensors="np")["pixel_values"]
    np.testing.assert_array_equal(processor(images, return_tensors="np")["pixel_values"],
                                  expected_pixels)
    with torch.no_grad():
        logits = theirs(torch.as_tensor(expected_pixels)).logits.numpy()
    probabilities = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    model = hf.ViTForImageClassification.from_pretrained(folder)
    results = image_classification(model, processor, images, top_k=3)
    for row, result in zip(probabilities, results):
        order = np.argsort(-row)[:3]
        assert [r["label"] for r in result] == [SHAPE["id2label"][int(i)] for i in order]
        np.testing.assert_allclose([r["score"] for r in result], row[order], atol=1e-5)
    alone = image_classification(model, processor, images[0], top_k=None)
    assert [r["label"] for r in alone] == [r["label"] for r in
                                           image_classification(model, processor, images,
                                                                top_k=None)[0]]
    assert len(alone) == 5 and abs(sum(r["score"] for r in alone) - 1) < 1e-6


def test_bad_images_are_named():
    processor = ViTImageProcessor()
    with pytest.raises(TypeError, match="8-bit images"):
        processor(np.zeros((8, 8, 3), dtype=np.float32))
    with pytest.raises(ValueError, match="1 or 3 channels"):
        processor(np.zeros((8, 8, 5), dtype=np.uint8))
    with pytest.raises(ValueError, match="resample=7 is not supported"):
        ViTImageProcessor(resample=7)
