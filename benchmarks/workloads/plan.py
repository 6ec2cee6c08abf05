"""`Plan`: how long a workload is timed."""

from dataclasses import dataclass


@dataclass(frozen=True)
class Plan:
    """`rounds` of `iterations` each, after `warmup` untimed iterations."""

    rounds: int
    iterations: int
    warmup: int
