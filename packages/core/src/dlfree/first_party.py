"""The first-party distributions: the `dlfree` subpackage each one ships and the registry
kinds it fills. One map, read for both hints that name a distribution to install: a
missing subpackage (`dl.nn`) and an unknown name in a registry whose first-party
provider is absent (`dl.registry.layers.get("LSTM")`). A test checks it against what the
installed plugins really register."""

from __future__ import annotations

from typing import NamedTuple


class FirstParty(NamedTuple):
    subpackage: str
    kinds: tuple[str, ...]


DISTRIBUTIONS = {
    "dlfree-nn": FirstParty("nn", ("layers", "losses", "initializers")),
    "dlfree-optim": FirstParty("optim", ("optimizers", "schedulers")),
    "dlfree-metrics": FirstParty("metrics", ("metrics",)),
    "dlfree-hf": FirstParty("hf", ("architectures",)),
    "dlfree-train": FirstParty("train", ("callbacks",)),
}

SUBPACKAGES = {fp.subpackage: dist for dist, fp in DISTRIBUTIONS.items()}
"""`dlfree.<name>` -> the distribution that ships it."""

KINDS = {kind: dist for dist, fp in DISTRIBUTIONS.items() for kind in fp.kinds}
"""Registry kind -> the first-party distribution that fills it."""
