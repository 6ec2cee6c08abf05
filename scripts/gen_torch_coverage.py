"""Write docs/torch-coverage.md: which of PyTorch's public names dl.free implements.

For each surface (torch's functions, torch.Tensor's methods and attributes, torch.linalg,
torch.fft, torch.nn.functional, torch.autograd.functional) every public name of the
installed torch is sorted into one of four lists: implemented (dl.free has the name on the
matching surface), differs on purpose (implemented, with the reason it is not torch's
behaviour), not planned (with the reason), and missing (none of those yet). The reasons
live in this file, beside the rules that sort the names, so that a note about a name that
no longer fits (a "not planned" name that got implemented) fails the check.

    python scripts/gen_torch_coverage.py           rewrite the page
    python scripts/gen_torch_coverage.py --check   exit 1, naming what differs, if it is stale

tests/test_torch_coverage.py fails when the page is stale; after merging work that adds
names, rerun the script.
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import re
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

PAGE = Path(__file__).resolve().parents[1] / "docs" / "torch-coverage.md"
COMMAND = "python scripts/gen_torch_coverage.py"


@dataclass(frozen=True)
class Surface:
    """One of torch's public surfaces and the dl.free object that answers for it."""

    title: str
    torch_path: str  # "torch", "torch.Tensor", "torch.linalg", ...
    ours_path: str  # "dlfree", "dlfree.Tensor", ...
    functions_only: bool  # count only callables that are not classes (a module's functions)


SURFACES = (
    Surface("Functions in `torch`", "torch", "dlfree", True),
    Surface("Methods and attributes of `torch.Tensor`", "torch.Tensor", "dlfree.Tensor", False),
    Surface("`torch.linalg`", "torch.linalg", "dlfree.linalg", True),
    Surface("`torch.fft`", "torch.fft", "dlfree.fft", True),
    Surface("`torch.nn.functional`", "torch.nn.functional", "dlfree.functional", True),
    Surface("`torch.autograd.functional`", "torch.autograd.functional",
            "dlfree.autograd.functional", True),
)

# Names dl.free implements on purpose not as torch does: "surface:name" -> the reason.
DIFFERS = {
    "torch:manual_seed": "seeds NumPy's PCG64 generator: the same seed draws other numbers "
                         "than torch's Mersenne Twister",
    "torch:seed": "seeds NumPy's PCG64 generator (random numbers differ from torch's)",
    "torch:get_rng_state": "the state of NumPy's PCG64 generator, not torch's byte tensor",
    "torch:set_rng_state": "takes the state `get_rng_state` returned (PCG64's), not torch's",
    "torch:save": "no pickle: what it writes is one safetensors file (weights, and the "
                  "structure as JSON); objects it cannot describe are refused",
    "torch:load": "no pickle: reads what `dl.save` writes, building objects only through "
                  "the registries",
    "torch.Tensor:numpy": "a NumPy array on the CPU; CuPy arrays are returned by `.cupy()`",
}

# Names not planned, matched by pattern per surface ("*" is every surface), with the reason.
NOT_PLANNED = (
    ("*", r"(^|_)(quantize|quantized|dequantize|fake_quantize|q_per|q_scale|q_zero|qscheme|"
          r"int_repr|fbgemm)", "quantized tensors: NumPy and CuPy have no quantized dtypes"),
    ("*", r"sparse|^(coalesce|indices|values|crow_indices|col_indices|ccol_indices|"
          r"row_indices|smm|sspaddmm|hspmm|spmm|is_coalesced|dense_dim|to_dense|_nnz)$",
     "sparse layouts: dl.free tensors are dense arrays"),
    ("*", r"(^|_)(mkldnn|cudnn|miopen|nnpack|xnnpack|vulkan|mps|ipu|xpu|hpu|mtia|hip)(_|$)|"
          r"^(is_meta|is_nested|nested|to_padded_tensor)$",
     "backend- and layout-specific entry points of torch's own kernels"),
    ("*", r"^(refine_names|rename|rename_|align_to|align_as|names|has_names)$",
     "named tensors (a prototype in torch)"),
    ("*", r"storage|^(set_|share_memory_|is_shared|data_ptr|untyped_storage|"
          r"is_set_to|resize_|resize_as_)$",
     "torch's storage model: a dl.free tensor is a NumPy/CuPy array, shared through it"),
    ("torch", r"^(compiled_with_cxx11_abi|get_device_module|is_inference_mode_enabled|"
              r"set_warn_always|is_warn_always_enabled|use_deterministic_algorithms|"
              r"are_deterministic_algorithms_enabled|get_deterministic_debug_mode|"
              r"set_deterministic_debug_mode|set_float32_matmul_precision|"
              r"get_float32_matmul_precision|set_flush_denormal|typename|"
              r"unify_type_list|vitals_enabled|set_vital|read_vital|wait|fork|"
              r"import_ir_module|import_ir_module_from_buffer|merge_type_from_type_comment|"
              r"parse_ir|parse_schema|parse_type_comment|autocast_increment_nesting|"
              r"autocast_decrement_nesting|clear_autocast_cache|"
              r"get_autocast_.*|set_autocast_.*|is_autocast_.*|init_num_threads|"
              r"get_num_interop_threads|set_num_interop_threads|"
              r"is_anomaly_check_nan_enabled|is_anomaly_enabled|cond|while_loop|"
              r"sym_.*|.*_sym|guard_.*|export|jit|classproperty|"
              r"is_grad_enabled_for|is_storage|from_dlpack|frombuffer|from_file)$",
     "torch's runtime, JIT and compiler internals"),
    ("torch.Tensor", r"^(is_leaf_|record_stream|register_post_accumulate_grad_hook|"
                     r"to_mkldnn|ipu|element_size_|module_load|dim_order|"
                     r"nbytes_|itemsize_|output_nr|_version|grad_fn_|"
                     r"retains_grad_|is_quantized|is_inference|new_empty_strided|"
                     r"smm|map_|map2_|apply_|__torch_function__)$",
     "torch's runtime internals"),
)


def _public_names(obj, functions_only: bool) -> list[str]:
    names = []
    for name in dir(obj):
        if name.startswith("_"):
            continue
        value = getattr(obj, name, None)
        if functions_only and (not callable(value) or isinstance(value, type)):
            continue
        names.append(name)
    return sorted(names)


def _resolve(path: str):
    """The module or class at a dotted path, or None when it does not exist (yet)."""
    module, _, attr = path.rpartition(".")
    try:
        return importlib.import_module(path)
    except ModuleNotFoundError:
        if not module:
            return None
    try:
        return getattr(importlib.import_module(module), attr)
    except (ModuleNotFoundError, AttributeError):
        return None


def _not_planned(surface: Surface, name: str) -> str | None:
    for where, pattern, reason in NOT_PLANNED:
        if where in ("*", surface.torch_path) and re.search(pattern, name):
            return reason
    return None


def classify(surface: Surface) -> dict:
    """The surface's torch names sorted into implemented / differs / not_planned / missing
    (the last two hold the names, the middle ones map names to reasons)."""
    theirs = _public_names(_resolve(surface.torch_path), surface.functions_only)
    ours = _resolve(surface.ours_path)
    result: dict = {"implemented": [], "differs": {}, "not_planned": {}, "missing": []}
    for name in theirs:
        key = f"{surface.torch_path}:{name}"
        has = ours is not None and hasattr(ours, name)
        if has and key in DIFFERS:
            result["differs"][name] = DIFFERS[key]
        elif has:
            result["implemented"].append(name)
        elif (reason := _not_planned(surface, name)) is not None:
            result["not_planned"][name] = reason
        else:
            result["missing"].append(name)
    return result


def stale_notes() -> list[str]:
    """Notes that no longer fit: a DIFFERS entry for a name dl.free lacks or torch lacks."""
    problems = []
    surfaces = {s.torch_path: s for s in SURFACES}
    for key in DIFFERS:
        path, _, name = key.partition(":")
        surface = surfaces[path]
        if name not in _public_names(_resolve(path), surface.functions_only):
            problems.append(f"DIFFERS names {key}, which torch does not have")
        ours = _resolve(surface.ours_path)
        if ours is None or not hasattr(ours, name):
            problems.append(f"DIFFERS names {key}, which dl.free does not implement")
    return problems


def _wrapped(names) -> list[str]:
    text = ", ".join(f"`{n}`" for n in names) or "(none)"
    return textwrap.wrap(text, 95, break_on_hyphens=False, break_long_words=False)


def render() -> str:
    import torch

    sections, rows = [], []
    for surface in SURFACES:
        c = classify(surface)
        total = sum(len(v) for v in c.values())
        done = len(c["implemented"]) + len(c["differs"])
        rows.append(f"| {surface.title} | {total} | {done} | {len(c['differs'])} | "
                    f"{len(c['not_planned'])} | {len(c['missing'])} |")
        lines = [f"## {surface.title}", "",
                 f"dl.free's side: `{surface.ours_path}`. "
                 f"{done} of {total} implemented.", "",
                 "Implemented:", "", *_wrapped(c["implemented"]), ""]
        if c["differs"]:
            lines += ["Implemented, differing on purpose:", "", "| name | how and why |",
                      "|---|---|", *(f"| `{n}` | {r} |" for n, r in c["differs"].items()), ""]
        by_reason: dict = {}
        for name, reason in c["not_planned"].items():
            by_reason.setdefault(reason, []).append(name)
        if by_reason:
            lines += ["Not planned:", ""]
            for reason, names in by_reason.items():
                lines += [f"- {reason}:", *("  " + line for line in _wrapped(names))]
            lines.append("")
        lines += ["Missing (not implemented yet):", "", *_wrapped(c["missing"]), ""]
        sections.append("\n".join(lines))
    head = [
        "# Coverage of PyTorch's public surface",
        "",
        f"Generated by `{COMMAND}` from torch {torch.__version__.split('+')[0]} and this "
        "checkout; `tests/test_torch_coverage.py` fails when it is stale. A name counts as "
        "implemented when dl.free has it on the matching surface (`dl.x` for `torch.x`, "
        "`Tensor.x` for `torch.Tensor.x`); the reasons for the other lists are in the script.",
        "",
        "The same question in code, for one name:",
        "",
        "```python",
        "import dlfree as dl",
        "",
        "assert hasattr(dl.linalg, \"svd\") and hasattr(dl.Tensor, \"det\") and "
        "hasattr(dl.fft, \"rfft\")",
        "```",
        "",
        "| surface | torch names | implemented | of which differ on purpose | not planned "
        "| missing |",
        "|---|---|---|---|---|---|",
        *rows,
        "",
    ]
    return "\n".join(head) + "\n" + "\n".join(sections)


def differences(written: str, fresh: str) -> str:
    diff = difflib.unified_diff(written.splitlines(), fresh.splitlines(), "written", "fresh",
                                lineterm="", n=0)
    return (f"docs/torch-coverage.md is stale; rewrite it with: {COMMAND}\n"
            + "\n".join(list(diff)[:40]))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if the page is stale")
    args = parser.parse_args(argv)
    problems = stale_notes()
    if problems:
        print("\n".join(problems), file=sys.stderr)
        return 1
    fresh = render()
    if args.check:
        written = PAGE.read_text() if PAGE.exists() else ""
        if written != fresh:
            print(differences(written, fresh), file=sys.stderr)
            return 1
        return 0
    PAGE.write_text(fresh)
    return 0


if __name__ == "__main__":
    sys.exit(main())
