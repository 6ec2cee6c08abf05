"""The hook implementations through which dlfree-optim registers what it provides,
exactly as a third-party plugin would (entry point `optim` in the `dlfree` group)."""

from __future__ import annotations

from dlfree import hookimpl

from . import (
    ASGD,
    LAMB,
    LARS,
    LBFGS,
    SGD,
    AdaBound,
    Adadelta,
    Adafactor,
    Adagrad,
    Adam,
    Adamax,
    AdamW,
    Lion,
    NAdam,
    NovoGrad,
    RAdam,
    RMSprop,
    Rprop,
    lr_scheduler,
)

# Every optimizer this distribution provides, registered under its class name. Lookahead
# and EMA wrap an optimizer or parameters, so they are not built from a config by name.
OPTIMIZERS = [SGD, Adam, AdamW, Adamax, NAdam, RAdam, RMSprop, Adagrad, Adadelta, LAMB, NovoGrad,
              AdaBound, LARS, Lion, Adafactor, ASGD, Rprop, LBFGS]


@hookimpl
def dlfree_register_optimizers(register):
    for optimizer in OPTIMIZERS:
        register(optimizer)


# Every LR scheduler, registered under its class name.
SCHEDULERS = [getattr(lr_scheduler, name) for name in lr_scheduler.__all__ if name != "LRScheduler"]


@hookimpl
def dlfree_register_schedulers(register):
    for scheduler in SCHEDULERS:
        register(scheduler)
