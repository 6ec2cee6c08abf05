"""The file-fuzzing harness: seeded mutations of valid files (byte-level damage to any
safetensors file; resealed semantic damage to model files, training states and HF folders)
and a child process that loads each case under a memory limit and reports its outcome.

An outcome is "refused" (a CheckpointError naming the file), "equivalent" (it loaded, and what
it loaded equals the original), or anything else: "different" (a silently different load),
"error:<Type>" (a bare exception), "crash" (the child died) or "timeout", which are failures.
"""

from __future__ import annotations

import json
import os
import random
import select
import struct
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import dlfree as dl
from dlfree.io import save_tensors
from dlfree.io.integrity import DIGEST_KEY

import numpy as np

WORKER = Path(__file__).with_name("fuzz_worker.py")
MEMORY_LIMIT = 3 * 2**30  # the child's address space: a hostile size fails, not the machine
CASE_TIMEOUT = 60.0
GOOD = ("refused", "equivalent")


@dataclass
class Case:
    """One mutated file (or folder) to load as `kind` ("tensors", "model", "state", "hf")
    and compare with `reference`."""

    label: str
    kind: str
    path: str
    reference: str


# ------------------------------------------------------------------ safetensors bytes
def split(data: bytes) -> tuple[dict, bytes]:
    """(header as parsed JSON, data section) of a safetensors file."""
    (length,) = struct.unpack("<Q", data[:8])
    return json.loads(data[8:8 + length]), data[8 + length:]


def join(header, body: bytes, raw: bytes | None = None) -> bytes:
    """A safetensors file from a header (or its raw JSON text) and a data section."""
    text = raw if raw is not None else json.dumps(header).encode()
    return struct.pack("<Q", len(text)) + text + body


def byte_mutations(data: bytes, rng: random.Random, randoms: int) -> list[tuple[str, bytes]]:
    """Truncations at every region boundary and at random offsets, byte flips in header and
    body, header length fields past the end or huge, and edited header entries (dtypes,
    shapes, offsets, duplicate and missing names, metadata bombs)."""
    header, body = split(data)
    n = struct.unpack("<Q", data[:8])[0]
    cases: list[tuple[str, bytes]] = []
    bounds = {0, 1, 4, 7, 8, 9, 8 + n // 2, 8 + n - 1, 8 + n, len(data) - 1}
    for entry in header.values():
        if isinstance(entry, dict) and "data_offsets" in entry:
            bounds.update(8 + n + o for o in entry["data_offsets"])
    cases += [(f"truncate@{b}", data[:b]) for b in sorted(bounds) if b < len(data)]
    cases += [(f"truncate@random{b}", data[:b])
              for b in (rng.randrange(len(data)) for _ in range(randoms))]
    for region, lo, hi in (("header", 8, 8 + n), ("body", 8 + n, len(data))):
        for _ in range(randoms if hi > lo else 0):
            at, bit = rng.randrange(lo, hi), 1 << rng.randrange(8)
            flipped = bytearray(data)
            flipped[at] ^= bit
            cases.append((f"flip-{region}@{at}^{bit}", bytes(flipped)))
    for label, value in (("past-eof", len(data)), ("huge", 2**62), ("max", 2**64 - 1),
                         ("zero", 0), ("short", max(n - 1, 0)), ("long", n + 1)):
        cases.append((f"header-length-{label}", struct.pack("<Q", value) + data[8:]))
    names = [k for k in header if k != "__metadata__"]
    for name in names[:3]:
        entry = header[name]
        for dtype in [d for d in ("I32", "F64", "U8", "BOOL", "XX") if d != entry["dtype"]]:
            cases.append((f"dtype-{name}-{dtype}", join({**header, name: {**entry, "dtype": dtype}},
                                                        body)))
        shape = entry["shape"]
        for label, new in (("bigger", [d + 1 for d in shape] or [2]), ("scalar", []),
                           ("negative", [-1] + shape[1:]), ("huge", [2**40] + shape[1:]),
                           ("text", ["x"])):
            if new == shape:
                continue
            cases.append((f"shape-{name}-{label}", join({**header, name: {**entry,
                                                                          "shape": new}}, body)))
        start, end = entry["data_offsets"]
        for label, offsets in (("swapped", [end, start]), ("past-eof", [start, len(body) + 8]),
                               ("huge", [start, 2**62]), ("text", ["0", end])):
            cases.append((f"offsets-{name}-{label}",
                          join({**header, name: {**entry, "data_offsets": offsets}}, body)))
        others = {k: v for k, v in header.items() if k != name}
        cases.append((f"missing-{name}", join(others, body)))
        text = json.dumps(header).encode()
        duplicate = text[:-1] + b", " + json.dumps({name: entry}).encode()[1:]
        cases.append((f"duplicate-{name}", join(None, body, raw=duplicate)))
    metadata = header.get("__metadata__", {})
    first = next(iter(metadata), "note")
    for label, value in (("depth-bomb", "[" * 100_000 + "]" * 100_000),
                         ("size-bomb", "x" * 8_000_000), ("not-a-string", 5)):
        cases.append((f"metadata-{label}", join({**header, "__metadata__": {**metadata,
                                                                             first: value}},
                                                body)))
    cases.append(("header-not-json", join(None, body, raw=b"{" * 64)))
    cases.append(("header-not-utf8", join(None, body, raw=b'{"\xff\xfe": 1}')))
    return cases


def reseal(path: Path, tensors: dict, metadata: dict) -> None:
    """Write `tensors` and `metadata` with a fresh digest, as dl.free would: damage that only
    the schema, range and fit checks can find."""
    save_tensors(tensors, path, {k: v for k, v in metadata.items() if k != DIGEST_KEY})


def read_raw(path: Path) -> tuple[dict, dict]:
    """(tensors as NumPy arrays, metadata with the digest) of a safetensors file."""
    import safetensors

    with safetensors.safe_open(os.fspath(path), framework="numpy") as f:
        return {k: f.get_tensor(k) for k in f.keys()}, dict(f.metadata() or {})  # noqa: SIM118


# ------------------------------------------------------------------ the child process
class Runner:
    """Loads cases one by one in a child process (restarted when it dies) under a memory
    limit, so that a crash or a runaway allocation is an outcome, not a lost test run."""

    def __init__(self, memory_limit: int = MEMORY_LIMIT):
        self.memory_limit = memory_limit
        self.child: subprocess.Popen | None = None

    def _start(self) -> subprocess.Popen:
        tests = str(Path(__file__).resolve().parents[1])
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(
            [tests, os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
        return subprocess.Popen([sys.executable, str(WORKER), str(self.memory_limit)],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                env=env, stderr=subprocess.DEVNULL)

    def run(self, case: Case) -> str:
        if self.child is None or self.child.poll() is not None:
            self.child = self._start()
        child = self.child
        child.stdin.write(json.dumps(case.__dict__) + "\n")
        child.stdin.flush()
        ready, _, _ = select.select([child.stdout], [], [], CASE_TIMEOUT)
        line = child.stdout.readline() if ready else ""
        if not line:
            child.kill()
            self._reap()
            return "crash" if ready else "timeout"
        return json.loads(line)["outcome"]

    def _reap(self) -> None:
        child, self.child = self.child, None
        child.stdin.close()
        child.wait(timeout=30)
        child.stdout.close()

    def close(self) -> None:
        if self.child is not None:
            self._reap()


def run_all(cases: list[Case]) -> dict[str, Counter]:
    """{"counts": outcome counts, "failures": the cases that failed, "equivalent": the labels
    of the cases that loaded as the original}."""
    runner = Runner()
    counts: Counter = Counter()
    failures, equivalent = [], []
    try:
        for case in cases:
            outcome = runner.run(case)
            counts[outcome] += 1
            if outcome not in GOOD:
                failures.append(f"{case.kind} {case.label}: {outcome}")
            elif outcome == "equivalent":
                equivalent.append(case.label)
    finally:
        runner.close()
    return {"counts": counts, "failures": failures, "equivalent": equivalent}


def sample(cases: list, count: int | None, seed: int) -> list:
    """`count` of `cases` chosen with `seed` (all of them for None), in a fixed order."""
    if count is None or count >= len(cases):
        return cases
    return random.Random(seed).sample(cases, count)


def write_cases(folder: Path, kind: str, reference: Path,
                mutated: list[tuple[str, bytes]]) -> list[Case]:
    """Each mutated byte string as a file in `folder`, as a Case of `kind`."""
    folder.mkdir(parents=True, exist_ok=True)
    cases = []
    for i, (label, data) in enumerate(mutated):
        path = folder / f"{i:05d}.safetensors"
        path.write_bytes(data)
        cases.append(Case(label, kind, str(path), str(reference)))
    return cases


def weights_equal(a: dict, b: dict) -> bool:
    """Same names, dtypes, shapes and bytes."""
    def host(v):
        return v.numpy() if isinstance(v, dl.Tensor) else np.asarray(v)

    return a.keys() == b.keys() and all(
        host(a[k]).dtype == host(b[k]).dtype and host(a[k]).shape == host(b[k]).shape
        and host(a[k]).tobytes() == host(b[k]).tobytes() for k in a)
