"""Bounding boxes: format conversion, areas and the pairwise IoU family (IoU, GIoU, DIoU, CIoU)
with torchvision.ops' semantics, on NumPy or CuPy arrays alike."""

from __future__ import annotations

import math

import dlfree as dl
from dlfree.errors import DeviceError, ShapeError

BOX_FORMATS = ("xyxy", "xywh", "cxcywh")


def _unwrap(op: str, name: str, boxes, pairwise: bool):
    """(array, device, was_tensor) for boxes given as a Tensor, a NumPy/CuPy array or a list.

    Integer boxes are promoted to the default float dtype, as torchvision upcasts them.
    """
    was_tensor = isinstance(boxes, dl.Tensor)
    t = boxes if was_tensor else dl.as_tensor(boxes)
    array = t.array
    shape_ok = array.ndim == 2 if pairwise else array.ndim >= 1
    if not shape_ok or array.shape[-1] != 4:
        wanted = "(N, 4)" if pairwise else "(..., 4)"
        raise ShapeError(f"{op}: {name} must have shape {wanted}, got {tuple(array.shape)}")
    if array.dtype.kind != "f":
        array = array.astype(dl.get_default_dtype().np)
    return array, t.device, was_tensor


def _wrap(array, device, as_tensor: bool):
    return dl.as_tensor(array, device=device) if as_tensor else array


def _pair(op: str, boxes1, boxes2):
    """Both operands as arrays on one device, and whether the result should be a Tensor."""
    a, dev_a, ta = _unwrap(op, "boxes1", boxes1, pairwise=True)
    b, dev_b, tb = _unwrap(op, "boxes2", boxes2, pairwise=True)
    if dev_a != dev_b:
        raise DeviceError(f"{op}: boxes1 is on {dev_a} and boxes2 on {dev_b}; "
                          "move both to one device")
    return a, b, dev_a, ta or tb


def _check_format(name: str, fmt: str) -> None:
    if fmt not in BOX_FORMATS:
        raise ValueError(f"box_convert: unknown {name} {fmt!r}; valid formats: "
                         f"{', '.join(BOX_FORMATS)}")


def convert_array(xp, boxes, in_fmt: str, out_fmt: str):
    """`box_convert` on a raw array of the array module `xp` (formats already checked)."""
    if in_fmt == out_fmt:
        return boxes
    a, b, c, d = (boxes[..., i] for i in range(4))
    if in_fmt == "xywh":
        a, b, c, d = a, b, a + c, b + d
    elif in_fmt == "cxcywh":
        a, b, c, d = a - 0.5 * c, b - 0.5 * d, a + 0.5 * c, b + 0.5 * d
    # (a, b, c, d) is now x1, y1, x2, y2
    if out_fmt == "xywh":
        a, b, c, d = a, b, c - a, d - b
    elif out_fmt == "cxcywh":
        a, b, c, d = (a + c) / 2, (b + d) / 2, c - a, d - b
    return xp.stack((a, b, c, d), axis=-1)


def box_convert(boxes, in_fmt: str, out_fmt: str):
    """Boxes (..., 4) from one of the formats xyxy (corners), xywh (top-left corner, width,
    height) or cxcywh (centre, width, height) to another; a Tensor for a Tensor, else an array."""
    _check_format("in_fmt", in_fmt)
    _check_format("out_fmt", out_fmt)
    array, device, was_tensor = _unwrap("box_convert", "boxes", boxes, pairwise=False)
    return _wrap(convert_array(device.xp, array, in_fmt, out_fmt), device, was_tensor)


def area_array(boxes):
    """Areas of xyxy boxes (..., 4) held in a raw array."""
    return (boxes[..., 2] - boxes[..., 0]) * (boxes[..., 3] - boxes[..., 1])


def box_area(boxes):
    """The area of each xyxy box of (N, 4) boxes, shape (N,)."""
    array, device, was_tensor = _unwrap("box_area", "boxes", boxes, pairwise=False)
    return _wrap(area_array(array), device, was_tensor)


def _inter_union(xp, a, b):
    """Pairwise intersection and union areas (N, M) of xyxy boxes a (N, 4) and b (M, 4)."""
    lt = xp.maximum(a[:, None, :2], b[None, :, :2])
    rb = xp.minimum(a[:, None, 2:], b[None, :, 2:])
    wh = xp.maximum(rb - lt, 0)
    inter = wh[..., 0] * wh[..., 1]
    return inter, area_array(a)[:, None] + area_array(b)[None, :] - inter


def _enclosing_wh(xp, a, b):
    """Width and height (N, M, 2) of the smallest box enclosing each pair."""
    lt = xp.minimum(a[:, None, :2], b[None, :, :2])
    rb = xp.maximum(a[:, None, 2:], b[None, :, 2:])
    return xp.maximum(rb - lt, 0)


def _iou_and_diou(xp, a, b, eps: float):
    """IoU and distance-IoU (N, M): IoU less the squared centre distance over the squared
    diagonal of the enclosing box."""
    inter, union = _inter_union(xp, a, b)
    iou = inter / union
    wh = _enclosing_wh(xp, a, b)
    diagonal_sq = wh[..., 0] ** 2 + wh[..., 1] ** 2 + eps
    ca = (a[:, :2] + a[:, 2:]) / 2
    cb = (b[:, :2] + b[:, 2:]) / 2
    centre_sq = ((ca[:, None, :] - cb[None, :, :]) ** 2).sum(axis=-1)
    return iou, iou - centre_sq / diagonal_sq


def box_iou(boxes1, boxes2):
    """Intersection over union of every pair of xyxy boxes: (N, 4), (M, 4) -> (N, M).

    As torchvision.ops.box_iou: a pair of zero-area boxes gives 0/0 = NaN.
    """
    a, b, device, as_tensor = _pair("box_iou", boxes1, boxes2)
    xp = device.xp
    with device.context():
        inter, union = _inter_union(xp, a, b)
        return _wrap(inter / union, device, as_tensor)


def generalized_box_iou(boxes1, boxes2):
    """Generalized IoU (Rezatofighi et al., 2019) of every pair of xyxy boxes, in [-1, 1]:
    IoU less the fraction of the smallest enclosing box that the union leaves empty."""
    a, b, device, as_tensor = _pair("generalized_box_iou", boxes1, boxes2)
    xp = device.xp
    with device.context():
        inter, union = _inter_union(xp, a, b)
        wh = _enclosing_wh(xp, a, b)
        enclosing = wh[..., 0] * wh[..., 1]
        return _wrap(inter / union - (enclosing - union) / enclosing, device, as_tensor)


def distance_box_iou(boxes1, boxes2, eps: float = 1e-7):
    """Distance IoU (Zheng et al., 2020) of every pair of xyxy boxes: IoU less the squared
    distance of the centres over the squared diagonal of the enclosing box (plus `eps`)."""
    a, b, device, as_tensor = _pair("distance_box_iou", boxes1, boxes2)
    with device.context():
        return _wrap(_iou_and_diou(device.xp, a, b, eps)[1], device, as_tensor)


def complete_box_iou(boxes1, boxes2, eps: float = 1e-7):
    """Complete IoU (Zheng et al., 2020) of every pair of xyxy boxes: distance IoU less
    alpha * v, where v measures how far the aspect ratios disagree."""
    a, b, device, as_tensor = _pair("complete_box_iou", boxes1, boxes2)
    xp = device.xp
    with device.context():
        iou, diou = _iou_and_diou(xp, a, b, eps)
        aspect_a = xp.arctan((a[:, 2] - a[:, 0]) / (a[:, 3] - a[:, 1]))
        aspect_b = xp.arctan((b[:, 2] - b[:, 0]) / (b[:, 3] - b[:, 1]))
        v = (4 / math.pi**2) * (aspect_a[:, None] - aspect_b[None, :]) ** 2
        alpha = v / (1 - iou + v + eps)
        return _wrap(diou - alpha * v, device, as_tensor)


def paired_crowd_iou(xp, detections, ground_truths, crowd):
    """COCO's IoU of row i of xyxy detections (P, 4) with row i of ground truths (P, 4):
    against a crowd ground truth the denominator is the detection's area alone, and boxes
    that do not overlap give 0."""
    lt = xp.maximum(detections[:, :2], ground_truths[:, :2])
    rb = xp.minimum(detections[:, 2:], ground_truths[:, 2:])
    wh = xp.maximum(rb - lt, 0)
    inter = wh[:, 0] * wh[:, 1]
    det_area = area_array(detections)
    union = xp.where(crowd, det_area, det_area + area_array(ground_truths) - inter)
    overlap = inter > 0
    return xp.where(overlap, inter / xp.where(overlap, union, 1), 0.0)
