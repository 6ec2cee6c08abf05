"""Time a 3x3 convolution, forward and forward + backward, at ResNet shapes: dl.free as
it runs (numba's fused loops, or from 32 channels Winograd's F(2x2, 3x3)), without
Winograd's (the fused loops, or from 64 channels the GEMMs over tap rows), on the fused
loops alone (with a few images per pass, and with each batch padded whole), on its GEMM
paths without numba (`DLFREE_NUMBA=0`), and PyTorch, each in its own process with two
threads: the measurement behind docs/performance.md's "Convolutions".

    python benchmarks/conv_paths.py
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
from median_time import median_ms

# (N, C, H, W): the three stages of a CIFAR ResNet-20 at batch 128, and the conv2d workload
SHAPES = [(128, 16, 32, 32), (128, 32, 16, 16), (128, 64, 8, 8), (32, 64, 32, 32)]
RUNS = {"as it runs": ("dlfree", "1"), "no Winograd": ("dlfree-rows", "1"),
        "fused loops": ("dlfree-loops", "1"),
        "loops, batch padded whole": ("dlfree-whole", "1"), "GEMM paths": ("dlfree", "0"),
        "PyTorch": ("torch", "")}


def _problem(shape):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape, dtype=np.float32)
    w = rng.standard_normal((shape[1], shape[1], 3, 3), dtype=np.float32) * np.float32(0.1)
    return x, w, rng.standard_normal(shape, dtype=np.float32)


def _measure(framework: str) -> None:
    """Print 'forward_ms total_ms' per shape for `framework`, in this process."""
    if framework == "torch":
        import torch
        import torch.nn.functional as F
        torch.set_num_threads(2)
        tensor, no_grad = torch.from_numpy, torch.no_grad
    else:
        import dlfree as dl
        import dlfree.functional as F
        tensor, no_grad = dl.tensor, dl.no_grad
        from dlfree.ops import conv, winograd
        if framework != "dlfree":  # no channel count takes Winograd's
            winograd.WINOGRAD_MIN_CHANNELS = 1 << 30
        if framework in ("dlfree-loops", "dlfree-whole"):  # nor the rows
            conv._ROWS_MIN_CHANNELS = 1 << 30
        if framework == "dlfree-whole":  # no image fits a pass: every batch padded at once
            conv._PASS_BYTES = 0
    def times(x, w, g) -> tuple:
        with no_grad():
            forward = median_ms(lambda: F.conv2d(x, w, padding=1), 7)
        return forward, median_ms(lambda: F.conv2d(x, w, padding=1).backward(g), 7)

    for shape in SHAPES:
        x, w, g = (tensor(a) for a in _problem(shape))
        forward, total = times(x.requires_grad_(True), w.requires_grad_(True), g)
        print(f"{forward:.1f} {total:.1f}")


def main() -> None:
    results = {}
    for name, (framework, numba) in RUNS.items():
        env = dict(os.environ, DLFREE_NUM_THREADS="2", DLFREE_NUMBA=numba or "1")
        out = subprocess.run([sys.executable, __file__, framework], env=env, check=True,
                             capture_output=True, text=True).stdout.split("\n")
        results[name] = [line.split() for line in out if line]
    print("| input (N, C, H, W) | " + " | ".join(RUNS) + " |")
    print("|---" * (len(RUNS) + 1) + "|")
    for i, shape in enumerate(SHAPES):
        cells = [f"{results[name][i][0]} / {results[name][i][1]}" for name in RUNS]
        print(f"| {shape} | " + " | ".join(cells) + " |")
    print("ms, median of 7: forward / forward + backward, float32, 2 threads")


if __name__ == "__main__":
    if len(sys.argv) > 1:
        _measure(sys.argv[1])
    else:
        main()
