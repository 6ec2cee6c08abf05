"""`PeriodicAveraging`: Local SGD, the data parallelism for slow links.

Each rank steps its own optimizer on its own batches, with no communication per step;
every `period` steps the ranks' parameters are averaged, so a step costs one all-reduce
of the model every `period` steps instead of one per step. With period 1 and plain SGD
(momentum included, a linear update) it computes what DistributedDataParallel does.
"""

from __future__ import annotations

import numbers

from ..autograd import no_grad
from . import coalesce
from .group import member_group


class PeriodicAveraging:
    """Average `model`'s parameters (and its floating-point buffers, with
    `average_buffers`) over the ranks of `group` every `period` calls of `step()`, and
    after each of the first `warmup_steps` calls (a synchronous start, as post-local SGD
    recommends). At construction every rank takes rank 0's values.

        averaging = PeriodicAveraging(model, period=4)
        for x, y in batches:
            optimizer.zero_grad(); loss_fn(model(x), y).backward(); optimizer.step()
            averaging.step()
    """

    def __init__(self, model, period: int, warmup_steps: int = 0, group=None,
                 average_buffers: bool = True):
        for name, value, low in (("period", period, 1), ("warmup_steps", warmup_steps, 0)):
            if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < low:
                raise ValueError(f"PeriodicAveraging: {name} must be an integer >= {low}, got "
                                 f"{value!r}")
        self.period, self.warmup_steps = int(period), int(warmup_steps)
        self.group = group
        pg = member_group(group, "PeriodicAveraging")
        self.params = [p for p in model.parameters()]
        buffers = [b for b in model.buffers()] if hasattr(model, "buffers") else []
        self.buffers = [b for b in buffers if b.is_floating_point()] if average_buffers else []
        named = list(model.named_parameters()) + (list(model.named_buffers())
                                                  if hasattr(model, "named_buffers") else [])
        coalesce.check_same_layout(named, "PeriodicAveraging", group)
        with no_grad():
            coalesce.broadcast_tensors([t for _, t in named], pg.ranks[0], group)
        self.steps = 0

    def step(self) -> bool:
        """Count one optimizer step; average when it is due. Returns whether it averaged."""
        self.steps += 1
        due = self.steps <= self.warmup_steps or \
            (self.steps - self.warmup_steps) % self.period == 0
        if due:
            self.average()
        return due

    def average(self) -> None:
        """Average the parameters (and buffers) over the ranks now."""
        with no_grad():
            coalesce.average_tensors(self.params + self.buffers, self.group)

    def state_dict(self) -> dict:
        return {"steps": self.steps}

    def load_state_dict(self, state: dict) -> None:
        self.steps = int(state["steps"])
