"""MeanAveragePrecision against pycocotools' COCOeval on generated detection sets (boxes and
masks; crowds, empty images, label-only classes, over 100 detections on an image), streamed
over several updates and merged from halves; edge cases and input errors; RLE decoding."""

from __future__ import annotations

import contextlib
import io

import dlfree as dl
from dlfree.metrics.detection import MeanAveragePrecision, rle_decode

import numpy as np
import pycocotools.mask as mask_utils
import pytest
from pycocotools.coco import COCO
from pycocotools.cocoeval import COCOeval

# The order of COCOeval.stats.
KEYS = ["map", "map_50", "map_75", "map_small", "map_medium", "map_large", "mar_1", "mar_10",
        "mar_100", "mar_small", "mar_medium", "mar_large"]
TOLERANCE = 1e-6  # results are float32; COCOeval's are float64
HEIGHT, WIDTH = 120, 136  # the mask canvas, not square so that a transposed mask shows


def _detection_set(rng, n_images=24, n_classes=4, canvas=400.0, max_size=200.0, ties=False):
    """Per image: up to 9 ground truths of any size (10 % crowds) and 0-2 jittered
    detections of each (10 % relabelled), plus false positives, some with label n_classes,
    which no ground truth has. Image 0 has no detections, image 1 no ground truths, image 2
    has 130 extra detections of class 0. With `ties`, scores take only eleven values."""
    preds, target = [], []
    for i in range(n_images):
        n_gt = 0 if i == 1 else int(rng.integers(1, 10))
        size = rng.uniform(3, max_size, (n_gt, 2))
        corner = rng.uniform(0, canvas - 3, (n_gt, 2))
        gt = np.concatenate([corner, corner + size], axis=1)
        gt_labels = rng.integers(0, n_classes, n_gt)
        owner = np.repeat(np.arange(n_gt), rng.integers(0, 3, n_gt))
        jitter = rng.normal(0, 0.06, (owner.size, 4)) * np.tile(size[owner], 2)
        det_labels = gt_labels[owner].copy()
        relabel = rng.random(owner.size) < 0.1
        det_labels[relabel] = rng.integers(0, n_classes + 1, relabel.sum())
        n_fp = 130 if i == 2 else int(rng.integers(0, 8))
        fp_corner = rng.uniform(0, canvas - 3, (n_fp, 2))
        fp = np.concatenate([fp_corner, fp_corner + rng.uniform(3, max_size, (n_fp, 2))], 1)
        fp_labels = np.zeros(n_fp, int) if i == 2 else rng.integers(0, n_classes + 1, n_fp)
        boxes = np.concatenate([gt[owner] + jitter, fp])
        boxes[:, 2:] = np.maximum(boxes[:, 2:], boxes[:, :2] + 0.5)
        scores = rng.random(boxes.shape[0])
        if ties:
            scores = np.round(scores, 1)
        labels = np.concatenate([det_labels, fp_labels]).astype(np.int64)
        if i == 0:
            boxes, scores, labels = boxes[:0], scores[:0], labels[:0]
        preds.append({"boxes": boxes, "scores": scores, "labels": labels})
        target.append({"boxes": gt, "labels": gt_labels,
                       "iscrowd": (rng.random(n_gt) < 0.1).astype(np.int64)})
    return preds, target


def _ellipses(boxes) -> np.ndarray:
    """Binary masks (N, HEIGHT, WIDTH) of the ellipses inscribed in xyxy boxes."""
    y, x = np.mgrid[0:HEIGHT, 0:WIDTH] + 0.5
    centre = (boxes[:, :2] + boxes[:, 2:]) / 2
    radius = (boxes[:, 2:] - boxes[:, :2]) / 2
    return (((x - centre[:, 0, None, None]) / radius[:, 0, None, None]) ** 2
            + ((y - centre[:, 1, None, None]) / radius[:, 1, None, None]) ** 2) <= 1


def _segmentation_set(rng, **options):
    """_detection_set on the mask canvas, each box replaced by its inscribed ellipse."""
    preds, target = _detection_set(rng, canvas=HEIGHT, max_size=125.0, **options)
    for entry in preds + target:
        entry["masks"] = _ellipses(entry.pop("boxes"))
    return preds, target


def _rle(mask) -> dict:
    return mask_utils.encode(np.asfortranarray(mask.astype(np.uint8)))


def _coco_bbox(box) -> list:
    return [box[0], box[1], box[2] - box[0], box[3] - box[1]]


def _cocoeval(preds, target, iou_type="bbox", params=None, extra_results=()):
    """COCOeval evaluated, accumulated and summarized on the same data (image ids from 1,
    categories: every label seen), `params` set on its Params first."""
    images, annotations, results = [], [], list(extra_results)
    for i, (pred, tgt) in enumerate(zip(preds, target), start=1):
        images.append({"id": i, "height": HEIGHT, "width": WIDTH})
        for j, (label, crowd) in enumerate(zip(tgt["labels"], tgt["iscrowd"])):
            ann = {"id": len(annotations) + 1, "image_id": i, "category_id": int(label),
                   "iscrowd": int(crowd)}
            if iou_type == "bbox":
                box = tgt["boxes"][j]
                ann.update(bbox=_coco_bbox(box), area=(box[2] - box[0]) * (box[3] - box[1]))
            else:
                ann.update(segmentation=_rle(tgt["masks"][j]), area=float(tgt["masks"][j].sum()))
            if "area" in tgt:
                ann["area"] = float(tgt["area"][j])
            annotations.append(ann)
        for j, (label, score) in enumerate(zip(pred["labels"], pred["scores"])):
            res = {"image_id": i, "category_id": int(label), "score": float(score)}
            if iou_type == "bbox":
                res["bbox"] = _coco_bbox(pred["boxes"][j])
            else:
                res["segmentation"] = _rle(pred["masks"][j])
            results.append(res)
    labels = sorted({int(v) for entry in preds + target for v in entry["labels"]})
    with contextlib.redirect_stdout(io.StringIO()):
        ground_truth = COCO()
        ground_truth.dataset = {"images": images, "annotations": annotations,
                                "categories": [{"id": c} for c in labels]}
        ground_truth.createIndex()
        evaluator = COCOeval(ground_truth, ground_truth.loadRes(results), iou_type)
        for name, value in (params or {}).items():
            setattr(evaluator.params, name, value)
        evaluator.evaluate()
        evaluator.accumulate()
        evaluator.summarize()
    return evaluator


def _rerun(evaluator, **params) -> np.ndarray:
    for name, value in params.items():
        setattr(evaluator.params, name, value)
    with contextlib.redirect_stdout(io.StringIO()):
        evaluator.evaluate()
        evaluator.accumulate()
        evaluator.summarize()
    return evaluator.stats


def _values(result, keys=KEYS) -> np.ndarray:
    return np.array([float(result[key]) for key in keys])


def _check_against(result, evaluator) -> None:
    """The 12 summary numbers, and each class's AP and AR against COCOeval on that class."""
    np.testing.assert_allclose(_values(result), evaluator.stats, atol=TOLERANCE, rtol=0)
    classes = result["classes"].tolist()
    assert classes == sorted(evaluator.params.catIds)
    for c, ap, ar in zip(classes, result["map_per_class"].tolist(),
                         result["mar_100_per_class"].tolist()):
        stats = _rerun(evaluator, catIds=[c])
        assert (ap, ar) == pytest.approx((stats[0], stats[8]), abs=TOLERANCE), f"class {c}"


def _feed(metric, preds, target, batches: int):
    for chunk in np.array_split(np.arange(len(preds)), batches):
        metric.update([preds[i] for i in chunk], [target[i] for i in chunk])
    return metric


def _in_format(preds, target, box_format):
    """The same sets with boxes written in `box_format` (the rule: corner + size, or
    centre + size)."""
    def convert(boxes):
        wh = boxes[:, 2:] - boxes[:, :2]
        first = boxes[:, :2] if box_format == "xywh" else boxes[:, :2] + wh / 2
        return np.concatenate([first, wh], axis=1) if box_format != "xyxy" else boxes
    return ([{**p, "boxes": convert(p["boxes"])} for p in preds],
            [{**t, "boxes": convert(t["boxes"])} for t in target])


# ------------------------------------------------------------------ against COCOeval
@pytest.mark.parametrize("box_format", ["xyxy", "xywh", "cxcywh"])
@pytest.mark.parametrize("seed,ties", [(0, False), (1, True), (2, False)])
def test_bbox_matches_cocoeval(seed, ties, box_format):
    preds, target = _detection_set(np.random.default_rng(seed), ties=ties)
    metric = MeanAveragePrecision(box_format=box_format, class_metrics=True)
    _feed(metric, *_in_format(preds, target, box_format), batches=3)
    _check_against(metric.compute(), _cocoeval(preds, target))


def test_merge_of_halves_matches_cocoeval():
    preds, target = _detection_set(np.random.default_rng(3))
    first, second = (_feed(MeanAveragePrecision(class_metrics=True), preds[s], target[s], 2)
                     for s in (slice(0, 10), slice(10, None)))
    whole = _feed(MeanAveragePrecision(class_metrics=True), preds, target, 1).compute()
    merged = first.merge(second).compute()
    _check_against(merged, _cocoeval(preds, target))
    for key, value in whole.items():
        np.testing.assert_array_equal(merged[key].numpy(), value.numpy(), err_msg=key)


@pytest.mark.parametrize("form", ["array", "rle", "rle_string", "rle_counts_list"])
def test_segm_matches_cocoeval(form):
    preds, target = _segmentation_set(np.random.default_rng(4))
    evaluator = _cocoeval(preds, target, iou_type="segm")
    if form != "array":
        for entry in preds + target:
            entry["masks"] = [_written_as(form, mask) for mask in entry["masks"]]
    metric = _feed(MeanAveragePrecision(iou_type="segm", class_metrics=True), preds, target, 2)
    _check_against(metric.compute(), evaluator)


def _written_as(form: str, mask) -> dict:
    if form == "rle":
        return _rle(mask)
    if form == "rle_string":
        rle = _rle(mask)
        return {"size": rle["size"], "counts": rle["counts"].decode()}
    return {"size": list(mask.shape), "counts": _runs(mask)}


def _runs(mask) -> list[int]:
    """Uncompressed COCO counts, the rule written out: lengths of alternating runs of 0s and
    1s over the pixels in column-major order, starting with a (possibly empty) run of 0s."""
    pixels = mask.T.ravel().astype(np.int8)
    bounds = np.concatenate(([0], np.flatnonzero(np.diff(pixels)) + 1, [pixels.size]))
    runs = np.diff(bounds).tolist()
    return [0] + runs if pixels[0] else runs


def test_custom_thresholds_match_cocoeval():
    preds, target = _detection_set(np.random.default_rng(5))
    iou_thresholds, rec_thresholds = [0.3, 0.5, 0.75, 0.9], np.linspace(0, 1, 11).tolist()
    metric = MeanAveragePrecision(iou_thresholds=iou_thresholds, rec_thresholds=rec_thresholds,
                                  max_detection_thresholds=[20, 2, 5])
    result = _feed(metric, preds, target, 2).compute()
    evaluator = _cocoeval(preds, target, params={
        "iouThrs": np.array(iou_thresholds), "recThrs": np.array(rec_thresholds),
        "maxDets": [2, 5, 20]})
    renamed = {"mar_1": "mar_2", "mar_10": "mar_5", "mar_100": "mar_20"}
    keys = [renamed.get(key, key) for key in KEYS]
    # COCOeval's stats[0] asks for the limit 100 whatever maxDets holds (so it is -1 here);
    # map uses the largest limit, as stats[1:6] do
    precision = evaluator.eval["precision"][..., 0, -1]
    assert float(result["map"]) == pytest.approx(precision[precision > -1].mean(), abs=TOLERANCE)
    np.testing.assert_allclose(_values(result, keys)[1:], evaluator.stats[1:], atol=TOLERANCE,
                               rtol=0)


def test_given_areas_decide_area_ranges():
    preds, target = _detection_set(np.random.default_rng(6))
    for t in target:
        t["area"] = np.random.default_rng(len(t["labels"])).uniform(0, 20000, len(t["labels"]))
    result = _feed(MeanAveragePrecision(), preds, target, 1).compute()
    np.testing.assert_allclose(_values(result), _cocoeval(preds, target).stats,
                               atol=TOLERANCE, rtol=0)


def test_tensors_on_device(device):
    preds, target = _detection_set(np.random.default_rng(7), n_images=12)
    evaluator = _cocoeval(preds, target)
    on_device = [[{k: dl.tensor(v, device=device) for k, v in entry.items()} for entry in side]
                 for side in (preds, target)]
    metric = _feed(MeanAveragePrecision(class_metrics=True), *on_device, batches=2)
    result = metric.compute()
    assert all(value.device == dl.device(device) for value in result.values())
    assert result["map"].shape == () and result["map"].dtype == dl.float32
    _check_against(result, evaluator)


# ----------------------------------------------------------------------- edge cases
def test_no_detections_anywhere():
    """COCOeval cannot load an empty result list, so it gets one detection of a category
    that is not in the dataset, which it drops."""
    _, target = _detection_set(np.random.default_rng(8), n_images=6)
    preds = [{"boxes": np.zeros((0, 4)), "scores": np.zeros(0), "labels": np.zeros(0, int)}
             for _ in target]
    stray = {"image_id": 1, "category_id": 999, "score": 0.5, "bbox": [0, 0, 1, 1]}
    result = MeanAveragePrecision()
    result.update(preds, target)
    values = _values(result.compute())
    np.testing.assert_allclose(values, _cocoeval(preds, target, extra_results=[stray]).stats,
                               atol=TOLERANCE)
    # the rule: nothing detected, so every precision and recall is 0 where defined
    assert set(values.tolist()) <= {0.0, -1.0} and values[0] == 0.0


def test_no_ground_truths_anywhere_is_undefined():
    preds, _ = _detection_set(np.random.default_rng(9), n_images=5)
    target = [{"boxes": [], "labels": []} for _ in preds]
    metric = MeanAveragePrecision(class_metrics=True)
    metric.update(preds, target)
    result = metric.compute()
    assert np.all(_values(result) == -1.0)
    assert np.all(result["map_per_class"].numpy() == -1.0)


def test_nothing_seen_is_undefined():
    metric = MeanAveragePrecision()
    metric.update([], [])
    assert np.all(_values(metric.compute()) == -1.0)


def test_single_box():
    """One detection on its 10 x 10 ground truth: every defined value is 1; only the small
    area range has a ground truth, so medium and large are undefined (-1)."""
    metric = MeanAveragePrecision(class_metrics=True)
    metric.update([{"boxes": [[5.0, 5, 15, 15]], "scores": [0.9], "labels": [3]}],
                  [{"boxes": [[5.0, 5, 15, 15]], "labels": [3]}])
    result = metric.compute()
    undefined = {"map_medium", "map_large", "mar_medium", "mar_large"}
    assert {k: float(result[k]) for k in KEYS} == {
        k: -1.0 if k in undefined else 1.0 for k in KEYS}
    assert result["classes"].tolist() == [3] and result["map_per_class"].tolist() == [1.0]


def test_detection_on_a_crowd_is_ignored():
    """A detection matched to a crowd counts neither as hit nor as false alarm; so the
    other detection (on the real ground truth) keeps precision 1."""
    metric = MeanAveragePrecision()
    metric.update([{"boxes": [[0.0, 0, 10, 10], [50, 50, 60, 60]], "scores": [0.9, 0.8],
                    "labels": [0, 0]}],
                  [{"boxes": [[0.0, 0, 40, 40], [50, 50, 60, 60]], "labels": [0, 0],
                    "iscrowd": [1, 0]}])
    assert float(metric.compute()["map"]) == 1.0


# Two scenes where COCO's matching order decides the result; at IoU 0.75 both are perfect.
SCENES = {
    # The first detection has the same IoU (9/11) with both ground truths and takes the
    # last of them, leaving the first one for the second detection (IoU 1; with the
    # second ground truth it would have IoU 2/3 only).
    "equal_iou_takes_the_last": (
        [[1.0, 0, 11, 10], [0, 0, 10, 10]], [0.9, 0.8], [[0.0, 0, 10, 10], [2, 0, 12, 10]], [0, 0]),
    # The first detection overlaps the crowd more (11/12 of its own area) than the ground
    # truth (IoU 5/6) but takes the ground truth, as ones not ignored come first; the
    # second then finds it taken and falls on the crowd (ignored, not a false alarm).
    "regular_before_crowd": (
        [[0.0, 0, 12, 10], [0, 0, 10, 10]], [0.9, 0.8], [[0.0, 0, 10, 10], [1, 0, 13, 10]],
        [0, 1]),
}


@pytest.mark.parametrize("scene", list(SCENES))
def test_matching_order(scene):
    boxes, scores, gt_boxes, crowd = SCENES[scene]
    preds = [{"boxes": np.array(boxes), "scores": np.array(scores),
              "labels": np.zeros(len(scores), int)}]
    target = [{"boxes": np.array(gt_boxes), "labels": np.zeros(len(crowd), int),
               "iscrowd": np.array(crowd)}]
    metric = MeanAveragePrecision()
    metric.update(preds, target)
    values = _values(metric.compute())
    np.testing.assert_allclose(values, _cocoeval(preds, target).stats, atol=TOLERANCE)
    assert values[KEYS.index("map_75")] == 1.0


def test_forward_returns_the_batch_value_and_accumulates():
    preds, target = _detection_set(np.random.default_rng(10), n_images=10)
    metric = MeanAveragePrecision()
    batch_value = metric(preds[:5], target[:5])
    alone = _feed(MeanAveragePrecision(), preds[:5], target[:5], 1).compute()
    np.testing.assert_array_equal(_values(batch_value), _values(alone))
    metric(preds[5:], target[5:])
    np.testing.assert_allclose(_values(metric.compute()), _cocoeval(preds, target).stats,
                               atol=TOLERANCE)


def test_state_dict_round_trip_and_reset():
    preds, target = _detection_set(np.random.default_rng(11), n_images=8)
    metric = _feed(MeanAveragePrecision(), preds, target, 2)
    copy = MeanAveragePrecision()
    copy.load_state_dict(metric.state_dict())
    np.testing.assert_array_equal(_values(copy.compute()), _values(metric.compute()))
    metric.reset()
    assert np.all(_values(metric.compute()) == -1.0)


# --------------------------------------------------------------------------- errors
GOOD_PRED = {"boxes": [[0.0, 0, 1, 1]], "scores": [0.5], "labels": [1]}
GOOD_TARGET = {"boxes": [[0.0, 0, 1, 1]], "labels": [1]}


@pytest.mark.parametrize("preds,target,error,message", [
    ([{"boxes": [[0.0, 0, 1, 1]], "labels": [1]}], [GOOD_TARGET], ValueError,
     r"preds\[0\] is missing the key\(s\) 'scores'; each entry needs boxes, scores, labels"),
    ([GOOD_PRED], [{"labels": [1]}], ValueError, r"target\[0\] is missing the key\(s\) 'boxes'"),
    ([{**GOOD_PRED, "boxes": [[0.0, 0, 1]]}], [GOOD_TARGET], dl.ShapeError,
     r"preds\[0\]\['boxes'\] must have shape \(1, 4\) to match the labels, got \(1, 3\)"),
    ([GOOD_PRED], [{**GOOD_TARGET, "labels": [1, 2]}], dl.ShapeError,
     r"target\[0\]\['boxes'\] must have shape \(2, 4\) to match the labels, got \(1, 4\)"),
    ([{**GOOD_PRED, "scores": [0.5, 0.4]}], [GOOD_TARGET], dl.ShapeError,
     r"preds\[0\]\['scores'\] must have shape \(1,\), got \(2,\)"),
    ([{**GOOD_PRED, "labels": [1.5]}], [GOOD_TARGET], dl.DTypeError,
     r"preds\[0\]\['labels'\] must hold integers, got dtype float32"),
    ([GOOD_PRED], [{**GOOD_TARGET, "iscrowd": [0, 1]}], dl.ShapeError,
     r"target\[0\]\['iscrowd'\] must have shape \(1,\), got \(2,\)"),
    ([GOOD_PRED, GOOD_PRED], [GOOD_TARGET], ValueError,
     "preds has 2 images and target 1; give one entry per image in both"),
    (GOOD_PRED, GOOD_TARGET, TypeError, "preds must be a list of dicts, one per image, got dict"),
    ([(1, 2)], [GOOD_TARGET], TypeError, r"preds\[0\] must be a dict with keys boxes, scores"),
])
def test_malformed_input_is_named(preds, target, error, message):
    with pytest.raises(error, match=message):
        MeanAveragePrecision().update(preds, target)


def test_malformed_masks_are_named():
    metric = MeanAveragePrecision(iou_type="segm")
    pred = {"masks": np.zeros((1, 4, 5), bool), "scores": [0.5], "labels": [0]}
    with pytest.raises(dl.ShapeError, match=r"preds\[0\]\['masks'\] are \(4, 5\) and "
                                            r"target\[0\]\['masks'\] \(4, 6\)"):
        metric.update([pred], [{"masks": np.zeros((1, 4, 6), bool), "labels": [0]}])
    with pytest.raises(ValueError, match=r"target\[0\]\['masks'\]\[0\]: RLE run lengths must "
                                         r"be non-negative and sum to height \* width = 20"):
        metric.update([pred], [{"masks": [{"size": [4, 5], "counts": [3, 4]}], "labels": [0]}])
    with pytest.raises(ValueError, match="must be a dict with keys 'size' and 'counts', got "
                                         r"dict with keys \['counts'\]"):
        metric.update([pred], [{"masks": [{"counts": [20]}], "labels": [0]}])


@pytest.mark.parametrize("arguments,error,message", [
    ({"box_format": "xyxyr"}, ValueError, "unknown box_format 'xyxyr'; valid: xyxy, xywh, cxcywh"),
    ({"iou_type": "keypoints"}, ValueError, "unknown iou_type 'keypoints'; valid: bbox, segm"),
    ({"iou_thresholds": [0.5, 1.5]}, ValueError, r"iou_thresholds must be a non-empty list of "
                                                 r"numbers in \[0, 1\]"),
    ({"rec_thresholds": []}, ValueError, "rec_thresholds must be a non-empty list"),
    ({"max_detection_thresholds": [10, 0]}, ValueError, "max_detection_thresholds must be a "
                                                        "non-empty list of distinct positive ints"),
    ({"max_detection_thresholds": [10, 10]}, ValueError, "distinct positive ints"),
    ({"class_metrics": "yes"}, TypeError, "class_metrics must be a bool, got str"),
])
def test_bad_arguments_are_named(arguments, error, message):
    with pytest.raises(error, match=message):
        MeanAveragePrecision(**arguments)


# ----------------------------------------------------------------------------- RLE
def test_rle_decode_inverts_pycocotools_encode():
    rng = np.random.default_rng(12)
    masks = list(rng.random((6, 23, 31)) < 0.4) + [np.zeros((5, 7), bool), np.ones((5, 7), bool)]
    masks += list(_ellipses(np.array([[3.0, 2, 120, 90], [40, 10, 44, 13]])))
    for mask in masks:
        rle = _rle(mask)
        for form in (rle, {"size": rle["size"], "counts": rle["counts"].decode()},
                     {"size": list(mask.shape), "counts": _runs(mask)}):
            np.testing.assert_array_equal(rle_decode(form), mask)


def test_rle_decode_rejects_a_broken_string():
    with pytest.raises(ValueError, match="not a valid COCO compressed encoding"):
        rle_decode({"size": [2, 2], "counts": "1~"})
