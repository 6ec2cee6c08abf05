"""Instance masks: COCO run-length encodings (uncompressed counts or the compressed string)
decoded to binary masks, and pairwise mask IoU computed with one matrix product."""

from __future__ import annotations

from dlfree.errors import ShapeError

import numpy as np

# Above this many pixels a float32 product could round its counts; below it every partial
# sum of 0/1 products is an integer that float32 holds exactly.
_FLOAT32_EXACT_PIXELS = 2**24


def _rle_size(rle: dict, where: str) -> tuple[int, int]:
    size = rle.get("size")
    if (not isinstance(size, list | tuple) or len(size) != 2
            or not all(isinstance(s, int | np.integer) and s >= 0 for s in size)):
        raise ValueError(f"{where}: RLE 'size' must be [height, width] of non-negative ints, "
                         f"got {size!r}")
    return int(size[0]), int(size[1])


def _decode_counts_string(text: bytes, where: str) -> np.ndarray:
    """COCO's compressed counts: each run length is a signed integer written in groups of
    5 bits, one character (value + 48) per group, bit 0x20 meaning that more groups
    follow; from the fourth run on, each value is stored as the difference from the run
    two places earlier."""
    codes = np.frombuffer(text, dtype=np.uint8).astype(np.int64) - 48
    if codes.size == 0:
        return codes
    if codes.min() < 0 or codes.max() > 63 or codes[-1] & 0x20:
        raise ValueError(f"{where}: RLE 'counts' string is not a valid COCO compressed "
                         "encoding (characters '0' to 'o', the last one below 'P')")
    ends = np.flatnonzero((codes & 0x20) == 0)
    starts = np.concatenate(([0], ends[:-1] + 1))
    shift = 5 * (np.arange(codes.size) - np.repeat(starts, ends - starts + 1))
    values = np.add.reduceat((codes & 0x1F) << shift, starts)
    negative = (codes[ends] & 0x10) != 0
    values[negative] -= np.int64(1) << (shift[ends[negative]] + 5)
    counts = values.copy()
    counts[1::2] = np.cumsum(values[1::2])
    counts[2::2] = np.cumsum(values[2::2])
    return counts


def rle_decode(rle: dict, where: str = "rle_decode") -> np.ndarray:
    """The binary mask (height, width) of a COCO RLE dict {"size": [h, w], "counts": ...},
    counts either a list of run lengths or COCO's compressed string (str or bytes).

    Runs alternate background and foreground, starting with background, over the pixels
    in column-major order.
    """
    if not isinstance(rle, dict) or "counts" not in rle or "size" not in rle:
        raise ValueError(f"{where}: an RLE mask must be a dict with keys 'size' and 'counts', "
                         f"got {type(rle).__name__}"
                         + (f" with keys {sorted(rle)}" if isinstance(rle, dict) else ""))
    height, width = _rle_size(rle, where)
    counts = rle["counts"]
    if isinstance(counts, str):
        counts = counts.encode("ascii")
    if isinstance(counts, bytes):
        runs = _decode_counts_string(counts, where)
    else:
        runs = np.asarray(counts)
        if runs.ndim != 1 or (runs.size and runs.dtype.kind not in "iu"):
            raise ValueError(f"{where}: RLE 'counts' must be a list of ints or a compressed "
                             f"string, got {type(rle['counts']).__name__}")
    negative_run = runs.size > 0 and runs.min() < 0
    if negative_run or int(runs.sum()) != height * width:
        raise ValueError(f"{where}: RLE run lengths must be non-negative and sum to "
                         f"height * width = {height * width}, got runs summing to "
                         f"{int(runs.sum())}")
    pixels = np.repeat(np.arange(runs.size) % 2 == 1, runs)
    return pixels.reshape(width, height).T


def mask_stack_from_rles(rles, where: str) -> np.ndarray:
    """A (N, H, W) boolean array from a sequence of RLE dicts of one size."""
    masks = [rle_decode(rle, f"{where}[{i}]") for i, rle in enumerate(rles)]
    shapes = {m.shape for m in masks}
    if len(shapes) > 1:
        raise ShapeError(f"{where}: RLE masks of one image must share one size, got "
                         f"{sorted(shapes)}")
    return np.stack(masks) if masks else np.zeros((0, 0, 0), dtype=bool)


def _flat(masks):
    """(N, H, W) -> (N, H * W), also for N = 0."""
    return masks.reshape(masks.shape[0], masks.shape[1] * masks.shape[2])


def mask_areas(xp, masks):
    """The pixel count of each mask of a (N, H, W) boolean array, as float64."""
    return _flat(masks).sum(axis=1, dtype=xp.float64)


def mask_iou(xp, detections, ground_truths, crowd):
    """COCO IoU (D, G) of boolean masks (D, H, W) and (G, H, W); against a crowd ground
    truth the denominator is the detection's area alone. Pairs that do not overlap give 0."""
    d, g = _flat(detections), _flat(ground_truths)
    area_d = d.sum(axis=1, dtype=xp.float64)
    area_g = g.sum(axis=1, dtype=xp.float64)
    # pixels that no mask covers add nothing to any intersection: leave them out of the product
    covered = d.any(axis=0) | g.any(axis=0)
    dtype = xp.float32 if d.shape[1] < _FLOAT32_EXACT_PIXELS else xp.float64
    inter = (d[:, covered].astype(dtype) @ g[:, covered].astype(dtype).T).astype(xp.float64)
    union = xp.where(crowd[None, :], area_d[:, None], area_d[:, None] + area_g[None, :] - inter)
    return xp.where(inter > 0, inter / xp.where(inter > 0, union, 1), 0.0)
