"""Box conversion and the pairwise IoU family against torchvision.ops' formulas, written out
below pair by pair in plain Python (torchvision is not a dependency), plus their invariants."""

from __future__ import annotations

import math

import dlfree as dl
from dlfree.metrics.detection import (
    box_area,
    box_convert,
    box_iou,
    complete_box_iou,
    distance_box_iou,
    generalized_box_iou,
)

import numpy as np
import pytest

EPS = 1e-7  # torchvision's default eps for DIoU and CIoU


def _reference(kind: str, a, b) -> float:
    """torchvision's definition of one IoU variant for one pair of xyxy boxes."""
    area_a = (a[2] - a[0]) * (a[3] - a[1])
    area_b = (b[2] - b[0]) * (b[3] - b[1])
    inter = (max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
             * max(0.0, min(a[3], b[3]) - max(a[1], b[1])))
    union = area_a + area_b - inter
    iou = inter / union
    if kind == "iou":
        return iou
    enclosing_w = max(a[2], b[2]) - min(a[0], b[0])
    enclosing_h = max(a[3], b[3]) - min(a[1], b[1])
    if kind == "giou":
        enclosing = enclosing_w * enclosing_h
        return iou - (enclosing - union) / enclosing
    diagonal_sq = enclosing_w**2 + enclosing_h**2 + EPS
    centre_sq = (((a[0] + a[2]) - (b[0] + b[2])) / 2) ** 2 \
        + (((a[1] + a[3]) - (b[1] + b[3])) / 2) ** 2
    diou = iou - centre_sq / diagonal_sq
    if kind == "diou":
        return diou
    v = 4 / math.pi**2 * (math.atan((b[2] - b[0]) / (b[3] - b[1]))
                          - math.atan((a[2] - a[0]) / (a[3] - a[1]))) ** 2
    alpha = v / (1 - iou + v + EPS)
    return diou - alpha * v


FUNCTIONS = {"iou": box_iou, "giou": generalized_box_iou, "diou": distance_box_iou,
             "ciou": complete_box_iou}


def _boxes(rng, n: int) -> np.ndarray:
    xy = rng.uniform(0, 50, (n, 2))
    return np.concatenate([xy, xy + rng.uniform(1, 30, (n, 2))], axis=1)


@pytest.fixture
def pairs(rng):
    """Random boxes, with boxes1[0] repeated in boxes2 and boxes1[1] far from all of boxes2."""
    boxes1, boxes2 = _boxes(rng, 6), _boxes(rng, 5)
    boxes2[2] = boxes1[0]
    boxes1[1] = [500.0, 500.0, 510.0, 520.0]
    return boxes1, boxes2


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("kind", list(FUNCTIONS))
def test_matches_torchvision_formulas(device, pairs, kind, dtype):
    boxes1, boxes2 = pairs
    result = FUNCTIONS[kind](dl.tensor(boxes1.astype(dtype), device=device),
                             dl.tensor(boxes2.astype(dtype), device=device))
    assert isinstance(result, dl.Tensor) and result.device == dl.device(device)
    assert result.dtype == dl.as_tensor(np.zeros(0, dtype)).dtype and result.shape == (6, 5)
    b1, b2 = boxes1.astype(dtype).astype(float), boxes2.astype(dtype).astype(float)
    expected = np.array([[_reference(kind, a, b) for b in b2] for a in b1])
    tolerance = 1e-12 if dtype == np.float64 else 2e-5
    np.testing.assert_allclose(result.numpy(), expected, rtol=tolerance, atol=tolerance)


@pytest.mark.parametrize("kind", list(FUNCTIONS))
def test_arrays_in_arrays_out_and_lists_accepted(pairs, kind):
    boxes1, boxes2 = pairs
    from_arrays = FUNCTIONS[kind](boxes1, boxes2)
    assert isinstance(from_arrays, np.ndarray) and from_arrays.dtype == np.float64
    from_lists = FUNCTIONS[kind](boxes1.tolist(), boxes2.tolist())
    assert from_lists.dtype == np.float32  # Python floats become the default dtype
    np.testing.assert_allclose(from_lists, from_arrays, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kind", list(FUNCTIONS))
def test_invariants(pairs, kind):
    boxes1, boxes2 = pairs
    values = FUNCTIONS[kind](boxes1, boxes2)
    low = 0.0 if kind == "iou" else -1.0
    assert np.all((values >= low) & (values <= 1.0 + 1e-12))
    assert values[0, 2] == pytest.approx(1.0, abs=1e-12)  # a box with itself
    assert np.all(np.diag(FUNCTIONS[kind](boxes1, boxes1)) == pytest.approx(1.0, abs=1e-12))
    if kind == "iou":
        assert np.all(values[1] == 0.0)  # disjoint boxes
    else:
        assert np.all(values[1] < 0.0)
    np.testing.assert_allclose(FUNCTIONS[kind](boxes2, boxes1), values.T, rtol=1e-12)


def test_variants_are_ordered(pairs):
    """GIoU, DIoU and CIoU each subtract a non-negative penalty: ciou <= diou <= iou and
    giou <= iou."""
    boxes1, boxes2 = pairs
    iou = box_iou(boxes1, boxes2)
    assert np.all(generalized_box_iou(boxes1, boxes2) <= iou + 1e-12)
    assert np.all(complete_box_iou(boxes1, boxes2) <= distance_box_iou(boxes1, boxes2) + 1e-12)
    assert np.all(distance_box_iou(boxes1, boxes2) <= iou + 1e-12)


def test_integer_boxes_give_default_float():
    result = box_iou(dl.tensor([[0, 0, 2, 2]]), dl.tensor([[1, 1, 3, 3], [0, 0, 2, 2]]))
    assert result.dtype == dl.float32
    np.testing.assert_allclose(result.numpy(), [[1 / 7, 1.0]], rtol=1e-6)


def test_empty_inputs_give_empty_matrices():
    assert box_iou(np.zeros((0, 4)), _boxes(np.random.default_rng(0), 3)).shape == (0, 3)
    assert generalized_box_iou(np.zeros((2, 4)) + [0, 0, 1, 1], np.zeros((0, 4))).shape == (2, 0)


def _convert_reference(boxes, in_fmt, out_fmt):
    """The format definitions, written out: corners, corner + size, centre + size."""
    a, b, c, d = boxes.T
    x1, y1, x2, y2 = {"xyxy": (a, b, c, d), "xywh": (a, b, a + c, b + d),
                      "cxcywh": (a - c / 2, b - d / 2, a + c / 2, b + d / 2)}[in_fmt]
    return np.stack({"xyxy": (x1, y1, x2, y2), "xywh": (x1, y1, x2 - x1, y2 - y1),
                     "cxcywh": ((x1 + x2) / 2, (y1 + y2) / 2, x2 - x1, y2 - y1)}[out_fmt], 1)


FORMATS = ["xyxy", "xywh", "cxcywh"]


@pytest.mark.parametrize("out_fmt", FORMATS)
@pytest.mark.parametrize("in_fmt", FORMATS)
def test_box_convert(device, rng, in_fmt, out_fmt):
    boxes = _boxes(rng, 7)
    result = box_convert(dl.tensor(boxes, device=device), in_fmt, out_fmt)
    assert isinstance(result, dl.Tensor) and result.device == dl.device(device)
    np.testing.assert_allclose(result.numpy(), _convert_reference(boxes, in_fmt, out_fmt),
                               rtol=1e-12, atol=1e-12)
    back = box_convert(result, out_fmt, in_fmt)
    np.testing.assert_allclose(back.numpy(), boxes, rtol=1e-12, atol=1e-12)


def test_box_convert_keeps_leading_dimensions(rng):
    boxes = _boxes(rng, 6).reshape(2, 3, 4)
    result = box_convert(boxes, "xyxy", "cxcywh")
    assert result.shape == (2, 3, 4)
    np.testing.assert_allclose(result.reshape(6, 4),
                               _convert_reference(boxes.reshape(6, 4), "xyxy", "cxcywh"))


def test_box_area(rng):
    boxes = _boxes(rng, 5)
    np.testing.assert_allclose(box_area(boxes), [(x2 - x1) * (y2 - y1)
                                                 for x1, y1, x2, y2 in boxes], rtol=1e-12)
    assert isinstance(box_area(dl.tensor(boxes)), dl.Tensor)


@pytest.mark.parametrize("kind", list(FUNCTIONS))
def test_bad_shape_names_it(kind):
    with pytest.raises(dl.ShapeError, match=r"boxes2 must have shape \(N, 4\), got \(3, 5\)"):
        FUNCTIONS[kind](np.zeros((2, 4)), np.zeros((3, 5)))
    with pytest.raises(dl.ShapeError, match=r"boxes1 must have shape \(N, 4\), got \(4,\)"):
        FUNCTIONS[kind](np.zeros(4), np.zeros((3, 4)))


def test_bad_format_lists_valid_ones():
    with pytest.raises(ValueError, match="unknown out_fmt 'xyhw'; valid formats: xyxy, xywh, "
                                         "cxcywh"):
        box_convert(np.zeros((1, 4)), "xyxy", "xyhw")
    with pytest.raises(dl.ShapeError, match=r"\(\.\.\., 4\), got \(2, 3\)"):
        box_convert(np.zeros((2, 3)), "xyxy", "xywh")
