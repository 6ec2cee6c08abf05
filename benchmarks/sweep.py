"""`make bench-sweep` (run.py --sweep): how the cost of a step grows with its size.

Each swept workload is timed in dl.free and in PyTorch at a range of sizes (the MLP and
the ResNet-20 step over the batch, the attention block over the sequence length), each
size exactly as run.py times a workload (a worker process per framework, alternating
rounds), with the workload's size constant overridden in the workers. The time per sample
(a sample is an input image or row, or one sequence of the attention block's batch) is
written per size to benchmarks/results/sweep-<timestamp>.json and drawn, one chart per
workload with both frameworks' curves, on sweep-<timestamp>.html (an SVG per chart);
sweep-latest.json and sweep-latest.html are the newest. A change that makes dl.free
scale worse than PyTorch shows as curves that part.

    python benchmarks/run.py --sweep [--quick] [--only WORKLOAD ...]
"""

from __future__ import annotations

import html
import json
import math
import sys
import time
from dataclasses import dataclass

import environment
import run
from workloads import WORKLOADS
from workloads.plan import Plan


@dataclass(frozen=True)
class Sweep:
    """The workload module constant to vary, what it means, and its values."""

    setting: str
    label: str
    sizes: tuple


SWEEPS = {
    "mlp_step": Sweep("BATCH", "batch size", (16, 32, 64, 128, 256, 512)),
    "resnet20_step": Sweep("BATCH", "batch size", (16, 32, 64, 128, 256, 512)),
    "attention_block": Sweep("LENGTH", "sequence length", (64, 128, 256, 512, 1024)),
}
# One plan for every size: the largest sizes take seconds per step.
PLANS = {"full": Plan(rounds=5, iterations=3, warmup=2),
         "quick": Plan(rounds=2, iterations=1, warmup=1)}
REFERENCE = "torch"
COLOURS = {"dlfree": "#c0392b", REFERENCE: "#2c6fbb"}


def sizes(sweep: Sweep, mode: str) -> tuple:
    """All of the sweep's sizes, or every other one (and the largest) in quick mode."""
    if mode == "full":
        return sweep.sizes
    return tuple(dict.fromkeys(sweep.sizes[::2] + sweep.sizes[-1:]))


def measure_sweep(name: str, sweep: Sweep, mode: str) -> dict:
    """Time `name` at each size in dl.free and PyTorch; per size the medians, the time per
    sample and the ratio, as JSON-ready data."""
    workload = WORKLOADS[name]
    points = []
    for size in sizes(sweep, mode):
        settings = {sweep.setting: size}
        samples = size if sweep.setting == "BATCH" else workload.BATCH
        result = run.measure(workload, mode, settings, PLANS[mode], references=(REFERENCE,))
        frameworks = {fw: {"median_s": t["median_s"], "per_sample_s": t["median_s"] / samples}
                      for fw, t in result["frameworks"].items()}
        points.append({"size": size, "samples": samples, "frameworks": frameworks,
                       "skipped": result["skipped"],
                       "ratio": result["ratios"].get(REFERENCE, {}).get("median")})
        line = "  ".join(f"{fw} {f['per_sample_s'] * 1e3:.3f} ms/sample"
                         for fw, f in frameworks.items())
        ratio = points[-1]["ratio"]
        print(f"  {sweep.label} {size}: {line}"
              + (f"  dlfree/{REFERENCE} {ratio:.2f}x" if ratio else ""), flush=True)
    return {"description": workload.DESCRIPTION, "setting": sweep.setting,
            "label": sweep.label, "plan": vars(PLANS[mode]), "points": points}


def _ticks(top: float, count: int = 5) -> list:
    """Round tick values from 0 to at least `top`."""
    raw = top / count
    step = 10 ** math.floor(math.log10(raw)) if raw > 0 else 1.0
    step = next(s * step for s in (1, 2, 2.5, 5, 10) if s * step >= raw)
    return [i * step for i in range(int(math.ceil(top / step)) + 1)]


def chart(name: str, sweep: dict, width: int = 760, height: int = 380) -> str:
    """One workload's curves as an SVG: time per sample (ms) against size (log scale)."""
    left, right, top, bottom = 70, 130, 44, 50
    points = sweep["points"]
    frameworks = list(dict.fromkeys(fw for p in points for fw in p["frameworks"]))
    values = [p["frameworks"][fw]["per_sample_s"] * 1e3 for p in points
              for fw in p["frameworks"]]
    y_ticks = _ticks(max(values) * 1.05)
    logs = [math.log2(p["size"]) for p in points]
    span = (max(logs) - min(logs)) or 1.0

    def x(size):
        return left + (math.log2(size) - min(logs)) / span * (width - left - right)

    def y(ms):
        return height - bottom - ms / y_ticks[-1] * (height - top - bottom)

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" role="img" aria-label="{html.escape(name)}">',
             f'<text x="{left}" y="16" font-size="14" font-weight="bold">'
             f'{html.escape(name)}, over the {html.escape(sweep["label"])}</text>'
             f'<text x="{left}" y="30" font-size="11" fill="#555">at its default size: '
             f'{html.escape(sweep["description"])}</text>']
    for tick in y_ticks:
        parts.append(f'<line x1="{left}" x2="{width - right}" y1="{y(tick):.1f}" '
                     f'y2="{y(tick):.1f}" stroke="#ddd"/>'
                     f'<text x="{left - 6}" y="{y(tick) + 4:.1f}" font-size="11" '
                     f'text-anchor="end">{tick:g}</text>')
    for p in points:
        parts.append(f'<text x="{x(p["size"]):.1f}" y="{height - bottom + 16}" font-size="11" '
                     f'text-anchor="middle">{p["size"]}</text>')
    parts.append(f'<text x="{(left + width - right) / 2}" y="{height - 12}" font-size="12" '
                 f'text-anchor="middle">{html.escape(sweep["label"])} (log scale)</text>'
                 f'<text x="16" y="{(top + height - bottom) / 2}" font-size="12" '
                 f'text-anchor="middle" transform="rotate(-90 16 {(top + height - bottom) / 2})"'
                 f'>ms per sample</text>')
    for i, fw in enumerate(frameworks):
        colour = COLOURS.get(fw, "#555")
        xy = [(x(p["size"]), y(p["frameworks"][fw]["per_sample_s"] * 1e3)) for p in points
              if fw in p["frameworks"]]
        parts.append(f'<polyline class="curve" data-framework="{fw}" fill="none" '
                     f'stroke="{colour}" stroke-width="2" points="'
                     + " ".join(f"{a:.1f},{b:.1f}" for a, b in xy) + '"/>')
        parts += [f'<circle cx="{a:.1f}" cy="{b:.1f}" r="3" fill="{colour}"/>' for a, b in xy]
        parts.append(f'<line x1="{width - right + 14}" x2="{width - right + 34}" '
                     f'y1="{top + 14 + 18 * i}" y2="{top + 14 + 18 * i}" stroke="{colour}" '
                     f'stroke-width="2"/><text x="{width - right + 40}" y="{top + 18 + 18 * i}"'
                     f' font-size="12">{fw}</text>')
    parts.append("</svg>")
    return "\n".join(parts)


def table(sweep: dict) -> str:
    """The numbers behind a chart, as an HTML table."""
    frameworks = list(dict.fromkeys(fw for p in sweep["points"] for fw in p["frameworks"]))
    head = "".join(f"<th>{fw} ms/sample</th>" for fw in frameworks)
    rows = []
    for p in sweep["points"]:
        cells = "".join(f"<td>{p['frameworks'][fw]['per_sample_s'] * 1e3:.4f}</td>"
                        if fw in p["frameworks"] else "<td>-</td>" for fw in frameworks)
        ratio = f"{p['ratio']:.2f}x" if p["ratio"] else "-"
        rows.append(f"<tr><td>{p['size']}</td>{cells}<td>{ratio}</td></tr>")
    return (f"<table><tr><th>{html.escape(sweep['label'])}</th>{head}"
            f"<th>dlfree/{REFERENCE}</th></tr>" + "".join(rows) + "</table>")


def page(results: dict) -> str:
    """The HTML page: the machine, then per workload its chart and its table."""
    machine = html.escape(run.format_machine(results["machine"]))
    body = "".join(f"<section>{chart(name, sweep)}{table(sweep)}</section>"
                   for name, sweep in results["sweeps"].items())
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>dl.free scaling sweep {results['started']}</title><style>"
            "body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;"
            "margin:0.5em 0 2em}td,th{border:1px solid #ccc;padding:2px 8px;"
            "text-align:right}</style></head><body>"
            f"<h1>How cost grows: dl.free and {REFERENCE}</h1>"
            f"<p>{results['mode']} sweep, started {results['started']}: <code>"
            f"{html.escape(results['command'])}</code></p><pre>{machine}</pre>"
            f"{body}</body></html>\n")


def write(results: dict) -> tuple:
    """sweep-<timestamp>.json and .html, and the sweep-latest copies; the two paths."""
    run.RESULTS.mkdir(exist_ok=True)
    text, document = json.dumps(results, indent=2) + "\n", page(results)
    stem = run.RESULTS / f"sweep-{results['started']}"
    for path, content in ((stem.with_suffix(".json"), text),
                          (run.RESULTS / "sweep-latest.json", text),
                          (stem.with_suffix(".html"), document),
                          (run.RESULTS / "sweep-latest.html", document)):
        path.write_text(content)
    return stem.with_suffix(".json"), stem.with_suffix(".html")


def main(mode: str, only: list | None = None) -> int:
    """Sweep the workloads in `only` (all swept ones by default)."""
    names = list(dict.fromkeys(only or SWEEPS))
    unknown = [n for n in names if n not in SWEEPS]
    if unknown:
        print(f"run.py --sweep: {', '.join(unknown)} cannot be swept; the swept workloads "
              f"are {', '.join(SWEEPS)}", file=sys.stderr)
        return 2
    results = {"started": time.strftime("%Y%m%d-%H%M%S"), "command": " ".join(sys.argv),
               "mode": mode, "machine": environment.machine(), "sweeps": {}}
    print(run.format_machine(results["machine"]) + "\n", flush=True)
    for name in names:
        print(f"{name} over {SWEEPS[name].label}:", flush=True)
        results["sweeps"][name] = measure_sweep(name, SWEEPS[name], mode)
    data, drawn = write(results)
    print(f"wrote {data}\nwrote {drawn}")
    return 0
