"""`MeanAveragePrecision`: COCO's mAP and mAR of object detections (boxes or instance masks),
streamed over batches, with the results of pycocotools' COCOeval."""

from __future__ import annotations

import numbers

from dlfree.errors import ShapeError

import numpy as np

from ..metric import Metric
from . import inputs
from .boxes import BOX_FORMATS, area_array, convert_array, paired_crowd_iou
from .evaluation import COCO_IOU_THRESHOLDS, COCO_REC_THRESHOLDS, evaluate, per_class, summarize
from .layout import same_class_pairs
from .masks import mask_areas, mask_iou

IOU_TYPES = ("bbox", "segm")
# Each state is a list with one array per update call; the *_counts states say how many
# detections and ground truths each image of that call has, and `ious` follows layout.py.
_STATES = {"det_scores": np.float64, "det_labels": np.int64, "det_areas": np.float64,
           "det_counts": np.int64, "gt_labels": np.int64, "gt_crowds": bool,
           "gt_areas": np.float64, "gt_counts": np.int64, "ious": np.float64}


def _thresholds(name: str, values, default):
    if values is None:
        return default.copy()
    array = np.asarray(values, dtype=float)
    if array.ndim != 1 or array.size == 0 or np.any((array < 0) | (array > 1)):
        raise ValueError(f"MeanAveragePrecision: {name} must be a non-empty list of numbers "
                         f"in [0, 1], got {values!r}")
    return array


def _max_detections(values) -> list[int]:
    if values is None:
        return [1, 10, 100]
    if (not isinstance(values, list | tuple) or not values or len(set(values)) < len(values)
            or not all(isinstance(v, numbers.Integral) and v > 0 for v in values)):
        raise ValueError("MeanAveragePrecision: max_detection_thresholds must be a non-empty "
                         f"list of distinct positive ints, got {values!r}")
    return sorted(int(v) for v in values)


class MeanAveragePrecision(Metric):
    """COCO mean average precision (mAP) and recall (mAR) for object detection.

    `update(preds, target)` takes one list entry per image. preds: dicts with "boxes"
    (N, 4) in `box_format` (for iou_type="segm", "masks" instead: (N, H, W) binary masks or
    a list of COCO RLE dicts), "scores" (N,) and "labels" (N,); target: dicts with "boxes"
    (or "masks") and "labels" (M,), optionally "iscrowd" (M,) and "area" (M,). A ground
    truth's area decides its area range (small < 32^2 <= medium <= 96^2 < large); without
    "area" it is the box area (w * h) or the mask's pixel count. A detection's area is
    always its box area or pixel count.

    `compute()` returns 0-d tensors map, map_50, map_75, map_small, map_medium, map_large,
    mar_{k} for each max-detections limit k, mar_small, mar_medium, mar_large and, with
    class_metrics=True, map_per_class, mar_{largest k}_per_class and classes (sorted
    labels seen in preds or target). As in COCOeval: IoU thresholds 0.50:0.05:0.95,
    101-point interpolated precision, greedy matching by score within each (image,
    class), the best max_detection_thresholds[-1] detections per (image, class), crowd
    ground truths never counted as missed, detections matched to them ignored, and -1
    wherever a value is undefined (no ground truth of that kind). AP and the area-range
    values use the largest limit (COCOeval's stats[0] asks for 100 whatever the limits).

    Only the IoUs of same-class pairs, scores, labels and areas are kept between updates
    (never boxes or masks), so memory grows with detections, not with image size.
    """

    def __init__(self, box_format: str = "xyxy", iou_type: str = "bbox",
                 iou_thresholds=None, rec_thresholds=None, max_detection_thresholds=None,
                 class_metrics: bool = False):
        super().__init__()
        if box_format not in BOX_FORMATS:
            raise ValueError(f"MeanAveragePrecision: unknown box_format {box_format!r}; valid: "
                             f"{', '.join(BOX_FORMATS)}")
        if iou_type not in IOU_TYPES:
            raise ValueError(f"MeanAveragePrecision: unknown iou_type {iou_type!r}; valid: "
                             f"{', '.join(IOU_TYPES)}")
        if not isinstance(class_metrics, bool):
            raise TypeError("MeanAveragePrecision: class_metrics must be a bool, got "
                            f"{type(class_metrics).__name__}")
        self.box_format, self.iou_type, self.class_metrics = box_format, iou_type, class_metrics
        self.iou_thresholds = _thresholds("iou_thresholds", iou_thresholds, COCO_IOU_THRESHOLDS)
        self.rec_thresholds = _thresholds("rec_thresholds", rec_thresholds, COCO_REC_THRESHOLDS)
        self.max_detection_thresholds = _max_detections(max_detection_thresholds)
        for name in _STATES:
            self.add_state(name, [], "cat")

    # ------------------------------------------------------------------- update
    def update(self, preds, target) -> None:
        """Add one batch: `preds` and `target` are lists with one dict per image."""
        for name, value in (("preds", preds), ("target", target)):
            if not isinstance(value, list | tuple):
                raise TypeError(f"{inputs.OP}: {name} must be a list of dicts, one per image, "
                                f"got {type(value).__name__}")
        if len(preds) != len(target):
            raise ValueError(f"{inputs.OP}: preds has {len(preds)} images and target "
                             f"{len(target)}; give one entry per image in both")
        images = [self._read_image(i, p, t) for i, (p, t) in enumerate(zip(preds, target))]
        if not images:
            return
        xp = self._device.xp
        joined = {key: xp.concatenate([image[key] for image in images])
                  for key in ("det_scores", "det_labels", "det_areas", "gt_labels", "gt_crowds",
                              "gt_areas")}
        for side, key in (("det", "det_labels"), ("gt", "gt_labels")):
            joined[f"{side}_counts"] = xp.asarray([image[key].shape[0] for image in images],
                                                  dtype=xp.int64)
        with self._device.context():
            joined["ious"] = (self._box_ious(images, joined) if self.iou_type == "bbox"
                              else xp.concatenate([_mask_ious(xp, image) for image in images]))
        for name in _STATES:
            getattr(self, name).append(joined[name])

    def _read_image(self, i: int, pred: dict, tgt: dict) -> dict:
        """One image's checked arrays: the states' per-image parts, plus its detections'
        and ground truths' boxes (xyxy) or masks under "det" and "gt"."""
        shape_key = "boxes" if self.iou_type == "bbox" else "masks"
        where_p, where_t = f"preds[{i}]", f"target[{i}]"
        inputs.check_keys(pred, where_p, (shape_key, "scores", "labels"))
        inputs.check_keys(tgt, where_t, (shape_key, "labels"))
        det, gt = pred[shape_key], tgt[shape_key]
        if self.iou_type == "segm":
            device = inputs.device_of(pred["scores"])
            det = inputs.masks_tensor(det, f"{where_p}['masks']", device)
            gt = inputs.masks_tensor(gt, f"{where_t}['masks']", device)
        optional = [key for key in ("iscrowd", "area") if key in tgt]
        scores, labels, gt_labels, det, gt, *extra = self.as_arrays(
            pred["scores"], pred["labels"], tgt["labels"], det, gt, *(tgt[k] for k in optional))
        extra = dict(zip(optional, extra))
        xp = self._device.xp
        labels = inputs.vector(labels, f"{where_p}['labels']", None, "int64")
        gt_labels = inputs.vector(gt_labels, f"{where_t}['labels']", None, "int64")
        n_det, n_gt = labels.shape[0], gt_labels.shape[0]
        image = {"det_scores": inputs.vector(scores, f"{where_p}['scores']", n_det, "float64"),
                 "det_labels": labels, "gt_labels": gt_labels,
                 "gt_crowds": (inputs.vector(extra["iscrowd"], f"{where_t}['iscrowd']", n_gt,
                                             "bool")
                               if "iscrowd" in extra else xp.zeros(n_gt, dtype=bool))}
        if self.iou_type == "bbox":
            image["det"] = convert_array(xp, inputs.boxes(det, f"{where_p}['boxes']", n_det),
                                         self.box_format, "xyxy")
            image["gt"] = convert_array(xp, inputs.boxes(gt, f"{where_t}['boxes']", n_gt),
                                        self.box_format, "xyxy")
            image["det_areas"], image["gt_areas"] = area_array(image["det"]), \
                area_array(image["gt"])
        else:
            image["det"] = inputs.masks(det, f"{where_p}['masks']", n_det)
            image["gt"] = inputs.masks(gt, f"{where_t}['masks']", n_gt)
            if n_det and n_gt and image["det"].shape[1:] != image["gt"].shape[1:]:
                raise ShapeError(
                    f"{inputs.OP}: {where_p}['masks'] are {tuple(image['det'].shape[1:])} and "
                    f"{where_t}['masks'] {tuple(image['gt'].shape[1:])}; one image's masks "
                    "must have one size")
            image["det_areas"], image["gt_areas"] = mask_areas(xp, image["det"]), \
                mask_areas(xp, image["gt"])
        if "area" in extra:
            image["gt_areas"] = inputs.vector(extra["area"], f"{where_t}['area']", n_gt,
                                              "float64")
        return image

    def _box_ious(self, images: list, joined: dict):
        """The batch's same-class box IoUs, all pairs in one vectorised pass; the pairing is
        host-side bookkeeping on the labels."""
        xp, backend, index = self._device.xp, self._device.backend, self._device.index
        to_numpy = backend.to_numpy
        numbers_of = np.arange(len(images))
        det_index, gt_index = same_class_pairs(
            np.repeat(numbers_of, to_numpy(joined["det_counts"])), to_numpy(joined["det_labels"]),
            np.repeat(numbers_of, to_numpy(joined["gt_counts"])), to_numpy(joined["gt_labels"]))
        det_index = backend.asarray(det_index, index=index)
        gt_index = backend.asarray(gt_index, index=index)
        det = xp.concatenate([image["det"] for image in images])
        gt = xp.concatenate([image["gt"] for image in images])
        return paired_crowd_iou(xp, det[det_index], gt[gt_index], joined["gt_crowds"][gt_index])

    # ------------------------------------------------------------------ compute
    def _host(self, name: str) -> np.ndarray:
        """A state's per-update arrays joined into one NumPy array."""
        parts = [self._device.backend.to_numpy(part) for part in getattr(self, name)]
        return np.concatenate(parts) if parts else np.zeros(0, dtype=_STATES[name])

    def compute(self) -> dict:
        """The COCO summary over every image seen, as a dict of tensors.

        The evaluation runs on the host: it is index bookkeeping over many small (image,
        class) groups, which a GPU would spend in kernel launches.
        """
        state = {name: self._host(name) for name in _STATES}
        det_counts, gt_counts = state["det_counts"], state["gt_counts"]
        if det_counts.size != gt_counts.size:
            raise ValueError(f"MeanAveragePrecision: the state holds {det_counts.size} images "
                             f"of detections but {gt_counts.size} of ground truths")
        images = np.arange(det_counts.size)
        classes, precision, recall = evaluate(
            np.repeat(images, det_counts), state["det_labels"], state["det_scores"],
            state["det_areas"], np.repeat(images, gt_counts), state["gt_labels"],
            state["gt_crowds"], state["gt_areas"], state["ious"], self.iou_thresholds,
            self.rec_thresholds, self.max_detection_thresholds)
        stats = summarize(precision, recall, self.iou_thresholds, self.max_detection_thresholds)
        result = {name: self.as_result(value) for name, value in stats.items()}
        if self.class_metrics:
            ap, ar = per_class(precision, recall)
            place = self._device.backend.asarray
            result["map_per_class"] = self.as_result(place(ap, index=self._device.index))
            result[f"mar_{self.max_detection_thresholds[-1]}_per_class"] = self.as_result(
                place(ar, index=self._device.index))
            result["classes"] = self.as_result(place(classes, index=self._device.index))
        return result

    def __repr__(self) -> str:
        return (f"MeanAveragePrecision(box_format={self.box_format!r}, "
                f"iou_type={self.iou_type!r}, class_metrics={self.class_metrics})")


def _mask_ious(xp, image: dict):
    """One image's same-class mask IoUs, row-major over (detection, ground truth)."""
    if not (image["det"].shape[0] and image["gt"].shape[0]):
        return xp.zeros(0)
    same_class = image["det_labels"][:, None] == image["gt_labels"][None, :]
    return mask_iou(xp, image["det"], image["gt"], image["gt_crowds"])[same_class]
