"""Samplers: the order (and subset) of dataset indices a DataLoader visits in an epoch.

Samplers that draw random numbers keep `state_dict()` / `load_state_dict()`, so a
DataLoader can replay an interrupted epoch's order exactly (see `DataLoader.state_dict`).
"""

from __future__ import annotations

import math
import numbers
import os

import numpy as np

from ..random import Generator, rng


class Sampler:
    """Yields dataset indices; subclasses implement `__iter__` and usually `__len__`."""

    def __init__(self, data_source=None):
        self.data_source = data_source

    def __iter__(self):
        raise NotImplementedError(f"{type(self).__name__} must implement __iter__()")


def positive_int(name: str, value, owner: str) -> int:
    """`value` as an int, or a ValueError from `owner` saying `name` must be positive."""
    if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value <= 0:
        raise ValueError(f"{owner}: {name} must be a positive integer, got {value!r}")
    return int(value)


def boolean(name: str, value, owner: str) -> bool:
    """`value` if it is a bool, else a ValueError from `owner` naming `name`."""
    if not isinstance(value, bool):
        raise ValueError(f"{owner}: {name} must be True or False, got {value!r}")
    return value


class SequentialSampler(Sampler):
    """0, 1, ..., len(data_source) - 1, in order."""

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


# The state of a pass not begun yet that will draw its seed from the global RNG.
_DRAW_SEED = {"seed": None}


class _SeededSampler(Sampler):
    """A sampler drawing each pass from `generator`, or, without one, from a private
    generator seeded by one draw from the global RNG (so `dl.manual_seed` fixes it).

    The state of a pass is where its numbers come from: the generator's state when the pass
    began, or the drawn seed. `state_dict()` gives the running pass's state (the next pass's
    when none runs); after `load_state_dict(state)` the next pass repeats that one.
    """

    def __init__(self, data_source, generator: Generator | None):
        super().__init__(data_source)
        self.generator = generator
        self._pass_state: dict | None = None
        self._resume: dict | None = None

    def _draws(self, gen: np.random.Generator) -> np.ndarray:
        raise NotImplementedError

    def __iter__(self):
        state = self._resume or self._next_state()
        self._resume = None
        if state == _DRAW_SEED:
            state = {"seed": int(rng(None).integers(2**63))}
        self._pass_state = state
        if "generator" in state:
            self.generator.set_state(state["generator"])
            gen = self.generator.numpy
        else:
            gen = Generator().manual_seed(state["seed"]).numpy
        return self._yield(self._draws(gen).tolist())

    def _yield(self, indices: list[int]):
        yield from indices
        self._pass_state = None

    def _next_state(self) -> dict:
        if self.generator is not None:
            return {"generator": self.generator.get_state()}
        return dict(_DRAW_SEED)

    def state_dict(self) -> dict:
        """JSON-able state of the running pass (of the next one when none runs)."""
        return dict(self._pass_state or self._resume or self._next_state())

    def load_state_dict(self, state: dict) -> None:
        """Make the next pass repeat the one `state` describes."""
        if not isinstance(state, dict) or not ("generator" in state or "seed" in state):
            raise ValueError(f"{type(self).__name__}.load_state_dict: expected a dict with "
                             f"'generator' or 'seed' (from state_dict()), got {state!r}")
        if ("generator" in state) != (self.generator is not None):
            saved = "with" if "generator" in state else "without"
            raise ValueError(
                f"{type(self).__name__}.load_state_dict: the state was saved by a sampler "
                f"{saved} a generator, but this one has generator={self.generator!r}; "
                "construct it the same way as the one that was saved")
        self._resume = None if state == _DRAW_SEED else dict(state)


class RandomSampler(_SeededSampler):
    """Indices in random order: a permutation (repeated if `num_samples` exceeds the dataset),
    or `num_samples` independent draws with `replacement=True`."""

    def __init__(self, data_source, replacement: bool = False, num_samples: int | None = None,
                 generator: Generator | None = None):
        super().__init__(data_source, generator)
        self.replacement = boolean("replacement", replacement, "RandomSampler")
        if num_samples is not None:
            positive_int("num_samples", num_samples, "RandomSampler")
        self._num_samples = num_samples

    @property
    def num_samples(self) -> int:
        return len(self.data_source) if self._num_samples is None else int(self._num_samples)

    def _draws(self, gen: np.random.Generator) -> np.ndarray:
        n, count = len(self.data_source), self.num_samples
        if self.replacement:
            return gen.integers(0, n, size=count)
        whole, rest = divmod(count, n) if n else (0, 0)
        parts = [gen.permutation(n) for _ in range(whole)] + [gen.permutation(n)[:rest]]
        return np.concatenate(parts)

    def __len__(self) -> int:
        return self.num_samples


class WeightedRandomSampler(_SeededSampler):
    """`num_samples` indices drawn with probability proportional to `weights`
    (with replacement by default)."""

    def __init__(self, weights, num_samples: int, replacement: bool = True,
                 generator: Generator | None = None):
        weights = np.asarray(weights, dtype=np.float64)
        if weights.ndim != 1 or weights.size == 0:
            raise ValueError(f"WeightedRandomSampler: weights must be a non-empty 1-D sequence, "
                             f"got shape {weights.shape}")
        if not np.all(np.isfinite(weights)) or np.any(weights < 0) or weights.sum() <= 0:
            raise ValueError("WeightedRandomSampler: weights must be finite, non-negative and "
                             "not all zero")
        super().__init__(None, generator)
        self.weights = weights
        self.num_samples = positive_int("num_samples", num_samples, "WeightedRandomSampler")
        self.replacement = boolean("replacement", replacement, "WeightedRandomSampler")
        nonzero = int(np.count_nonzero(weights))
        if not replacement and self.num_samples > nonzero:
            raise ValueError(f"WeightedRandomSampler: cannot draw {self.num_samples} distinct "
                             f"indices without replacement from {nonzero} non-zero weights")

    def _draws(self, gen: np.random.Generator) -> np.ndarray:
        return gen.choice(self.weights.size, size=self.num_samples, replace=self.replacement,
                          p=self.weights / self.weights.sum())

    def __len__(self) -> int:
        return self.num_samples


class BatchSampler(Sampler):
    """Groups the indices of `sampler` into lists of `batch_size` (the last one shorter,
    or dropped with `drop_last=True`)."""

    def __init__(self, sampler, batch_size: int, drop_last: bool):
        super().__init__(None)
        self.sampler = sampler
        self.batch_size = positive_int("batch_size", batch_size, "BatchSampler")
        self.drop_last = boolean("drop_last", drop_last, "BatchSampler")

    def __iter__(self):
        batch = []
        for index in self.sampler:
            batch.append(index)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self) -> int:
        n = len(self.sampler)
        return n // self.batch_size if self.drop_last else math.ceil(n / self.batch_size)

    def state_dict(self) -> dict | None:
        """The wrapped sampler's state (None when it keeps none)."""
        inner = getattr(self.sampler, "state_dict", None)
        return inner() if inner is not None else None

    def load_state_dict(self, state: dict | None) -> None:
        if state is not None:
            inner = getattr(self.sampler, "load_state_dict", None)
            if inner is None:
                raise ValueError(f"BatchSampler.load_state_dict: the wrapped "
                                 f"{type(self.sampler).__name__} keeps no state to load")
            inner(state)


def _from_environment(value, variable: str, name: str) -> int:
    """`value`, else the default process group's (as torch's sampler takes it), else the
    launcher's environment variable."""
    if value is not None:
        return value
    from .. import distributed

    if distributed.is_initialized():
        group = distributed.group.STATE.world
        return group.size if name == "num_replicas" else group.rank
    if variable not in os.environ:
        raise ValueError(f"DistributedSampler: pass {name}= (or call "
                         "dlfree.distributed.init_process_group() first, or set "
                         f"{variable}, as torchrun-style launchers do)")
    return int(os.environ[variable])


class DistributedSampler(Sampler):
    """The share of the dataset's indices that replica `rank` of `num_replicas` processes.

    Every replica draws the same permutation (seeded by `seed + epoch`: call `set_epoch` at
    each epoch for a new order); the list is padded by repeating its start, or its tail is
    dropped with `drop_last=True`, so all replicas get the same number of indices, and
    replica r takes positions r, r + num_replicas, ... `num_replicas` and `rank` default to
    the world size and rank of the default process group (dlfree.distributed), or without
    one to the WORLD_SIZE and RANK environment variables.
    """

    def __init__(self, dataset, num_replicas: int | None = None, rank: int | None = None,
                 shuffle: bool = True, seed: int = 0, drop_last: bool = False):
        super().__init__(dataset)
        num_replicas = _from_environment(num_replicas, "WORLD_SIZE", "num_replicas")
        rank = _from_environment(rank, "RANK", "rank")
        self.num_replicas = positive_int("num_replicas", num_replicas, "DistributedSampler")
        if not isinstance(rank, numbers.Integral) or not 0 <= rank < self.num_replicas:
            raise ValueError(f"DistributedSampler: rank must be an integer in "
                             f"[0, {self.num_replicas - 1}], got {rank!r}")
        self.rank = int(rank)
        self.shuffle = boolean("shuffle", shuffle, "DistributedSampler")
        self.drop_last = boolean("drop_last", drop_last, "DistributedSampler")
        self.seed = int(seed)
        self.epoch = 0
        n = len(dataset)
        if self.drop_last and n % self.num_replicas:
            self.num_samples = math.ceil((n - self.num_replicas) / self.num_replicas)
        else:
            self.num_samples = math.ceil(n / self.num_replicas)
        self.total_size = self.num_samples * self.num_replicas

    def _permutation(self) -> list[int]:
        n = len(self.data_source)
        if not self.shuffle:
            return list(range(n))
        return Generator().manual_seed(self.seed + self.epoch).numpy.permutation(n).tolist()

    def __iter__(self):
        indices = self._permutation()
        if self.drop_last:
            indices = indices[:self.total_size]
        elif indices:
            repeats = math.ceil(self.total_size / len(indices))
            indices = (indices * repeats)[:self.total_size]
        return iter(indices[self.rank:self.total_size:self.num_replicas])

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """Choose the epoch whose permutation the next pass uses (the same on every replica)."""
        self.epoch = int(epoch)

    def state_dict(self) -> dict:
        return {"epoch": self.epoch}

    def load_state_dict(self, state: dict) -> None:
        if not isinstance(state, dict) or "epoch" not in state:
            raise ValueError(f"DistributedSampler.load_state_dict: expected {{'epoch': int}}, "
                             f"got {state!r}")
        self.epoch = int(state["epoch"])
