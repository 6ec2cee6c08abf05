"""`dlfree export onnx`, run as a command: the written file runs in ONNX Runtime to the
model file's outputs (float32, 1e-5 relative) at two batch sizes through --dynamic, with
several inputs, an int64 input and names; bad input gives exit status 1 (2 for a flag that
does not parse) and a message naming what is wrong and what is valid, no traceback, and
no file (partial or temporary) left behind."""

from __future__ import annotations

import dlfree
import dlfree.nn as nn

import numpy as np
import onnxruntime as ort
import pytest

from support.cli import run_dlfree


def _saved(tmp_path, model, name="model.safetensors"):
    path = tmp_path / name
    dlfree.save(model.eval(), path)
    return path


def _session(path):
    return ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])


def _dims(value) -> list:
    return [d.dim_param or d.dim_value for d in value.shape] if hasattr(value, "shape") else []


def _agree(model, session, calls):
    names = [i.name for i in session.get_inputs()]
    for args in calls:
        (got,) = session.run(None, {n: np.asarray(a) for n, a in zip(names, args, strict=True)})
        with dlfree.no_grad():
            want = np.asarray(model(*args))
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_cnn_with_a_dynamic_batch_runs_in_onnx_runtime_at_two_batch_sizes(tmp_path):
    dlfree.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                          nn.MaxPool2d(2), nn.Flatten(), nn.Linear(64, 10))
    path = _saved(tmp_path, model)
    out = tmp_path / "cnn.onnx"
    done = run_dlfree("export", "onnx", path, out, "--input-shape", "1,1,8,8",
                      "--dynamic", "0:batch")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"wrote {out}: inputs input_0 float32[batch,1,8,8]; "
                                  "outputs output_0 float32[batch,10]; ")
    assert done.stdout.rstrip().endswith(" nodes, opset 17")
    session = _session(out)
    assert session.get_inputs()[0].shape == ["batch", 1, 8, 8]
    loaded = dlfree.load(path)
    _agree(loaded, session, [(dlfree.randn(1, 1, 8, 8),), (dlfree.randn(5, 1, 8, 8),)])


def test_int64_tokens_with_named_dynamic_batch_and_sequence(tmp_path):
    dlfree.manual_seed(0)
    path = _saved(tmp_path, nn.Sequential(nn.Embedding(20, 8), nn.Linear(8, 3)))
    out = tmp_path / "tokens.onnx"
    done = run_dlfree("export", "onnx", path, out, "--input-shape", "2,5", "--dtype", "int64",
                      "--input-names", "tokens", "--output-names", "scores",
                      "--dynamic", "0:batch", "--dynamic", "tokens:1:sequence", "--opset", "18")
    assert done.returncode == 0, done.stderr
    assert "inputs tokens int64[batch,sequence]; outputs scores float32[batch,sequence,3]" \
        in done.stdout and done.stdout.rstrip().endswith("opset 18")
    session = _session(out)
    rng = np.random.default_rng(0)
    _agree(dlfree.load(path), session,
           [(dlfree.tensor(rng.integers(0, 20, size)),) for size in ((2, 5), (4, 9))])


def test_two_inputs_keep_their_fixed_shapes_without_dynamic(tmp_path):
    dlfree.manual_seed(0)
    path = _saved(tmp_path, nn.Bilinear(3, 4, 2))
    out = tmp_path / "bilinear.onnx"
    done = run_dlfree("export", "onnx", path, out, "--input-shape", "2,3",
                      "--input-shape", "2,4")
    assert done.returncode == 0, done.stderr
    assert "inputs input_0 float32[2,3], input_1 float32[2,4]; outputs output_0 float32[2,2]" \
        in done.stdout
    session = _session(out)
    assert [i.shape for i in session.get_inputs()] == [[2, 3], [2, 4]]
    _agree(dlfree.load(path), session, [(dlfree.randn(2, 3), dlfree.randn(2, 4))])


def _bad_files(tmp_path) -> dict:
    """A model file, a file that is no safetensors file and a dict of tensors."""
    dlfree.manual_seed(0)
    garbage = tmp_path / "notes.txt"
    garbage.write_text("not a model")
    tensors = tmp_path / "tensors.safetensors"
    dlfree.save({"weight": dlfree.zeros(2)}, tensors)
    return {"model": _saved(tmp_path, nn.Sequential(nn.Linear(4, 2))), "garbage": garbage,
            "tensors": tensors, "missing": tmp_path / "absent.safetensors"}


# (model file, extra arguments, exit status, what stderr says)
BAD_INPUT = {
    "missing file": ("missing", ["--input-shape", "1,4"], 1, "absent.safetensors: no such file"),
    "not a model file": ("garbage", ["--input-shape", "1,4"], 1,
                         "notes.txt is not a readable safetensors file"),
    "tensors, not a model": ("tensors", ["--input-shape", "1,4"], 1,
                             "holds a dict, not a model; a model file is written by "
                             "dl.save(model, path)"),
    "malformed shape": ("model", ["--input-shape", "1,x"], 2,
                        "argument --input-shape: '1,x' is not a shape; valid: "
                        "comma-separated positive sizes"),
    "too many shapes": ("model", ["--input-shape", "1,4", "--input-shape", "1,4"], 1,
                        "Sequential.forward(input) cannot take 2 inputs; give one "
                        "--input-shape per argument of forward"),
    "shape the model rejects": ("model", ["--input-shape", "1,5"], 1,
                                "input of shape (1, 5) and weight of shape (2, 4) do not fit"),
    "dtype count": ("model", ["--input-shape", "1,4", "--dtype", "int64", "--dtype", "int64"],
                    1, "2 --dtype for 1 --input-shape; give one --dtype per input"),
    "unknown dynamic input": ("model", ["--input-shape", "1,4", "--dynamic", "x:0:batch"], 1,
                              "--dynamic x:0:batch names the input 'x'; the inputs are "
                              "input_0"),
    "dynamic axis out of range": ("model", ["--input-shape", "1,4", "--dynamic", "2:n"], 1,
                                  "--dynamic 2:n: input 'input_0' has no axis 2 (its shape "
                                  "is 1,4)"),
    "malformed dynamic": ("model", ["--input-shape", "1,4", "--dynamic", "batch"], 2,
                          "'batch' is not a dynamic axis; valid: AXIS:NAME or "
                          "INPUT:AXIS:NAME"),
    "opset": ("model", ["--input-shape", "1,4", "--opset", "9"], 1,
              "opset_version 9 is not supported; valid: 17 to 21"),
}


@pytest.mark.parametrize("case", list(BAD_INPUT))
def test_bad_input_is_named_with_what_is_valid_and_writes_nothing(tmp_path, case):
    which, extra, status, message = BAD_INPUT[case]
    files = _bad_files(tmp_path)
    before = sorted(tmp_path.iterdir())
    done = run_dlfree("export", "onnx", files[which], tmp_path / "out.onnx", *extra)
    assert done.returncode == status
    assert done.stderr.strip().splitlines()[-1].startswith("dlfree export onnx: error: ")
    assert message in done.stderr and "Traceback" not in done.stderr
    assert done.stdout == ""
    assert sorted(tmp_path.iterdir()) == before  # no out.onnx, no temporary file


def test_an_output_folder_that_does_not_exist_is_refused_before_any_work(tmp_path):
    out = tmp_path / "nowhere" / "model.onnx"
    done = run_dlfree("export", "onnx", tmp_path / "absent.safetensors", out,
                      "--input-shape", "1,4")
    assert done.returncode == 1
    assert f"{out}: the folder {out.parent} does not exist" in done.stderr
