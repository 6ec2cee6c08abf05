"""The real all-MiniLM-L6-v2 checkpoint exported to ONNX and run in ONNX Runtime: dl.free's
exporter against torch's, on the same engine, so that the time compared is that of the
graphs each exporter writes.

The batch is minilm_inference's (32 sequences padded to 128 tokens, fixed seed), fed as
input_ids, attention_mask and token_type_ids; a step is one `InferenceSession.run` and
returns (last_hidden_state, pooler_output). Every session runs on ONNX Runtime's CPU
execution provider with its default graph optimizations and one intra-op thread per CPU
this process may run on, as many as dl.free's ops and NumPy's BLAS use in the other
workloads. Each builder exports its model once, with the batch and sequence axes dynamic,
into a temporary directory that is removed once the session has read the file.

* "dlfree": `dlfree.hf.AutoModel.from_pretrained` written by `dlfree.onnx.export`, float32
  (run.py's ratios are dl.free's time over the others', so this is the framework named
  "dlfree");
* "torch_onnx", the REFERENCE: `transformers.AutoModel.from_pretrained` written by
  torch.onnx.export's TorchScript exporter (dynamo=False, opset 17);
* "dlfree_onnx_int8": the model after `dlfree.nn.quantization.quantize_dynamic` (int8
  Linear weights with one scale per output row, activations quantized at each call),
  written by `dlfree.onnx.export` in ONNX's dynamic-quantized form (DynamicQuantizeLinear
  and MatMulInteger, which ONNX Runtime fuses into DynamicQuantizeMatMul). Its dlfree/x
  ratio is its speed-up over the float32 graph; `figures` says how closely it follows it.
"""

import os
import tempfile
import warnings

import numpy as np

from .minilm_inference import folder, problem
from .plan import Plan

NAME = "onnx_minilm"
# the CPUs this process may run on, which dl.free's ops and OpenBLAS use by default
THREADS = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
DESCRIPTION = (f"all-MiniLM-L6-v2 exported to ONNX, ONNX Runtime CPU ({THREADS} intra-op "
               "threads), batch 32 x 128 tokens (padded), float32 and int8")
UNIT = "ms"
REFERENCE = "torch_onnx"
TARGETS = {"torch_onnx": 1.0}
# The int8 graph cannot match float32 results element by element: the smoke test bounds
# its relative error ||int8 - reference|| / ||reference|| per result instead. Per-tensor
# int8 quantization of this model measures 0.24-0.38 (ONNX Runtime's own quantize_dynamic
# of the float graph) and 0.30-0.47 (dl.free's eager quantize_dynamic, whose activations
# have 7 bits) at batch 4; outputs of another sequence or zeros measure 1 or more.
TOLERANCES = {"dlfree_onnx_int8": 0.6}
PLANS = {"full": Plan(rounds=11, iterations=3, warmup=2),
         "quick": Plan(rounds=3, iterations=1, warmup=1)}

# Read when a step is built, so that the smoke test can run a smaller batch.
BATCH, LENGTH = 32, 128
INPUTS = ["input_ids", "attention_mask", "token_type_ids"]
OUTPUTS = ["last_hidden_state", "pooler_output"]
AXES = {**{name: {0: "batch", 1: "sequence"} for name in (*INPUTS, "last_hidden_state")},
        "pooler_output": {0: "batch"}}


def _session(export):
    """The step of the model that `export(path)` writes: one run of an ONNX Runtime session
    on the CPU with THREADS intra-op threads, on the workload's batch."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = THREADS
    with tempfile.TemporaryDirectory(prefix="onnx_minilm_") as directory:
        path = os.path.join(directory, "model.onnx")
        export(path)
        session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    feeds = dict(zip(INPUTS, problem(BATCH, LENGTH), strict=True))

    def step():
        return tuple(session.run(OUTPUTS, feeds))

    return step


def _encoder(module_class, model):
    """`model` in eval mode behind the ONNX graph's signature: (last_hidden_state,
    pooler_output) from positional inputs. `module_class` is the framework's Module (dl.free
    and torch run this same code)."""

    class Encoder(module_class):
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, input_ids, attention_mask, token_type_ids):
            out = self.model(input_ids=input_ids, attention_mask=attention_mask,
                             token_type_ids=token_type_ids)
            return out.last_hidden_state, out.pooler_output

    return Encoder().eval()


def _dlfree_session(model):
    """The step of the dl.free `model` written by `dlfree.onnx.export`."""
    import dlfree as dl

    example = tuple(dl.tensor(array) for array in problem(BATCH, LENGTH))
    return _session(lambda path: dl.onnx.export(
        _encoder(dl.nn.Module, model), example, path, input_names=INPUTS,
        output_names=OUTPUTS, dynamic_axes=AXES))


def build_dlfree():
    """dl.free's float32 MiniLM through `dlfree.onnx.export`."""
    from dlfree.hf import AutoModel

    return _dlfree_session(AutoModel.from_pretrained(folder()))


def build_dlfree_onnx_int8():
    """dl.free's MiniLM after `quantize_dynamic` with one weight scale per output row,
    through `dlfree.onnx.export`."""
    from dlfree import nn
    from dlfree.hf import AutoModel
    from dlfree.nn.quantization import per_channel_dynamic_qconfig, quantize_dynamic

    model = AutoModel.from_pretrained(folder())
    return _dlfree_session(quantize_dynamic(model, {nn.Linear: per_channel_dynamic_qconfig}))


def build_torch_onnx():
    """transformers' float32 MiniLM through torch.onnx.export (TorchScript, opset 17)."""
    import torch
    import transformers

    model = _encoder(torch.nn.Module, transformers.AutoModel.from_pretrained(folder()))
    example = tuple(torch.from_numpy(array) for array in problem(BATCH, LENGTH))

    def export(path):
        with warnings.catch_warnings():
            # torch 2.13 deprecates this exporter (the dynamo one needs onnxscript); the
            # tracer flags the Python conditions it fixes in the graph (an attention mask is
            # given, no cached keys), which hold at every batch and sequence size; and the
            # mask's advanced indexing is exported for indices >= 0, which aranges are
            warnings.simplefilter("ignore", DeprecationWarning)
            warnings.simplefilter("ignore", torch.jit.TracerWarning)
            warnings.filterwarnings("ignore", "Exporting aten::index operator", UserWarning)
            torch.onnx.export(model, example, path, input_names=INPUTS, output_names=OUTPUTS,
                              dynamic_axes=AXES, dynamo=False, opset_version=17)

    return _session(export)


BUILDERS = {"dlfree": build_dlfree, "torch_onnx": build_torch_onnx,
            "dlfree_onnx_int8": build_dlfree_onnx_int8}
LIBRARIES = dict.fromkeys(BUILDERS, "onnxruntime")


def _relative_error(actual: np.ndarray, expected: np.ndarray) -> float:
    """||actual - expected|| / ||expected||, in float64."""
    expected = expected.astype(np.float64)
    return float(np.linalg.norm(actual - expected) / np.linalg.norm(expected))


def figures(outputs: dict) -> dict:
    """How closely the int8 graph follows dl.free's float32 one, where both ran: the cosine
    similarity of their sentence embeddings (last_hidden_state averaged over each sequence's
    real tokens, as sentence-transformers embeds with this model), the least and the mean
    over the batch, and the relative error of last_hidden_state (what TOLERANCES bounds)."""
    if not {"dlfree", "dlfree_onnx_int8"} <= set(outputs):
        return {}
    exact, int8 = outputs["dlfree"][0], outputs["dlfree_onnx_int8"][0]
    weights = problem(BATCH, LENGTH)[1][..., None].astype(np.float64)
    a, b = ((hidden * weights).sum(1) / weights.sum(1) for hidden in (exact, int8))
    cosine = (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    return {"int8 vs float32 embedding cosine, least in the batch": float(cosine.min()),
            "int8 vs float32 embedding cosine, mean over the batch": float(cosine.mean()),
            "int8 vs float32 last_hidden_state relative error": _relative_error(int8, exact)}
