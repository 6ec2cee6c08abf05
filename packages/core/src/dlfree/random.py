"""Random number generators: `dl.manual_seed`, `dl.Generator`, reproducible streams."""

from __future__ import annotations

import numpy as np


class Generator:
    """A seeded stream of random numbers (PCG64); pass it as `generator=` for a private stream."""

    def __init__(self, device="cpu"):
        self.device = device
        self._seed = int(np.random.SeedSequence().entropy % (2**63))
        self._rng = np.random.Generator(np.random.PCG64(self._seed))

    def manual_seed(self, seed: int) -> Generator:
        seed = int(seed)
        if seed < 0:
            raise ValueError(f"manual_seed: seed must be a non-negative integer, got {seed}")
        self._seed = seed
        self._rng = np.random.Generator(np.random.PCG64(seed))
        return self

    def seed(self) -> int:
        """Reseed from fresh entropy and return the new seed."""
        self.manual_seed(int(np.random.SeedSequence().entropy % (2**63)))
        return self._seed

    def initial_seed(self) -> int:
        return self._seed

    def get_state(self) -> dict:
        """The stream's position, as plain JSON-serialisable data."""
        state = self._rng.bit_generator.state
        return {"seed": self._seed, "bit_generator": state["bit_generator"],
                "state": {k: int(v) for k, v in state["state"].items()},
                "has_uint32": int(state["has_uint32"]), "uinteger": int(state["uinteger"])}

    def set_state(self, state: dict) -> Generator:
        self._seed = int(state["seed"])
        self._rng.bit_generator.state = {
            "bit_generator": state["bit_generator"], "state": dict(state["state"]),
            "has_uint32": state["has_uint32"], "uinteger": state["uinteger"],
        }
        return self

    @property
    def numpy(self) -> np.random.Generator:
        """The underlying NumPy generator (for kernels that draw their own numbers)."""
        return self._rng


default_generator = Generator()


def manual_seed(seed: int) -> Generator:
    """Seed the default generator; the same seed gives the same numbers."""
    return default_generator.manual_seed(seed)


def seed() -> int:
    return default_generator.seed()


def initial_seed() -> int:
    return default_generator.initial_seed()


def get_rng_state() -> dict:
    return default_generator.get_state()


def set_rng_state(state: dict) -> None:
    default_generator.set_state(state)


def rng(generator: Generator | None) -> np.random.Generator:
    return (generator or default_generator)._rng
