"""The example programs run, and do what their docstrings say, with fewer steps."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def run_example(name: str, *args: str) -> str:
    """Run an example in a fresh interpreter (warnings are errors there too); its stdout."""
    result = subprocess.run([sys.executable, "-W", "error", str(EXAMPLES / name), *args],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_fit_two_layer_net_loss_falls_and_it_beats_chance():
    out = run_example("fit_two_layer_net.py", "--steps", "300")
    losses = [float(v) for v in re.findall(r"loss (\d+\.\d+)", out)]
    accuracy = float(re.search(r"held-out accuracy (\d+\.\d+)%", out).group(1)) / 100
    assert len(losses) >= 5, out
    assert losses[-1] < 0.8 * losses[0], out
    assert accuracy > 0.5, out  # three classes: guessing gets 1/3
