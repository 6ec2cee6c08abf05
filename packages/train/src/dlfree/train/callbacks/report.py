"""`HTMLReport`: one self-contained HTML file about a training run (curves as inline SVG, the
final values, timings and the run's configuration), written when training ends or fails."""

from __future__ import annotations

import html
import json
import math
import time
from pathlib import Path

from dlfree import hookimpl
from dlfree.io import atomic_write

# Chart geometry in SVG user units: the plot area sits inside these margins.
WIDTH, HEIGHT = 640, 300
LEFT, RIGHT, TOP, BOTTOM = 70, 20, 40, 46
COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2",
          "#7f7f7f")
# Series this short get a dot on each value, so one or two epochs still show.
MARKED_UP_TO = 40
PREFIXES = ("val_", "step_")

STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 60em; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.7em; text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
svg { display: block; margin: 0.5em 0 1.5em; }
svg text { font-size: 12px; fill: #333; }
.status { font-size: 1.1em; }
"""


def esc(value) -> str:
    """`value` as text safe inside HTML and in quoted attributes."""
    return html.escape(str(value), quote=True)


def fmt(value) -> str:
    """A number as the report shows it (4 significant digits)."""
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def nice_ticks(low: float, high: float, count: int = 5, integer: bool = False) -> list[float]:
    """Evenly spaced round values (steps of 1, 2 or 5 times a power of ten) from at or below
    `low` to at or above `high`, about `count` intervals; whole numbers with `integer`."""
    if high == low:
        pad = 1.0 if integer or low == 0 else abs(low) * 0.1
        low, high = low - pad, high + pad
    raw = (high - low) / count
    power = 10.0 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    if integer:
        step = max(1.0, math.ceil(step))
    first, last = math.floor(low / step), math.ceil(high / step)
    return [i * step for i in range(first, last + 1)]


def tick_label(value: float, step: float) -> str:
    """A tick value written with as many decimals as the spacing `step` needs."""
    if value == 0:
        return "0"
    if not 1e-4 <= abs(value) < 1e6:
        return f"{value:.3g}"
    return f"{value:.{max(0, -math.floor(math.log10(step)))}f}"


def chart_groups(history) -> dict[str, list[str]]:
    """History names grouped into charts: a name's chart is the name without a "val_" or
    "step_" prefix and anything after a "/", so loss, val_loss and step_loss share one, as
    do lr and lr/group1."""
    groups: dict[str, list[str]] = {}
    for name in history.names():
        base = name
        for prefix in PREFIXES:
            if base.startswith(prefix) and len(base) > len(prefix):
                base = base[len(prefix):]
                break
        groups.setdefault(base.split("/")[0] or name, []).append(name)
    return groups


def svg_chart(title: str, series: list[tuple[str, list[int], list[float]]]) -> str:
    """An SVG line chart of `series` ((name, steps, values) each) against the global step:
    one polyline per series through each of its finite values, axes with ticks and labels,
    and a legend."""
    finite = [[(s, v) for s, v in zip(steps, values) if math.isfinite(v)]
              for _, steps, values in series]
    xs = [s for points in finite for s, _ in points] or [0]
    ys = [v for points in finite for _, v in points] or [0.0]
    # the y axis extends to round values; the x axis spans the logged steps exactly
    x_low, x_high = (min(xs), max(xs)) if min(xs) < max(xs) else (min(xs) - 1, max(xs) + 1)
    x_round = nice_ticks(x_low, x_high, integer=True)
    x_ticks = [tick for tick in x_round if x_low <= tick <= x_high]
    y_ticks = nice_ticks(min(ys), max(ys))
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def x_of(step):
        return LEFT + (step - x_low) / (x_high - x_low) * plot_w

    def y_of(value):
        return TOP + plot_h - (value - y_ticks[0]) / (y_ticks[-1] - y_ticks[0]) * plot_h

    parts = [f'<svg width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" '
             f'role="img" aria-label="{esc(title)}">',
             f'<text x="{LEFT}" y="16" font-weight="bold">{esc(title)}</text>']
    for tick in y_ticks:
        y = y_of(tick)
        parts.append(f'<line x1="{LEFT}" y1="{y:.1f}" x2="{WIDTH - RIGHT}" y2="{y:.1f}" '
                     'stroke="#eee"/>')
        parts.append(f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">'
                     f'{esc(tick_label(tick, y_ticks[1] - y_ticks[0]))}</text>')
    for tick in x_ticks:
        x = x_of(tick)
        parts.append(f'<line x1="{x:.1f}" y1="{TOP + plot_h}" x2="{x:.1f}" '
                     f'y2="{TOP + plot_h + 5}" stroke="#333"/>')
        parts.append(f'<text x="{x:.1f}" y="{TOP + plot_h + 18}" text-anchor="middle">'
                     f'{esc(tick_label(tick, x_round[1] - x_round[0]))}</text>')
    parts.append(f'<path d="M{LEFT},{TOP}V{TOP + plot_h}H{WIDTH - RIGHT}" fill="none" '
                 'stroke="#333"/>')
    parts.append(f'<text x="{LEFT + plot_w / 2:.1f}" y="{HEIGHT - 6}" text-anchor="middle">'
                 'step</text>')
    parts.append(f'<text transform="translate(14 {TOP + plot_h / 2:.1f}) rotate(-90)" '
                 f'text-anchor="middle">{esc(title)}</text>')
    legend_x = LEFT + 8
    for i, ((name, _, values), points) in enumerate(zip(series, finite)):
        color = COLORS[i % len(COLORS)]
        coords = [(x_of(s), y_of(v)) for s, v in points]
        parts.append(f'<polyline data-series="{esc(name)}" fill="none" stroke="{color}" '
                     'stroke-width="1.5" points="'
                     + " ".join(f"{x:.1f},{y:.1f}" for x, y in coords) + '"/>')
        if len(coords) <= MARKED_UP_TO:
            parts.extend(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="2.5" fill="{color}"/>'
                         for x, y in coords)
        label = name if len(points) == len(values) else \
            f"{name} ({len(values) - len(points)} non-finite values not drawn)"
        parts.append(f'<line x1="{legend_x}" y1="28" x2="{legend_x + 16}" y2="28" '
                     f'stroke="{color}" stroke-width="2"/>')
        parts.append(f'<text x="{legend_x + 20}" y="32">{esc(label)}</text>')
        legend_x += 32 + 7 * len(label)
    parts.append("</svg>")
    return "\n".join(parts)


def _table(header: tuple[str, ...], rows: list[tuple]) -> str:
    head = "".join(f"<th>{esc(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(
        f'<td class="num">{esc(fmt(cell))}</td>' if isinstance(cell, int | float) else
        f"<td>{esc(cell)}</td>" for cell in row) + "</tr>\n" for row in rows)
    return f"<table>\n<tr>{head}</tr>\n{body}</table>"


def render_report(history, config: dict, timings: dict, *, status: str, total_seconds: float,
                  epoch_seconds: list[float], position: dict | None = None,
                  title: str = "Training report") -> str:
    """The report as an HTML document: `history` (a History) drawn as charts and its last
    values in a table, the run's `config`, the total and per-epoch time, and `timings` (time
    by phase) with each phase's share of the total."""
    values = [(name, len(history[name]), history[name].last, min(history[name]),
               max(history[name])) for name in history.names() if len(history[name])]
    charts = [svg_chart(base, [(name, history[name].steps, history[name].values)
                               for name in names])
              for base, names in chart_groups(history).items()]
    config_rows = [(key, value if isinstance(value, str) else json.dumps(value, default=str))
                   for key, value in config.items()]
    phases = [(phase, round(seconds, 4),
               f"{100 * seconds / total_seconds:.1f} %" if total_seconds > 0 else "")
              for phase, seconds in timings.items()]
    where = "".join(f" · {esc(key)} {esc(value)}" for key, value in (position or {}).items())
    written = time.strftime("%Y-%m-%d %H:%M:%S")
    sections = [
        f'<h1>{esc(title)}</h1>',
        f'<p class="status">{esc(status)}{where} · written {esc(written)}</p>',
        "<h2>Final values</h2>",
        _table(("name", "values logged", "last", "min", "max"), values)
        if values else "<p>Nothing was logged.</p>",
        "<h2>Curves</h2>", *charts,
        "<h2>Timings</h2>",
        _table(("what", "seconds"), [("total", round(total_seconds, 4))]
               + [(f"epoch {i + 1}", round(s, 4)) for i, s in enumerate(epoch_seconds)]),
        _table(("phase", "seconds", "share of total"), phases) if phases else "",
        "<h2>Run configuration</h2>",
        _table(("setting", "value"), config_rows) if config_rows else "<p>None given.</p>",
    ]
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f"<title>{esc(title)}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n"
            + "\n".join(s for s in sections if s) + "\n</body>\n</html>\n")


class HTMLReport:
    """Writes a self-contained HTML report (no external files, scripts or fonts) to `path`
    (default: `report.html` in the Trainer's run_dir), atomically, when training ends, fails
    or is interrupted: a chart per logged quantity (train, validation and per-step values
    of it together), the last value of everything logged, the run's configuration
    (`trainer.config`), and the time taken in total, per epoch (training and validation) and
    per phase (`trainer.timings`). Its state is kept in training checkpoints, so the times
    of a resumed run include the part before the interruption."""

    rank_zero_only = True  # a distributed run writes it from rank 0 alone

    def __init__(self, path=None, title: str = "Training report"):
        if not isinstance(title, str):
            raise TypeError(f"HTMLReport: title must be a string, got {type(title).__name__}")
        self.path = None if path is None else Path(path)
        self.title = title
        self.epoch_seconds: list[float] = []
        self._earlier_seconds = 0.0  # spent in runs this one resumed from
        self._started: float | None = None  # when this fit began; None before it has
        self._epoch_started = 0.0

    @hookimpl
    def dlfree_train_start(self, trainer):
        if self.path is None:
            if trainer.run_dir is None:
                raise ValueError("HTMLReport: give path=, or a Trainer run_dir, to say where "
                                 "the report goes")
            self.path = Path(trainer.run_dir) / "report.html"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._started = self._epoch_started = time.perf_counter()

    @hookimpl
    def dlfree_train_epoch_start(self, trainer):
        self._epoch_started = time.perf_counter()

    @hookimpl
    def dlfree_train_epoch_end(self, trainer, epoch):
        del self.epoch_seconds[epoch:]  # a resumed epoch replaces what was counted of it
        self.epoch_seconds.extend([0.0] * (epoch + 1 - len(self.epoch_seconds)))
        self.epoch_seconds[epoch] = time.perf_counter() - self._epoch_started

    @hookimpl
    def dlfree_train_end(self, trainer):
        self.write(trainer, "Training finished")

    @hookimpl
    def dlfree_train_exception(self, trainer, exception):
        if self._started is None:  # failed before this report's train_start: nothing to say
            return
        reason = "interrupted (Ctrl-C)" if isinstance(exception, KeyboardInterrupt) else \
            f"stopped by {type(exception).__name__}: {exception}"
        self.write(trainer, f"Training {reason}")

    def write(self, trainer, status: str) -> Path:
        """Write the report about `trainer` now, headed by `status`; returns its path."""
        if self._started is None:
            raise RuntimeError("HTMLReport.write: training has not started, so there is "
                               "nothing to report yet")
        total = self._seconds()
        state = trainer.state
        position = {"epochs done": state.epoch, "global step": state.global_step}
        document = render_report(trainer.history, dict(trainer.config or {}),
                                 dict(trainer.timings or {}), status=status,
                                 total_seconds=total, epoch_seconds=self.epoch_seconds,
                                 position=position, title=self.title)
        return atomic_write(self.path, document.encode("utf-8"))

    def _seconds(self) -> float:
        """Time spent training so far, runs this one resumed from included."""
        if self._started is None:
            return self._earlier_seconds
        return self._earlier_seconds + time.perf_counter() - self._started

    def state_dict(self) -> dict:
        return {"epoch_seconds": list(self.epoch_seconds),
                "seconds": self._seconds()}

    def load_state_dict(self, state: dict) -> None:
        self.epoch_seconds = [float(s) for s in state["epoch_seconds"]]
        self._earlier_seconds = float(state["seconds"])
