"""The benchmark workloads, one module each; `WORKLOADS` maps a name to its module.

A workload module defines, without importing any framework at module level:

* `NAME`, `DESCRIPTION` and `UNIT` ("us" or "ms", how its times are printed);
* `BUILDERS`: framework -> a function that imports the framework, builds fixed inputs
  and returns `step()`, one timed iteration. The frameworks are "dlfree" and one or
  more references that do the same work: "numpy" (written by hand) and "torch" for
  most, or a library such as "torch_optimizer" or "pycocotools". benchmarks/run.py
  times exactly these; a reference that cannot be imported is skipped;
* `REFERENCE` (optional, default "numpy"): the reference whose results the others must
  match. What `step()` returns (the loss, the outputs and gradients, the updated
  parameters or the metric's values) is what tests/test_bench_smoke.py compares;
* `TARGETS`: reference -> the largest dl.free/reference time ratio the project accepts;
* `TOLERANCES` (optional): framework -> the largest relative error ||result - reference's||
  / ||reference's|| (each result in float64) that tests/test_bench_smoke.py accepts from a
  framework that by design cannot agree to float32 accuracy, such as an int8 model; every
  other framework must match the REFERENCE element by element to float32 accuracy;
* `PLANS`: "full" and "quick" -> a `Plan` (how many rounds and iterations);
* `SCALING` and `PROCESSES` (optional, for workloads run on several processes):
  framework -> the framework that runs the same global batch on fewer processes, and
  framework -> its process count; run.py then reports the samples/s gained
  (workloads/ddp_mlp.py);
* `LIBRARIES` (optional): framework -> the library it runs, where the names differ;
* `FLOPS` (optional): the floating-point operations of one `step()` at the module's
  sizes, from which run.py reports GFLOP/s per framework next to the machine's sgemm
  peak. The count is the work of the matrix products (2 m n k per GEMM or convolution
  as a GEMM, forward and backward), the same for every framework and independent of how
  one computes it; a workload without matrix products (norm_gelu) states a nominal count
  per element of each kernel instead. A sweep, which changes the sizes, reports none.
* `figures(outputs)` (optional): named numbers that the times alone do not tell, such as
  how closely an approximate framework (int8) follows the exact one. `outputs` maps each
  framework that ran to what one more `step()` returned, after the timed rounds, so the
  steps must return picklable values (NumPy arrays); the result, {label: number}, is
  printed under the table and written with the workload's results ("figures"). They hold
  at the module's sizes, so a sweep reports none (workloads/onnx_minilm.py).

To add a workload, write such a module and list it below.
"""

from . import (
    adamw_step,
    attention_block,
    bert_layer_train,
    char_lm_generate,
    char_lm_step,
    cnn_step,
    conv2d,
    dashboard_idle,
    ddp_mlp,
    feedback_fixed,
    gat_step,
    gated_routing,
    gcn_step,
    gpt_generation,
    gru_step,
    iterative_refine,
    lamb_step,
    lstm_step,
    map_eval,
    minilm_inference,
    mlp_step,
    norm_gelu,
    onnx_minilm,
    op_overhead,
    residual_tower,
    resnet20_step,
    t5_generation,
    vit_inference,
)

WORKLOADS = {module.NAME: module
             for module in (op_overhead, mlp_step, cnn_step, conv2d, attention_block, adamw_step,
                            lamb_step, map_eval, minilm_inference, gpt_generation, ddp_mlp,
                            gcn_step, gat_step, dashboard_idle, residual_tower, gated_routing,
                            iterative_refine, feedback_fixed, t5_generation, vit_inference,
                            resnet20_step, char_lm_step, char_lm_generate, norm_gelu,
                            lstm_step, gru_step, bert_layer_train, onnx_minilm)}
