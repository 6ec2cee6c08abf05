"""The training events: order and arguments, plain methods and @hookimpl, callbacks chosen
by registered name, plugins' hooks, should_stop, and the exception event."""

from __future__ import annotations

import dlfree as dl
from dlfree import nn, optim
from dlfree.train import hookspecs
from dlfree.train.events import EVENTS

import pluggy
import pytest

TRAIN_HOOKS = sorted(n for n in dir(hookspecs) if n.startswith("dlfree_train_"))


class Recorder:
    """Records every event with the arguments it receives (plain methods, no marker)."""

    def __init__(self):
        self.calls: list[tuple] = []

    def dlfree_train_start(self, trainer):
        self.calls.append(("start", trainer.state.global_step))

    def dlfree_train_epoch_start(self, trainer, epoch):
        self.calls.append(("epoch_start", epoch))

    def dlfree_train_batch_start(self, batch, batch_index):  # a subset of the arguments
        self.calls.append(("batch_start", batch_index, batch[1].tolist()))

    def dlfree_train_batch_end(self, trainer, batch, batch_index, loss, outputs):
        self.calls.append(("batch_end", batch_index, batch[1].tolist(), loss,
                           tuple(outputs.shape), trainer.state.global_step))

    def dlfree_train_validation_end(self, trainer, metrics):
        self.calls.append(("validation_end", metrics))

    def dlfree_train_epoch_end(self, trainer, epoch, logs):
        self.calls.append(("epoch_end", epoch, logs))

    def dlfree_train_end(self, trainer):
        self.calls.append(("end", trainer.state.epoch))

    def dlfree_train_exception(self, trainer, exception):
        self.calls.append(("exception", type(exception).__name__))


def _trainer(mlp, callbacks, **options):
    model = mlp()
    settings = {"max_epochs": 2, **options}
    return dl.train.Trainer(model, optim.SGD(model.parameters(), lr=0.1), nn.CrossEntropyLoss(),
                            callbacks=callbacks, **settings)


def test_events_come_in_order_with_their_arguments(mlp, loaders):
    train, val = loaders(n=12, batch_size=4)
    recorder = Recorder()
    trainer = _trainer(mlp, [recorder])
    history = trainer.fit(train, val)
    labels = [y.tolist() for _, y in train]
    want = [("start", 0)]
    for epoch in range(2):
        want.append(("epoch_start", epoch))
        for i in range(3):
            step = epoch * 3 + i + 1
            want += [("batch_start", i, labels[i]),
                     ("batch_end", i, labels[i], history["step_loss"].values[step - 1], (4, 3),
                      step)]
        want.append(("validation_end", {"val_loss": history["val_loss"].values[epoch]}))
        want.append(("epoch_end", epoch, {"loss": history["loss"].values[epoch], "lr": 0.1,
                                          "val_loss": history["val_loss"].values[epoch]}))
    want.append(("end", 2))
    assert recorder.calls == want
    losses = [c[3] for c in recorder.calls if c[0] == "batch_end"]
    assert history["loss"].values == pytest.approx([sum(losses[:3]) / 3, sum(losses[3:]) / 3],
                                                   rel=1e-12)


def test_every_training_hookspec_is_called(mlp, loaders):
    """Each dlfree_train_* hookspec (the list tests/core/test_plugins.py leaves to this file)."""
    assert list(EVENTS) == TRAIN_HOOKS
    train, val = loaders(n=8)
    recorder = Recorder()
    _trainer(mlp, [recorder]).fit(train, val)

    def fail(trainer, batch):
        raise RuntimeError("broken step")

    failing = Recorder()
    with pytest.raises(RuntimeError, match="broken step"):
        _trainer(mlp, [failing], step_fn=fail).fit(train)
    called = {f"dlfree_train_{c[0]}" for c in recorder.calls + failing.calls}
    assert called == set(TRAIN_HOOKS)
    assert failing.calls == [("start", 0), ("epoch_start", 0), ("batch_start", 0, [0, 1, 2, 0]),
                             ("exception", "RuntimeError")]


def test_hookimpl_marked_callbacks_order_and_tryfirst(mlp, loaders):
    order = []

    class Plain:
        def dlfree_train_epoch_end(self, epoch):
            order.append(("plain", epoch))

    class Marked:
        @dl.hookimpl
        def dlfree_train_epoch_end(self, epoch):
            order.append(("marked", epoch))

    class First:
        @dl.hookimpl(tryfirst=True)
        def dlfree_train_epoch_end(self):
            order.append(("first",))

    train, _ = loaders(n=8)
    _trainer(mlp, [Plain(), Marked(), First()]).fit(train)
    assert order == [("first",), ("plain", 0), ("marked", 0)] * 1 + \
        [("first",), ("plain", 1), ("marked", 1)]


class Tagged:
    """A callback class registered by name in the tests below."""

    def __init__(self, tag: str = "default"):
        self.tag = tag
        self.epochs: list[int] = []

    def dlfree_train_epoch_end(self, epoch):
        self.epochs.append(epoch)


class CallbackPlugin:
    @dl.hookimpl
    def dlfree_register_callbacks(register):
        register(Tagged, name="tagged")


def test_callbacks_registered_by_name_are_chosen_as_strings(mlp, loaders, tmp_path):
    name = dl.plugins.register(CallbackPlugin)
    try:
        trainer = _trainer(mlp, ["tagged", ("tagged", {"tag": "second"}),
                                 ("model_checkpoint", {"dirpath": tmp_path, "monitor": None})])
    finally:
        dl.plugins.unregister(name)
    first, second, checkpoint = trainer.callbacks
    assert (type(first), first.tag, second.tag) == (Tagged, "default", "second")
    assert type(checkpoint) is dl.train.ModelCheckpoint
    trainer.fit(loaders(n=8)[0])
    assert first.epochs == second.epochs == [0, 1]
    assert (tmp_path / "last.safetensors").exists()
    with pytest.raises(dl.PluginError, match="unknown callback 'taged'"):
        _trainer(mlp, ["taged"])


def test_registered_plugins_train_hooks_are_called_for_every_trainer(mlp, loaders):
    seen = []

    class LoggerPlugin:
        @dl.hookimpl
        def dlfree_train_epoch_end(trainer, epoch, logs):
            seen.append((id(trainer), epoch, sorted(logs)))

    name = dl.plugins.register(LoggerPlugin)
    try:
        trainers = [_trainer(mlp, [], max_epochs=1) for _ in range(2)]
        for trainer in trainers:
            trainer.fit(loaders(n=8)[0])
    finally:
        dl.plugins.unregister(name)
    assert seen == [(id(t), 0, ["loss", "lr"]) for t in trainers]


@pytest.mark.parametrize("where, want_steps, want_epochs", [
    ("batch", 2, 1),   # stops after the batch that asked, the epoch is still ended
    ("epoch", 6, 2),
])
def test_should_stop_is_honoured(mlp, loaders, where, want_steps, want_epochs):
    class Stopper:
        def dlfree_train_batch_end(self, trainer, batch_index):
            if where == "batch" and batch_index == 1:
                trainer.should_stop = True

        def dlfree_train_epoch_end(self, trainer, epoch):
            if where == "epoch" and epoch == 1:
                trainer.should_stop = True

    recorder = Recorder()
    trainer = _trainer(mlp, [Stopper(), recorder], max_epochs=5)
    trainer.fit(loaders(n=12)[0])
    assert trainer.state.global_step == want_steps
    assert [c[1] for c in recorder.calls if c[0] == "epoch_end"] == list(range(want_epochs))
    assert recorder.calls[-1] == ("end", want_epochs)


def test_keyboard_interrupt_calls_the_exception_event_and_returns(mlp, loaders):
    class Interrupt:
        def dlfree_train_batch_end(self, batch_index):
            if batch_index == 1:
                raise KeyboardInterrupt

    recorder = Recorder()
    trainer = _trainer(mlp, [Interrupt(), recorder])
    trainer.fit(loaders(n=12)[0])
    assert trainer.interrupted
    assert recorder.calls[-1] == ("exception", "KeyboardInterrupt")
    assert not any(c[0] == "end" for c in recorder.calls)


def test_callback_mistakes_are_explained(mlp):
    class Typo:
        def dlfree_train_epoch_ends(self, epoch):
            pass

    class WrongArgument:
        def dlfree_train_epoch_end(self, epochs):
            pass

    with pytest.raises(TypeError, match="dlfree_train_epoch_ends.*the training events are "
                                        "dlfree_train_batch_end"):
        _trainer(mlp, [Typo()])
    with pytest.raises(TypeError, match="has a hook method that does not fit its event.*epochs"):
        _trainer(mlp, [WrongArgument()])
    with pytest.raises(TypeError, match="callback Recorder is a class; pass an instance"):
        _trainer(mlp, [Recorder])
    with pytest.raises(TypeError, match=r"must be \(name, \{arguments\}\)"):
        _trainer(mlp, [("model_checkpoint", "x", 1)])
    with pytest.raises(TypeError, match="callbacks must be a list"):
        _trainer(mlp, "model_checkpoint")


def test_dlfree_train_registers_its_callbacks_through_its_entry_point():
    for name, callback in dl.train.callbacks.NAMES.items():
        assert dl.registry.callbacks.get(name) is callback
        provider = dl.registry.callbacks.provider(name)
        assert provider["distribution"] == "dlfree-train"
        assert provider["entry_point"] == "train = dlfree.train.plugin"
    assert {"model_checkpoint", "progress", "csv_logger", "jsonl_logger", "early_stopping",
            "lr_monitor", "html_report"} <= set(dl.registry.callbacks.names())


def test_dlfree_train_adds_the_training_events_to_the_plugin_manager():
    pm = dl.plugins.manager()
    specs = {name: caller.spec.function for name, caller in vars(pm.hook).items()
             if name.startswith("dlfree_train_") and caller.spec is not None}
    assert specs == {name: getattr(hookspecs, name) for name in EVENTS}
    pm.check_pending()  # every first-party hook implementation fits a spec

    class WrongArgument:
        @dl.hookimpl
        def dlfree_train_epoch_end(trainer, epochs):
            pass

    with pytest.raises(pluggy.PluginValidationError, match="epochs"):
        dl.plugins.register(WrongArgument)


def test_a_trainer_runs_its_callbacks_without_dlfree_trains_plugin_loaded(mlp, loaders,
                                                                           monkeypatch):
    monkeypatch.setenv("DLFREE_PLUGINS", "dlfree-nn")  # the training events are never added
    dl.plugins.reload()
    try:
        assert not hasattr(dl.plugins.manager().hook, "dlfree_train_start")
        recorder = Recorder()
        _trainer(mlp, [recorder], max_epochs=1).fit(loaders(n=8)[0])
        assert [c[0] for c in recorder.calls] == ["start", "epoch_start", "batch_start",
                                                  "batch_end", "batch_start", "batch_end",
                                                  "epoch_end", "end"]
        with pytest.raises(dl.PluginError, match="unknown callback 'progress'"):
            _trainer(mlp, ["progress"])
    finally:
        monkeypatch.delenv("DLFREE_PLUGINS")
        dl.plugins.reload()
