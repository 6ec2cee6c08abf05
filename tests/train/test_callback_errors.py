"""An exception raised by a training-event hook names the callback (or the plugin and its
distribution) and the event, keeps the original as its cause and its type where it can, and
`Trainer(on_callback_error="warn")` turns it into a warning that lets the run go on."""

from __future__ import annotations

import dlfree as dl
from dlfree import nn, optim
from dlfree.train import CallbackError, CallbackWarning

import pytest


class Broken:
    def __init__(self, error: Exception, at_epoch: int = 0):
        self.error, self.at_epoch, self.calls = error, at_epoch, 0

    def dlfree_train_epoch_end(self, epoch):
        self.calls += 1
        if epoch == self.at_epoch:
            raise self.error


class Counter:
    def __init__(self):
        self.epochs = 0

    def dlfree_train_epoch_end(self):
        self.epochs += 1


def _trainer(mlp, callbacks, **options):
    model = mlp()
    return dl.train.Trainer(model, optim.SGD(model.parameters(), lr=0.1), nn.CrossEntropyLoss(),
                            callbacks=callbacks, max_epochs=2, **options)


def test_a_raising_callback_is_named_with_the_original_as_cause(mlp, loaders):
    original = KeyError("no such metric")
    trainer = _trainer(mlp, [Counter(), Broken(original)])
    with pytest.raises(CallbackError, match=r"^callback Broken \(trainer.callbacks\[1\]\) "
                                            r"raised in dlfree_train_epoch_end: KeyError: "
                                            r"no such metric$") as caught:
        trainer.fit(loaders(n=8)[0])
    assert caught.value.__cause__ is original
    assert isinstance(caught.value, KeyError)  # `except KeyError` still catches it
    assert (caught.value.who, caught.value.event) == ("callback Broken (trainer.callbacks[1])",
                                                      "dlfree_train_epoch_end")


def test_an_error_whose_type_cannot_be_combined_is_a_plain_callback_error(mlp, loaders):
    original = UnicodeDecodeError("utf-8", b"\xff", 0, 1, "bad byte")
    trainer = _trainer(mlp, [Broken(original)])
    with pytest.raises(CallbackError, match="UnicodeDecodeError") as caught:
        trainer.fit(loaders(n=8)[0])
    assert caught.value.__cause__ is original


def test_warn_lets_the_run_go_on(mlp, loaders):
    counter, broken = Counter(), Broken(RuntimeError("flaky logger"))
    trainer = _trainer(mlp, [broken, counter], on_callback_error="warn")
    with pytest.warns(CallbackWarning, match=r"callback Broken .* RuntimeError: flaky logger; "
                                             r"going on"):
        trainer.fit(loaders(n=8)[0])
    assert counter.epochs == 2 and broken.calls == 2 and not trainer.interrupted
    with pytest.raises(ValueError, match="on_callback_error must be 'raise' or 'warn', got "
                                         "'ignore'"):
        _trainer(mlp, [], on_callback_error="ignore")


def test_a_raising_plugin_hook_names_the_plugin(mlp, loaders):
    class FailingPlugin:
        @dl.hookimpl
        def dlfree_train_start(trainer):
            raise ConnectionError("dashboard is down")

    name = dl.plugins.register(FailingPlugin, name="dashboard")
    try:
        with pytest.raises(CallbackError, match=r"plugin 'dashboard' \(distribution <.*>\) "
                                                r"raised in dlfree_train_start: "
                                                r"ConnectionError: dashboard is down"):
            _trainer(mlp, []).fit(loaders(n=8)[0])
    finally:
        dl.plugins.unregister(name)


def test_keyboard_interrupt_from_a_callback_is_not_wrapped(mlp, loaders):
    class Stop:
        def dlfree_train_batch_end(self):
            raise KeyboardInterrupt

    trainer = _trainer(mlp, [Stop()])
    trainer.fit(loaders(n=8)[0])
    assert trainer.interrupted
