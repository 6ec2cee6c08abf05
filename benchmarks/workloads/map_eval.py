"""COCO box mAP of 500 images x 100 detections: dl.free's MeanAveragePrecision against
pycocotools' COCOeval.

The data set is fixed (seed 0): 10 classes, 3-12 ground truths per image (8 % crowds),
detections that are jittered copies of them plus false positives, 100 per image. dl.free
is timed from the raw lists (a fresh metric, update and compute); pycocotools from its
COCO objects, built beforehand and not timed, so its figure leaves out loading: one step
is COCOeval's evaluate, accumulate and summarize. Every `step()` returns the 12 COCO
numbers (COCOeval.stats order) as a tuple of floats, which the smoke test compares.
"""

import contextlib
import io

import numpy as np

from .plan import Plan

NAME = "map_eval"
DESCRIPTION = "COCO box mAP, 500 images x 100 detections, 10 classes, 12 COCO numbers"
UNIT = "ms"
REFERENCE = "pycocotools"
TARGETS = {"pycocotools": 1.0}
PLANS = {"full": Plan(rounds=7, iterations=1, warmup=1),
         "quick": Plan(rounds=3, iterations=1, warmup=1)}

# Read when a step is built, so that the smoke test can evaluate fewer images.
IMAGES = 500
DETECTIONS, CLASSES = 100, 10
KEYS = ["map", "map_50", "map_75", "map_small", "map_medium", "map_large", "mar_1", "mar_10",
        "mar_100", "mar_small", "mar_medium", "mar_large"]  # COCOeval.stats order


def _problem(images: int):
    """(preds, target): torchmetrics-style lists of dicts of NumPy arrays, boxes xyxy."""
    rng = np.random.default_rng(0)
    preds, target = [], []
    for _ in range(images):
        n_gt = int(rng.integers(3, 13))
        size = rng.uniform(4, 250, (n_gt, 2))
        corner = rng.uniform(0, 640, (n_gt, 2))
        gt_labels = rng.integers(0, CLASSES, n_gt)
        # each ground truth is found once or twice; the rest are false positives
        owner = np.repeat(np.arange(n_gt), rng.integers(1, 3, n_gt))
        hits = np.concatenate([corner, corner + size], 1)[owner]
        hits += rng.normal(0, 0.06, hits.shape) * np.tile(size[owner], 2)
        n_fp = DETECTIONS - owner.size
        fp_corner = rng.uniform(0, 640, (n_fp, 2))
        misses = np.concatenate([fp_corner, fp_corner + rng.uniform(4, 250, (n_fp, 2))], 1)
        boxes = np.concatenate([hits, misses])
        boxes[:, 2:] = np.maximum(boxes[:, 2:], boxes[:, :2] + 1)
        preds.append({"boxes": boxes, "scores": rng.random(DETECTIONS),
                      "labels": np.concatenate([gt_labels[owner],
                                                rng.integers(0, CLASSES, n_fp)])})
        target.append({"boxes": np.concatenate([corner, corner + size], 1),
                       "labels": gt_labels, "iscrowd": (rng.random(n_gt) < 0.08).astype(int)})
    return preds, target


def build_dlfree():
    """A fresh `dlfree.metrics.detection.MeanAveragePrecision` per step: update, compute."""
    from dlfree.metrics.detection import MeanAveragePrecision

    preds, target = _problem(IMAGES)

    def step():
        metric = MeanAveragePrecision()
        metric.update(preds, target)
        result = metric.compute()
        return tuple(float(result[key]) for key in KEYS)

    return step


def _coco_objects(preds, target):
    """pycocotools' ground-truth COCO object and loaded results for the same data."""
    from pycocotools.coco import COCO

    images, annotations, results = [], [], []
    for i, (pred, tgt) in enumerate(zip(preds, target, strict=True), start=1):
        images.append({"id": i})
        for box, label, crowd in zip(tgt["boxes"], tgt["labels"], tgt["iscrowd"], strict=True):
            w, h = box[2] - box[0], box[3] - box[1]
            annotations.append({"id": len(annotations) + 1, "image_id": i, "iscrowd": int(crowd),
                                "category_id": int(label), "bbox": [box[0], box[1], w, h],
                                "area": w * h})
        for box, label, score in zip(pred["boxes"], pred["labels"], pred["scores"],
                                     strict=True):
            results.append({"image_id": i, "category_id": int(label), "score": float(score),
                            "bbox": [box[0], box[1], box[2] - box[0], box[3] - box[1]]})
    with contextlib.redirect_stdout(io.StringIO()):  # COCO() reports its progress
        ground_truth = COCO()
        ground_truth.dataset = {"images": images, "annotations": annotations,
                                "categories": [{"id": c} for c in range(CLASSES)]}
        ground_truth.createIndex()
        return ground_truth, ground_truth.loadRes(results)


def build_pycocotools():
    """COCOeval on COCO objects built here, untimed: evaluate, accumulate, summarize."""
    from pycocotools.cocoeval import COCOeval

    ground_truth, detections = _coco_objects(*_problem(IMAGES))

    def step():
        with contextlib.redirect_stdout(io.StringIO()):  # summarize() prints its table
            evaluator = COCOeval(ground_truth, detections, "bbox")
            evaluator.evaluate()
            evaluator.accumulate()
            evaluator.summarize()
        return tuple(float(value) for value in evaluator.stats)

    return step


BUILDERS = {"dlfree": build_dlfree, "pycocotools": build_pycocotools}
