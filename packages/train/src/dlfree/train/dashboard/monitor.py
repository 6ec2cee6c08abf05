"""`Monitor`: a run's live dashboard for any training loop. It keeps a History, turns what is
logged into events on an EventLog, serves them (the page and a Server-Sent Events stream)
and samples the machine's resources; `finish()` ends it, and the frozen page, the same
page with every event written into it, is the run's report."""

from __future__ import annotations

import numbers
import sys
import time
from pathlib import Path

from dlfree.io import atomic_write

from ..history import History
from ..resources import NAMES as RESOURCE_NAMES
from ..resources import ResourceSampler, log_samples
from .events import EventLog, strict
from .page import render_page
from .server import DashboardServer

# The least time in seconds between two progress events: a page redraws no faster anyway.
PROGRESS_EVERY_S = 0.25


class Monitor:
    """A live dashboard: `monitor.log(step, loss=..., lr=...)` as a loop runs,
    `monitor.finish()` at its end (or use it as a context manager).

    - With `serve` (the default) it serves the page on `host`:`port` (port 0: a free one)
      from a daemon thread and prints the URL once, to `file` (default: standard output).
      Only loopback unless `host` says otherwise (which warns). A page opened late gets
      every past event at once; a reconnecting page resumes after the last one it saw.
    - With `resources`, a timer thread samples CPU, memory, and on the GPU backend the
      device memory and utilisation every `interval` seconds (see `ResourceSampler`; or
      pass one, set up as wanted); the samples go into the history under
      `dlfree.train.resources.NAMES` and onto the page.
    - `total_steps` (when known) gives the ETA; `config` (JSON-able) is shown on the page.
    - `history` is where values are recorded (a new History by default); `export_csv` and
      `export_jsonl` write it, `write_report(path)` the frozen page.
    """

    def __init__(self, *, port: int = 0, host: str = "127.0.0.1", title: str = "Training run",
                 config: dict | None = None, total_steps: int | None = None,
                 resources: bool | ResourceSampler = True, interval: float = 1.0,
                 serve: bool = True, history: History | None = None, file=None):
        if not isinstance(title, str):
            raise TypeError(f"Monitor: title must be a string, got {type(title).__name__}")
        if config is not None and not isinstance(config, dict):
            raise TypeError(f"Monitor: config must be a dict of settings, got "
                            f"{type(config).__name__}")
        if total_steps is not None and (isinstance(total_steps, bool) or not isinstance(
                total_steps, numbers.Integral) or total_steps < 1):
            raise ValueError(f"Monitor: total_steps must be a whole number >= 1 or None, got "
                             f"{total_steps!r}")
        self.title = title
        self.total_steps = total_steps
        self.history = History() if history is None else history
        self.events = EventLog()
        self._published: dict[str, int] = {}  # values of each series already sent as events
        self._started = time.perf_counter()
        self._first_step: int | None = None
        self._last_progress = -PROGRESS_EVERY_S
        self._progress_fields: dict = {}
        self.finished = False
        self.events.append("config", title=title, config=strict(dict(config or {})))
        self._server = DashboardServer(self.events, self._live_page, host, port) \
            if serve else None
        self.url = None
        if self._server is not None:
            self.url = self._server.start()
            print(f"dashboard: {self.url}", file=sys.stdout if file is None else file,
                  flush=True)
        self._sampler = None
        if resources:
            self._sampler = resources if isinstance(resources, ResourceSampler) else \
                ResourceSampler(interval)
            self._sampler.on_sample = self._on_sample
            self._sampler.start()

    # ------------------------------------------------------------------ what a loop calls
    def log(self, step: int, **values) -> None:
        """Record `values` (numbers or one-element tensors, by name) at `step` and send
        them, with the progress, to the page."""
        if isinstance(step, bool) or not isinstance(step, numbers.Integral):
            raise TypeError(f"Monitor.log: step must be a whole number, got {step!r}")
        self._check_running("log")
        for name, value in values.items():
            self.history.log(name, value, int(step))
        if self._first_step is None:
            self._first_step = int(step)
        self.sync()
        done = int(step) - self._first_step
        left = None if self.total_steps is None else self.total_steps - int(step)
        self.progress(step=int(step), total_steps=self.total_steps,
                      **self.pace(done, left, "steps"))

    def note(self, text: str) -> None:
        """Add a line to the page's event log (a checkpoint saved, an lr change, ...)."""
        self._check_running("note")
        self.events.append("note", text=str(text), t=round(self.elapsed(), 3))

    def finish(self, status: str = "finished") -> None:
        """End the run: a last resource sample, the `status` line on the page, then the
        server stops (open pages keep what they were sent). Calling it again does nothing."""
        if self.finished:
            return
        if self._sampler is not None:
            self._sampler.stop()
            self._sampler.sample_now()
            self.take_samples()
        self.sync()
        self.progress(force=True)
        self.events.append("end", status=str(status), t=round(self.elapsed(), 3))
        self.finished = True
        self.events.close()
        if self._server is not None:
            self._server.stop()

    def __enter__(self) -> Monitor:
        return self

    def __exit__(self, kind, error, traceback) -> None:
        self.finish("finished" if error is None else
                    f"stopped by {kind.__name__}: {error}")

    # ------------------------------------------------------------------ export
    def export_csv(self, path) -> Path:
        """Every value recorded (metrics and resources) as CSV; see `History.to_csv`."""
        self.take_samples()
        return self.history.to_csv(path)

    def export_jsonl(self, path) -> Path:
        """Every value recorded as JSON Lines; see `History.to_jsonl`."""
        self.take_samples()
        return self.history.to_jsonl(path)

    def write_report(self, path) -> Path:
        """The page frozen: one self-contained HTML file holding every event so far, which
        draws what the live page showed with no server (written atomically)."""
        page = render_page(self.title, frozen=self.events.after(0))
        return atomic_write(Path(path), page.encode("utf-8"))

    # ------------------------------------------------------------------ for the callback
    def elapsed(self) -> float:
        return time.perf_counter() - self._started

    def sync(self) -> None:
        """Send each value the history got since the last call as a point event (values
        from before this monitor, a resumed run's, included), then take in the resource
        samples."""
        history, published = self.history, self._published
        for name in history.names():
            series = history[name]
            done = published.get(name, 0)
            if done == len(series):
                continue
            for step, value in zip(series.steps[done:], series.values[done:]):
                self.events.point(name, step, value)
            published[name] = len(series)
        self.take_samples()

    def sample_resources(self) -> None:
        """Take a resource sample now (when resources are sampled): the Dashboard does at
        each epoch's end, so the history, and the checkpoint written then, holds at least
        one sample per epoch however short the epoch is."""
        if self._sampler is not None:
            self._sampler.sample_now()

    def take_samples(self) -> None:
        """Move the resource samples taken since the last call into the history; they are
        not sent again as points, having reached the page as resource events."""
        if self._sampler is None:
            return
        samples = self._sampler.drain()
        log_samples(self.history, samples)
        for _, values in samples:
            for key in values:
                name = RESOURCE_NAMES[key]
                self._published[name] = self._published.get(name, 0) + 1

    def pace(self, done: int, left: int | None, unit: str, samples: int | None = None) -> dict:
        """Throughput and ETA from `done` units (and `samples` examples) since the start and
        `left` units still to go."""
        elapsed = self.elapsed()
        rate = done / elapsed if elapsed > 0 and done > 0 else None
        eta = left / rate if rate and left is not None else None
        return {"elapsed": round(elapsed, 3), "rate": rate, "unit": unit,
                "eta": None if eta is None else max(0.0, eta),
                "samples_rate": samples / elapsed if rate and samples else None}

    def progress(self, force: bool = False, **fields) -> None:
        """Send the run's position (`fields`: epoch, step, eta, ...) to the page, at most
        every PROGRESS_EVERY_S seconds unless `force`; the last fields are remembered."""
        if fields:
            self._progress_fields = fields
        now = time.perf_counter()
        if (force or now - self._last_progress >= PROGRESS_EVERY_S) and \
                self._progress_fields:
            self._last_progress = now
            self.events.append("progress", **self._progress_fields)

    def _on_sample(self, step: int, values: dict) -> None:
        if not self.events.closed:
            self.events.append("resources", step=step, values=values,
                               t=round(self.elapsed(), 3))

    def _check_running(self, what: str) -> None:
        if self.finished:
            raise RuntimeError(f"Monitor.{what}: the monitor has finished; make a new one for "
                               "another run")

    def _live_page(self) -> str:
        return render_page(self.title)
