"""Object detection: box conversion and pairwise IoUs, mask decoding, and COCO mean average
precision (`MeanAveragePrecision`)."""

from .boxes import (
    box_area,
    box_convert,
    box_iou,
    complete_box_iou,
    distance_box_iou,
    generalized_box_iou,
)
from .masks import rle_decode
from .mean_ap import MeanAveragePrecision

__all__ = ["MeanAveragePrecision", "box_area", "box_convert", "box_iou", "complete_box_iou",
           "distance_box_iou", "generalized_box_iou", "rle_decode"]
