"""`MLflowLogger`: the run as an MLflow run: the configuration as params, the values as
metrics per step, and at the end the model file and the HTML report as artifacts."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from dlfree import hookimpl

from .external import ExternalLogger, flat_params
from .report import render_report

# MLflow refuses longer param values.
PARAM_LIMIT = 6000
# The run's end status in MLflow, by how training ended.
FINISHED, FAILED, KILLED = "FINISHED", "FAILED", "KILLED"


class MLflowLogger(ExternalLogger):
    """Logs the run to MLflow through its client (`mlflow-skinny` is enough):

    - at the start, a run in `experiment` (created when missing) named `run_name`, with the
      Trainer's configuration as params (flattened: "lr.0", ...);
    - the per-step values ("step_loss", ...) every `every_n_steps` optimizer steps (None:
      none) and each epoch's values at the epoch's last step, as metrics with that step;
    - at the end, with `log_model`, the trained model as a model file (`dl.save`) and an
      HTML report of the run as artifacts; the run is marked FINISHED, FAILED or KILLED.

    `tracking_uri` is where the runs go (MLflow's own default, or MLFLOW_TRACKING_URI,
    when None): a tracking server, a database, or a local folder as a `file:` URI (MLflow
    3 asks for MLFLOW_ALLOW_FILE_STORE=true before it writes a folder store). `run_id` is
    the run's once training started. A failure of MLflow (an unreachable server, a full
    disk) is reported once (`LoggerWarning`) and training goes on.
    """

    modules = ("mlflow",)
    install = "mlflow-skinny"

    def __init__(self, tracking_uri: str | None = None, experiment: str = "dlfree",
                 run_name: str | None = None, every_n_steps: int | None = 1,
                 log_model: bool = True):
        super().__init__(every_n_steps)
        for name, value in (("experiment", experiment), ("tracking_uri", tracking_uri),
                            ("run_name", run_name)):
            if value is not None and not isinstance(value, str):
                raise TypeError(f"MLflowLogger: {name} must be a string, got "
                                f"{type(value).__name__}")
        self.tracking_uri = tracking_uri
        self.experiment = experiment
        self.run_name = run_name
        self.log_model = bool(log_model)
        self.run_id: str | None = None
        self._client = None
        self._started = 0.0

    @hookimpl
    def dlfree_train_start(self, trainer):
        self.failure, self._last_step, self.run_id = None, trainer.state.global_step, None
        self._started = time.perf_counter()
        self.guarded("starting the MLflow run", self._start, trainer)

    def _start(self, trainer) -> None:
        from mlflow.entities import Param
        from mlflow.tracking import MlflowClient

        self._client = MlflowClient(tracking_uri=self.tracking_uri)
        found = self._client.get_experiment_by_name(self.experiment)
        experiment_id = found.experiment_id if found is not None else \
            self._client.create_experiment(self.experiment)
        self.run_id = self._client.create_run(experiment_id, run_name=self.run_name).info.run_id
        params = [Param(k, str(v)[:PARAM_LIMIT])
                  for k, v in flat_params(dict(trainer.config or {})).items()]
        self._client.log_batch(self.run_id, params=params)

    @hookimpl
    def dlfree_train_batch_end(self, trainer):
        values = self.due_step_values(trainer)
        if values and self.run_id is not None:
            self.guarded("logging metrics", self._metrics, values, trainer.state.global_step)

    @hookimpl
    def dlfree_train_epoch_end(self, trainer, logs):
        if self.run_id is not None:
            self.guarded("logging metrics", self._metrics, dict(logs),
                         trainer.state.global_step)

    def _metrics(self, values: dict, step: int) -> None:
        from mlflow.entities import Metric

        stamp = int(time.time() * 1000)
        self._client.log_batch(self.run_id, metrics=[
            Metric(name, float(value), stamp, step) for name, value in values.items()])

    @hookimpl
    def dlfree_train_end(self, trainer):
        if self.run_id is not None and self.log_model:
            self.guarded("logging the model and report", self._artifacts, trainer)
        self._end(FINISHED)

    @hookimpl
    def dlfree_train_exception(self, trainer, exception):
        self._end(KILLED if isinstance(exception, KeyboardInterrupt) else FAILED)

    def _artifacts(self, trainer) -> None:
        from dlfree.io import save

        with tempfile.TemporaryDirectory(prefix="dlfree-mlflow-") as folder:
            model = Path(folder) / "model.safetensors"
            save(trainer.model, model)
            report = Path(folder) / "report.html"
            report.write_text(render_report(
                trainer.history, dict(trainer.config or {}), dict(trainer.timings or {}),
                status="Training finished", total_seconds=time.perf_counter() - self._started,
                epoch_seconds=[]), encoding="utf-8")
            self._client.log_artifact(self.run_id, str(model))
            self._client.log_artifact(self.run_id, str(report))

    def _end(self, status: str) -> None:
        if self.run_id is not None:
            self.guarded("ending the MLflow run", self._client.set_terminated, self.run_id,
                         status)
