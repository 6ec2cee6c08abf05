"""The benchmark workloads, one module each; `WORKLOADS` maps a name to its module.

A workload module defines, without importing any framework at module level:

* `NAME`, `DESCRIPTION` and `UNIT` ("us" or "ms", how its times are printed);
* `TARGETS`: framework -> the largest dl.free/framework time ratio the project accepts;
* `PLANS`: "full" and "quick" -> a `Plan` (how many rounds and iterations);
* `BUILDERS`: framework ("dlfree", "numpy", "torch") -> a function that imports the
  framework, builds fixed inputs and returns `step()`, one timed iteration. What
  `step()` returns (the loss, the outputs and gradients, or the updated parameters) is
  what tests/test_bench_smoke.py compares across the three frameworks.

To add a workload, write such a module and list it below.
"""

from . import attention_block, cnn_step, conv2d, mlp_step, op_overhead

WORKLOADS = {module.NAME: module
             for module in (op_overhead, mlp_step, cnn_step, conv2d, attention_block)}
