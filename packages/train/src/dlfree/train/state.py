"""Where a training run is: the counters callbacks read (`TrainState`) and the running sums
of the epoch in progress (`EpochProgress`); both are saved in training checkpoints."""

from __future__ import annotations

import attrs


@attrs.define
class TrainState:
    """The run's position, as `trainer.state`.

    epoch: the current epoch, 0-based (after the last one: the number of epochs done);
    global_step: optimizer steps taken since the run began; batch_index: batches of the
    current epoch processed so far; epochs / max_steps: the limits (None: no limit);
    steps_per_epoch: batches per epoch (None for data without a length).
    """

    epoch: int = 0
    global_step: int = 0
    batch_index: int = 0
    epochs: int | None = None
    max_steps: int | None = None
    steps_per_epoch: int | None = None

    def to_dict(self) -> dict:
        return attrs.asdict(self)

    def load(self, data: dict) -> None:
        """Take the counters from `to_dict()` output; the limits stay as configured now."""
        self.epoch = int(data["epoch"])
        self.global_step = int(data["global_step"])
        self.batch_index = int(data["batch_index"])


@attrs.define
class EpochProgress:
    """The epoch in progress: its summed batch losses, the batches accumulated toward the
    next optimizer step (of the `group_size` that step divides the losses by), and whether
    its training batches are all done (validation and the epoch's end still to come)."""

    loss_sum: float = 0.0
    loss_count: int = 0
    accumulated: int = 0
    accumulated_loss: float = 0.0
    group_size: int = 1
    batches_done: bool = False

    def to_dict(self) -> dict:
        return attrs.asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> EpochProgress:
        return cls(**data)
