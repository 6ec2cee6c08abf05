"""The cost of an idle live dashboard: mlp_step's SGD step, its loss recorded each step, with
a `dlfree.train.Monitor` serving (and sampling resources every second) that nobody has
opened, against the same step recording the loss in a plain History.

Recording the loss is what every training loop does anyway (the Trainer logs "step_loss"
per step), so the difference is the dashboard's own work: queueing the point and the
progress as events. The target is < 2 %.
"""

import io
import itertools

from . import mlp_step
from .plan import Plan

NAME = "dashboard_idle"
DESCRIPTION = "mlp_step + Monitor.log per step, dashboard served, nobody connected"
UNIT = "ms"
REFERENCE = "dlfree_plain"
TARGETS = {"dlfree_plain": 1.02}
PLANS = {"full": Plan(rounds=21, iterations=30, warmup=20),
         "quick": Plan(rounds=3, iterations=5, warmup=3)}
LIBRARIES = {"dlfree_plain": "dlfree"}


def _recording(record):
    """mlp_step's dl.free step, then `record(step_number, loss)`; returns the loss."""
    step = mlp_step.build_dlfree()
    numbers = itertools.count(1)

    def timed():
        loss = step()
        record(next(numbers), float(loss))
        return loss

    return timed


def build_dlfree():
    """With a Monitor serving on a free loopback port (its URL kept out of the output)."""
    from dlfree.train import Monitor

    monitor = Monitor(port=0, file=io.StringIO(), title="benchmark")
    step = _recording(lambda n, loss: monitor.log(n, step_loss=loss))
    step.close = monitor.finish
    return step


def build_dlfree_plain():
    """The loss into a History, as the Trainer records it."""
    from dlfree.train import History

    history = History()
    return _recording(lambda n, loss: history.log("step_loss", loss, n))


BUILDERS = {"dlfree": build_dlfree, "dlfree_plain": build_dlfree_plain}
