"""The example programs run, and do what their docstrings say, with fewer steps."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import dlfree as dl

import numpy as np
import pytest

from support.idx import learnable_digits, write_mnist

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _default_sigint() -> None:
    """In the example's process before it starts: Ctrl-C as a terminal delivers it. A
    launcher that runs the suite in the background (bash does for `cmd &`) leaves SIGINT
    ignored in pytest-xdist's workers, and an example inheriting that could not be
    interrupted, which the Ctrl-C examples test."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def run_example(name: str, *args: str, cwd: Path | None = None) -> str:
    """Run an example in a fresh interpreter (warnings are errors there too); its stdout.

    One BLAS thread: under pytest-xdist the workers already fill the cores, and OpenBLAS
    threads competing for them make small matrix products many times slower."""
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
    result = subprocess.run([sys.executable, "-W", "error", str(EXAMPLES / name), *args],
                            capture_output=True, text=True, timeout=120, cwd=cwd, env=env,
                            preexec_fn=_default_sigint)
    assert result.returncode == 0, result.stderr
    return result.stdout


def numbers(pattern: str, text: str) -> list[float]:
    """Every match of `pattern`'s one group in `text`, as floats."""
    return [float(v) for v in re.findall(pattern, text)]


def test_fit_two_layer_net_loss_falls_and_it_beats_chance():
    out = run_example("fit_two_layer_net.py", "--steps", "300")
    losses = [float(v) for v in re.findall(r"loss (\d+\.\d+)", out)]
    accuracy = float(re.search(r"held-out accuracy (\d+\.\d+)%", out).group(1)) / 100
    assert len(losses) >= 5, out
    assert losses[-1] < 0.8 * losses[0], out
    assert accuracy > 0.5, out  # three classes: guessing gets 1/3


def test_train_digits_reaches_97_percent_and_writes_model_and_report(tmp_path):
    out = run_example("train_digits.py", "--epochs", "3", "--out", "run", cwd=tmp_path)
    accuracy = numbers(r"held-out accuracy (\d+\.\d)%", out)
    assert accuracy and accuracy[0] >= 97.0, out  # the demo's acceptance bar, in 3 epochs
    model = re.search(r"model:\s+(\S+)", out).group(1)
    report = re.search(r"report:\s+(\S+)", out).group(1)
    assert (tmp_path / model).stat().st_size > 0
    assert (tmp_path / "run/checkpoints/best.safetensors").exists()
    html = (tmp_path / report).read_text()
    assert "<svg" in html and "val_accuracy" in html
    # the live dashboard's URL is printed once, as training starts; its frozen page after
    assert len(re.findall(r"^dashboard: http://127\.0\.0\.1:\d+/$", out, re.M)) == 1, out
    frozen = re.search(r"dashboard, frozen:\s+(\S+)", out).group(1)
    assert 'id="frozen-events"' in (tmp_path / frozen).read_text()


def test_train_digits_own_accuracy_count_matches_dlfree_metrics(rng):
    """The demo's fallback metric, for environments without dlfree-metrics."""
    from dlfree.metrics import Accuracy

    spec = importlib.util.spec_from_file_location("train_digits", EXAMPLES / "train_digits.py")
    train_digits = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(train_digits)
    counter, reference = train_digits.CountCorrect(), Accuracy(task="multiclass", num_classes=10)
    for metric in (counter, reference):
        metric.reset()
    for _ in range(3):
        scores = dl.tensor(rng.normal(size=(50, 10)).astype(np.float32))
        labels = dl.tensor(rng.integers(10, size=50))
        counter.update(scores, labels)
        reference.update(scores, labels)
    # float32 rounding apart: a count off by one would differ by 1/150
    assert counter.compute() == pytest.approx(float(reference.compute()), abs=1e-6)


def test_transfer_freezes_the_backbone_and_the_new_head_learns():
    out = run_example("transfer.py", "--pretrain-epochs", "2", "--head-epochs", "2",
                      "--finetune-epochs", "1")
    pretrained, head, finetuned = numbers(r"accuracy on held-out \d-\d (\d+\.\d)%", out)
    assert "backbone unchanged: True" in out, out
    assert pretrained > 90, out
    assert head > 60, out  # five classes: guessing gets 20 %
    assert finetuned > head, out


def test_vae_elbo_rises():
    out = run_example("vae.py", "--epochs", "5")
    untrained = numbers(r"untrained\s+held-out ELBO\s+(-?\d+\.\d+)", out)[0]
    held_out = numbers(r"held-out ELBO\s+(-?\d+\.\d+)\n", out)
    assert len(held_out) == 6, out  # the untrained model, then every epoch
    assert held_out[-1] > untrained + 0.5, out  # nats per point


def test_gan_distance_falls():
    out = run_example("gan.py", "--epochs", "3")
    distances = numbers(r"energy distance (\d+\.\d+)", out)
    assert len(distances) == 4, out
    assert distances[-1] < 0.25 * distances[0], out


def test_resume_ends_bit_identical_to_an_uninterrupted_run():
    out = run_example("resume.py", "--epochs", "2", "--interrupt-at", "30")
    assert "interrupted:   True at step 30," in out, out
    assert "checkpoint-000000030.safetensors" in out, out
    assert "largest weight difference 0;" in out, out
    assert "bit-identical to the uninterrupted run: True" in out, out


def test_mixed_precision_matches_float32():
    out = run_example("mixed_precision.py", "--epochs", "2")
    assert "linear gives dlfree.float16, cross_entropy gives dlfree.float32" in out, out
    skipped = int(re.search(r"(\d+) of \d+ steps skipped", out).group(1))
    assert skipped > 0, out  # the scale starts too large on purpose
    by_hand, float32, float16 = numbers(r"held-out accuracy (\d+\.\d)%", out)
    assert by_hand > 85 and float32 > 85, out
    assert abs(float16 - float32) <= 1.0, out


def test_profile_prints_the_table_and_writes_a_chrome_trace(tmp_path):
    trace = tmp_path / "trace.json"
    out = run_example("profile.py", "--steps", "2", "--trace", str(trace))
    table = out.split("\n")
    assert any(line.startswith("forward ") for line in table), out
    assert any(line.startswith("backward ") for line in table), out
    share = numbers(r"account for (\d+)%", out)
    assert share and 0 < share[0] <= 100, out
    names = {event.get("name") for event in json.loads(trace.read_text())["traceEvents"]}
    assert {"data", "forward", "backward", "optimizer"} <= names


def test_karate_gcn_classifies_the_unlabelled_members():
    out = run_example("karate_gcn.py", "--epochs", "60")
    accuracy = numbers(r"accuracy on the 30 unlabelled members (\d+\.\d)%", out)
    assert accuracy and accuracy[0] >= 80.0, out  # factions: guessing gets about half


def test_graph_classification_learns_the_shapes():
    out = run_example("graph_classification.py", "--graphs", "90", "--epochs", "15")
    accuracy = numbers(r"held-out accuracy (\d+\.\d)%", out)
    assert accuracy and accuracy[0] > 60.0, out  # three classes: guessing gets a third


def test_capsnet_digits_learns_in_one_short_epoch():
    out = run_example("capsnet_digits.py", "--epochs", "1", "--limit", "128")
    accuracy = numbers(r"held-out accuracy (\d+\.\d)%", out)
    assert accuracy and accuracy[0] > 40.0, out  # ten classes: guessing gets a tenth


def test_graph_builder_trains_a_graph_using_every_construct(tmp_path):
    dot = tmp_path / "graph.dot"
    out = run_example("graph_builder.py", "--epochs", "6", "--dot", str(dot))
    first, last = numbers(r"epoch \d+: loss (\d+\.\d+)", out)
    assert last < 0.8 * first, out
    assert numbers(r"held-out accuracy (\d+\.\d)%", out)[0] > 65, out
    assert "refine: node (Loop) in the root graph" in out
    text = dot.read_text()
    assert text.startswith("digraph") and 'label="previous call"' in text


def test_progressive_loads_a_saved_encoder_freezes_then_thaws_it(tmp_path):
    out = run_example("progressive.py", "--epochs", "20", "--out", str(tmp_path))
    alone, larger = numbers(r"held-out accuracy (\d+\.\d)%", out)
    assert (tmp_path / "encoder.safetensors").exists()
    assert "thawing the encoder (unchanged while frozen: True)" in out, out
    assert alone > 85 and larger > 85, out


def test_xor_mlp_gets_all_four_right():
    out = run_example("xor_mlp.py", "--steps", "150")
    losses = numbers(r"loss (\d+\.\d+)", out)
    assert losses[-1] < 0.05 < losses[0], out
    assert "4/4 correct" in out, out


def test_reinforce_return_rises_on_the_bandit_and_on_cartpole():
    out = run_example("reinforce.py", "--bandit-episodes", "100", "--iterations", "20",
                      "--episodes", "8")
    best = numbers(r"best arm pays (-?\d+\.\d+)", out)[0]
    bandit_first, bandit_last = _first_last("bandit", "reward", out)
    assert bandit_last > bandit_first + 0.5, out  # rewards are N(mean, 1) per pull
    assert bandit_last > best - 0.4, out  # most pulls go to the best arm (or a near one)
    cart_first, cart_last = _first_last("cartpole", "return", out)
    assert cart_first < 60, out  # a random policy balances for about 20 steps
    assert cart_last > cart_first + 50, out


def _first_last(name: str, unit: str, out: str) -> tuple[float, float]:
    """The means of the first and last episodes that reinforce.py prints for `name`."""
    match = re.search(rf"{name}: mean {unit} of the first \d+: (-?\d+\.\d+), of the last "
                      rf"\d+: (-?\d+\.\d+)", out)
    assert match, out
    return float(match.group(1)), float(match.group(2))


def test_multi_task_trains_both_heads_through_one_loss():
    out = run_example("multi_task.py", "--epochs", "4")
    untrained_accuracy = numbers(r"untrained\s+held-out accuracy (\d+\.\d)%", out)[0]
    untrained_error = numbers(r"untrained\s+held-out accuracy \S+\s+ink MAE (\d+\.\d+)", out)[0]
    accuracy = numbers(r"epoch +\d+ .*held-out accuracy (\d+\.\d)%", out)
    error = numbers(r"epoch +\d+ .*ink MAE (\d+\.\d+)", out)
    assert len(accuracy) == len(error) == 4, out
    assert untrained_accuracy < 25 and accuracy[-1] > 85, out  # ten classes
    assert error[-1] < 0.8 * untrained_error, out  # the ink head learns too


@pytest.mark.parametrize("name", ["mnist_mlp.py", "mnist_cnn.py"])
def test_mnist_examples_without_a_folder_say_how_to_get_the_files(name):
    out = run_example(name)  # exits 0
    assert "train-images-idx3-ubyte.gz" in out and "t10k-labels-idx1-ubyte.gz" in out, out
    assert "download=True" in out and f"python examples/{name} mnist" in out, out


@pytest.mark.parametrize("name, gz", [("mnist_mlp.py", True), ("mnist_mlp.py", False),
                                      ("mnist_cnn.py", True)])
def test_mnist_examples_learn_from_idx_files_in_a_folder(name, gz, tmp_path, rng):
    for prefix, n in (("train", 600), ("t10k", 200)):
        images, labels = learnable_digits(n, rng)
        write_mnist(tmp_path, rng, prefix, gz=gz, images=images, labels=labels)
    out = run_example(name, str(tmp_path), "--epochs", "2")
    assert "600 training images, 200 test images" in out, out
    accuracy = numbers(r"test accuracy (\d+\.\d+)%", out)
    assert len(accuracy) == 2 and accuracy[-1] > 80, out  # ten classes: guessing gets 10 %


def test_mnist_example_with_a_folder_missing_the_files_fails_naming_them(tmp_path):
    result = subprocess.run([sys.executable, str(EXAMPLES / "mnist_mlp.py"), str(tmp_path)],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 1
    assert f"train-images-idx3-ubyte (or train-images-idx3-ubyte.gz) is not in {tmp_path}" \
        in result.stderr, result.stderr


def _char_lm(run_dir: Path, *extra: str) -> str:
    tiny = ("--epochs", "2", "--chars", "2000", "--seq-len", "32", "--stride", "32",
            "--batch-size", "8", "--d-model", "16", "--n-layers", "1", "--n-heads", "2",
            "--sample-len", "31")
    return run_example("char_lm.py", *tiny, "--run-dir", str(run_dir), *extra)


def _after_resume(out: str) -> str:
    """What a run printed from its first epoch's end to its final loss, less the time."""
    return re.sub(r" in \d+\.\d s;", "", out[out.index("epoch 1: loss"):out.index("; model:")])


def test_char_lm_samples_each_epoch_and_resumes_after_ctrl_c_bit_for_bit(tmp_path):
    whole = _char_lm(tmp_path / "whole")
    samples = re.findall(r"--- sample ---\n(.*?)\n--------------", whole, re.S)
    assert len(samples) == 2 and all(len(s) == 31 for s in samples), whole
    losses = numbers(r"epoch \d: loss (\d+\.\d+)", whole)
    assert losses[1] < losses[0], whole
    stopped = _char_lm(tmp_path / "split", "--interrupt-at", "5")
    assert "interrupted after step 5; checkpoint in" in stopped, stopped
    resumed = _char_lm(tmp_path / "split")
    assert "resumed from step 5 (epoch 1)" in resumed, resumed
    # the same weights at every epoch's end: the same samples and losses
    assert _after_resume(resumed) == _after_resume(whole)
    model = dl.load(tmp_path / "split" / "char_lm.safetensors")
    assert isinstance(model, dl.nn.CausalTransformer) and model.max_len == 32
