"""The TensorBoard and MLflow loggers, read back with the tools' own readers: TensorBoard's
event accumulator, and MLflow's client on a local folder store. A logger whose tool fails
warns once and training goes on."""

from __future__ import annotations

import warnings

import dlfree as dl
from dlfree import nn, optim
from dlfree.train.callbacks import MLflowLogger, TensorBoardLogger
from dlfree.train.callbacks.external import LoggerWarning, flat_params

import numpy as np
import pytest

# MLflow takes seconds to import: its tests share one test worker, which pays that once
same_worker_as_mlflow = pytest.mark.xdist_group("mlflow")


def _trainer(mlp, callbacks, tmp_path, epochs=2, **options):
    model = mlp()
    return dl.train.Trainer(model, optim.SGD(model.parameters(), lr=0.1), nn.CrossEntropyLoss(),
                            max_epochs=epochs, run_dir=tmp_path, callbacks=callbacks, **options)


def _assert_same(logged, expected, rel):
    """(step, value) pairs: the same steps, and values within `rel`."""
    assert [s for s, _ in logged] == [s for s, _ in expected]
    assert [v for _, v in logged] == pytest.approx([v for _, v in expected], rel=rel)


def _accumulator(folder):
    from tensorboard.backend.event_processing import event_accumulator

    with warnings.catch_warnings():  # (the reader's own deprecation notes, not ours)
        warnings.simplefilter("ignore", DeprecationWarning)
        accumulator = event_accumulator.EventAccumulator(
            str(folder), size_guidance={event_accumulator.SCALARS: 0,
                                        event_accumulator.HISTOGRAMS: 0})
        accumulator.Reload()
    return accumulator


def test_tensorboard_scalars_histograms_and_hparams_read_back(mlp, loaders, tmp_path):
    pytest.importorskip("tensorboard")
    logger = TensorBoardLogger(every_n_steps=2, histogram_every_n_steps=3)
    train, val = loaders()
    trainer = _trainer(mlp, ["lr_monitor", logger], tmp_path)
    grads_at_3 = {}

    class GradsAtStep3:  # the gradients step 3 applied, read just before it applies them
        def dlfree_train_batch_start(self, trainer, batch_index):
            if trainer.state.global_step == 2:
                for name, p in trainer.model.named_parameters():
                    p.register_post_accumulate_grad_hook(
                        lambda q, name=name: grads_at_3.setdefault(name, q.grad.numpy().copy()))

    trainer.events = dl.train.events.Events([*trainer.callbacks, GradsAtStep3()])
    trainer.fit(train, val)
    scalars = _accumulator(tmp_path / "tensorboard")
    history = trainer.history
    # (event files hold float32 values)
    _assert_same([(e.step, e.value) for e in scalars.Scalars("step_loss")],
                 [(s, v) for s, v in zip(history["step_loss"].steps, history["step_loss"].values)
                  if s % 2 == 0], rel=1e-6)
    for name in ("loss", "val_loss", "lr"):
        _assert_same([(e.step, e.value) for e in scalars.Scalars(name)],
                     list(zip(history[name].steps, history[name].values)), rel=1e-6)
    tags = scalars.Tags()["histograms"]
    assert sorted(tags) == sorted([f"weights/{n}" for n, _ in trainer.model.named_parameters()]
                                  + [f"grads/{n}" for n, _ in trainer.model.named_parameters()])
    assert [e.step for e in scalars.Histograms("weights/0.weight")] == [3, 6, 9, 12]
    grad = scalars.Histograms("grads/0.weight")[0].histogram_value
    assert grad.num == grads_at_3["0.weight"].size
    assert grad.sum == pytest.approx(float(grads_at_3["0.weight"].sum()), rel=1e-5, abs=1e-7)
    assert grad.min == pytest.approx(float(grads_at_3["0.weight"].min()), rel=1e-6)
    from tensorboard.plugins.hparams import plugin_data_pb2

    start = plugin_data_pb2.HParamsPluginData.FromString(
        scalars.SummaryMetadata("_hparams_/session_start_info").plugin_data.content)
    hparams = start.session_start_info.hparams
    assert hparams["max_epochs"].number_value == 2 and hparams["lr.0"].number_value == 0.1
    assert hparams["optimizer"].string_value == "SGD"
    assert [(e.step, e.value) for e in scalars.Scalars("final/val_loss")] == \
        [(12, pytest.approx(history["val_loss"].last, rel=1e-6))]


@pytest.fixture
def mlflow_store(tmp_path, monkeypatch):
    """A local MLflow folder store (MLflow 3 asks to be told a folder store is wanted)."""
    pytest.importorskip("mlflow")
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    return (tmp_path / "mlruns").as_uri()


@same_worker_as_mlflow
def test_mlflow_params_metrics_and_artifacts_read_back(mlp, loaders, mlflow_store, tmp_path):
    from mlflow.tracking import MlflowClient

    logger = MLflowLogger(tracking_uri=mlflow_store, experiment="blobs", run_name="first")
    train, val = loaders()
    trainer = _trainer(mlp, [logger], tmp_path, epochs=2)
    trainer.fit(train, val)
    client = MlflowClient(tracking_uri=mlflow_store)
    run = client.get_run(logger.run_id)
    assert run.info.status == "FINISHED" and run.info.run_name == "first"
    assert client.get_experiment(run.info.experiment_id).name == "blobs"
    assert run.data.params["max_epochs"] == "2" and run.data.params["lr.0"] == "0.1"
    assert run.data.params["optimizer"] == "SGD"
    history = trainer.history
    for name in ("step_loss", "loss", "val_loss"):
        logged = sorted((m.step, m.value) for m in client.get_metric_history(run.info.run_id,
                                                                             name))
        _assert_same(logged, list(zip(history[name].steps, history[name].values)), rel=1e-12)
    artifacts = {a.path for a in client.list_artifacts(run.info.run_id)}
    assert artifacts == {"model.safetensors", "report.html"}
    folder = client.download_artifacts(run.info.run_id, "model.safetensors", str(tmp_path))
    restored = dl.load(folder)
    for (name, p), (_, q) in zip(trainer.model.named_parameters(), restored.named_parameters()):
        np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy(), err_msg=name)


@same_worker_as_mlflow
def test_mlflow_marks_a_failed_run(mlp, loaders, mlflow_store, tmp_path):
    from mlflow.tracking import MlflowClient

    class Boom:
        def dlfree_train_epoch_end(self, trainer):
            raise ValueError("boom")

    logger = MLflowLogger(tracking_uri=mlflow_store)
    with pytest.raises(ValueError, match="boom"):
        _trainer(mlp, [logger, Boom()], tmp_path).fit(loaders()[0])
    assert MlflowClient(tracking_uri=mlflow_store).get_run(logger.run_id).info.status == "FAILED"


def test_a_failing_logger_warns_once_and_training_goes_on(mlp, loaders, tmp_path):
    pytest.importorskip("tensorboard")
    logger = TensorBoardLogger()
    train, _ = loaders()
    trainer = _trainer(mlp, [logger], tmp_path, epochs=3)

    class FullDisk:
        def scalars(self, *args):
            raise OSError(28, "No space left on device")

        flush = close = histogram = hparams = scalars

    class Swap:  # after the logger opened its writer, every write to it fails
        def dlfree_train_start(self, trainer):
            logger._writer = FullDisk()

    trainer.events = dl.train.events.Events([logger, Swap()])
    with pytest.warns(LoggerWarning) as caught:
        trainer.fit(train)
    assert len(caught) == 1
    assert str(caught[0].message) == (
        "TensorBoardLogger: writing scalars failed (OSError: [Errno 28] No space left on "
        "device); it logs nothing more this run, and training goes on")
    assert trainer.state.epoch == 3


@same_worker_as_mlflow
def test_an_unreachable_tracking_server_warns_once(mlp, loaders, tmp_path):
    pytest.importorskip("mlflow")
    logger = MLflowLogger(tracking_uri="unknown-scheme://nowhere")
    train, _ = loaders()
    trainer = _trainer(mlp, [logger], tmp_path, epochs=2)
    with pytest.warns(LoggerWarning, match="MLflowLogger: starting the MLflow run failed") \
            as caught:
        trainer.fit(train)
    assert len(caught) == 1 and trainer.state.epoch == 2 and logger.run_id is None


def test_the_loggers_check_their_arguments(monkeypatch):
    with pytest.raises(ValueError, match="every_n_steps must be an integer >= 1 or None"):
        MLflowLogger(every_n_steps=0)
    with pytest.raises(ValueError, match="histogram_every_n_steps must be a whole number"):
        TensorBoardLogger(histogram_every_n_steps=0)
    with pytest.raises(TypeError, match="experiment must be a string"):
        MLflowLogger(experiment=3)
    monkeypatch.setattr(MLflowLogger, "modules", ("no_such_module_here",))
    with pytest.raises(ImportError, match="MLflowLogger needs mlflow-skinny: pip install"):
        MLflowLogger()


def test_flat_params_flattens_the_configuration():
    assert flat_params({"lr": [0.1, 0.01], "opts": {"period": 4}, "amp": None, "n": 3}) == \
        {"lr.0": 0.1, "lr.1": 0.01, "opts.period": 4, "amp": "None", "n": 3}
