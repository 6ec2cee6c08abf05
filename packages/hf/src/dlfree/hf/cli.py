"""The `dlfree hf` commands: `info` (what a checkpoint holds), `embed` (sentence vectors),
`generate` (continue a prompt) and `export-onnx` (a text model as an ONNX file), added to the
`dlfree` command by the plugin hook."""

from __future__ import annotations

import argparse
import json
import os
import sys

from dlfree.cli import reports_errors

__all__ = ["register_commands"]

# safetensors' floating dtype codes, by the names dl.free and PyTorch use.
_FLOAT_DTYPES = {"F64": "float64", "F32": "float32", "F16": "float16", "BF16": "bfloat16",
                 "F8_E4M3": "float8_e4m3fn", "F8_E5M2": "float8_e5m2"}
# Config fields worth showing in `info`, under the names most families use.
_SUMMARY_FIELDS = ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                   "num_key_value_heads", "intermediate_size", "max_position_embeddings")


def register_commands(cli) -> None:
    """Add `hf` and its subcommands to the `dlfree` command's subparsers."""
    hf = cli.add_parser("hf", help="HuggingFace checkpoints: info, embed, generate, export-onnx",
                        description="Inspect and run HuggingFace checkpoints (a local folder "
                                    "or a hub repo id).")
    sub = hf.add_subparsers(dest="hf_command", metavar="{info,embed,generate,export-onnx}",
                            required=True)

    info = sub.add_parser("info", help="architecture, parameter count and dtype of a checkpoint")
    info.add_argument("path", help="checkpoint folder or hub repo id")
    info.add_argument("--json", action="store_true", help="machine-readable output")
    info.set_defaults(func=cmd_info)

    embed = sub.add_parser("embed", help="sentence embeddings (mean pooling of a base model)")
    embed.add_argument("path", help="checkpoint folder or hub repo id (model and tokenizer)")
    embed.add_argument("texts", nargs="+", metavar="TEXT", help="texts to embed")
    embed.add_argument("--json", action="store_true",
                       help="print JSON: {texts, dimension, normalized, embeddings}")
    embed.add_argument("--no-normalize", action="store_true",
                       help="keep the mean-pooled vectors as they are (no L2 normalisation)")
    embed.add_argument("--max-length", type=int, default=None,
                       help="truncate texts to this many tokens (default: the tokenizer's)")
    embed.set_defaults(func=cmd_embed)

    generate = sub.add_parser("generate", help="continue a prompt with a causal LM")
    generate.add_argument("path", help="checkpoint folder or hub repo id (model and tokenizer)")
    generate.add_argument("prompt", help="the text to continue")
    generate.add_argument("--max-new-tokens", type=int, default=20,
                          help="how many tokens to add (default 20)")
    generate.add_argument("--do-sample", action="store_true",
                          help="sample instead of greedy decoding")
    generate.add_argument("--temperature", type=float, default=1.0)
    generate.add_argument("--top-k", type=int, default=50)
    generate.add_argument("--top-p", type=float, default=1.0)
    generate.add_argument("--repetition-penalty", type=float, default=1.0)
    generate.add_argument("--num-beams", type=int, default=1, help="beam search with N beams")
    generate.add_argument("--seed", type=int, default=None,
                          help="seed for sampling, for a reproducible run")
    generate.set_defaults(func=cmd_generate)
    _add_export_onnx(sub)


_EXPORT_DESCRIPTION = """\
Write a text model as an ONNX model with the inputs input_ids and attention_mask (int64,
shape (batch, sequence), both axes dynamic, named "batch" and "sequence") and the tensors of
the model's output as outputs, under their field names: last_hidden_state (and
pooler_output) for the base model, logits for the LM and classification heads, start_logits
and end_logits for question answering. The model is traced at --batch-size sequences of
--sequence-length tokens; the graph takes any batch and length. The file is written
atomically: a failed export leaves no partial file. Bad input ends with a message on stderr
and exit status 1 (2 for a flag that does not parse).

example:
  dlfree hf export-onnx ./gpt2-folder gpt2.onnx --task causal-lm"""


def _add_export_onnx(sub) -> None:
    export = sub.add_parser("export-onnx", help="a text model as an ONNX file (input_ids and "
                                                "attention_mask in, batch and sequence dynamic)",
                            description=_EXPORT_DESCRIPTION,
                            formatter_class=argparse.RawDescriptionHelpFormatter)
    export.add_argument("path", help="checkpoint folder or hub repo id")
    export.add_argument("out", metavar="OUT", help="the ONNX file to write, e.g. model.onnx")
    export.add_argument("--task", default="base",
                        help="the model to export, as the family has it: base (hidden states, "
                             "the default), causal-lm, masked-lm, sequence-classification, "
                             "token-classification, question-answering")
    export.add_argument("--batch-size", type=_positive, default=2,
                        help="the batch traced at (default 2)")
    export.add_argument("--sequence-length", type=_positive, default=16,
                        help="the number of tokens traced at (default 16)")
    export.add_argument("--opset", type=int, default=17,
                        help="the ONNX opset to write, 17 to 21 (default 17)")
    export.set_defaults(func=cmd_export_onnx)


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive whole number")
    return int(text)


_reports_errors = reports_errors(lambda args: f"hf {args.hf_command}")
"""Bad input (a missing folder, a bad config, a wrong argument) ends the command with its
message on stderr and exit status 1, not a traceback."""


# ----------------------------------------------------------------------- info
def _stored_dtypes(folder) -> list[str]:
    """The floating dtypes of a checkpoint's weights, from the safetensors headers (integer
    entries are buffers such as old checkpoints' position_ids, not weights)."""
    import safetensors

    from .hub import weight_files

    codes = set()
    for path in weight_files(folder):
        with safetensors.safe_open(os.fspath(path), framework="numpy") as f:
            codes.update(f.get_slice(name).get_dtype() for name in f.keys())  # noqa: SIM118
    return sorted(_FLOAT_DTYPES[code] for code in codes if code in _FLOAT_DTYPES)


def _model_class(config):
    """The registered class named by config.json's `architectures`, else the base model."""
    from .auto import architecture_for

    heads = architecture_for(config.model_type).heads
    by_name = {cls.__name__: cls for cls in heads.values()}
    for name in config.architectures or ():
        if name in by_name:
            return by_name[name]
    return heads["base"]


def describe(path: str) -> dict:
    """What `dlfree hf info` reports about a checkpoint, as a dict."""
    from .auto import AutoConfig
    from .hub import resolve_folder

    folder = resolve_folder(path)
    config = AutoConfig.from_pretrained(folder)
    model_cls = _model_class(config)
    model = model_cls.from_pretrained(folder, config=config)
    loaded = sorted({p.dtype.name for p in model.parameters()})
    return {
        "path": os.fspath(folder),
        "model_type": config.model_type,
        "architectures": config.architectures or [],
        "dlfree_class": model_cls.__name__,
        "parameters": model.num_parameters(),
        "stored_dtypes": _stored_dtypes(folder),
        "loaded_dtypes": loaded,
        "config": {k: getattr(config, k) for k in _SUMMARY_FIELDS if _has(config, k)},
        "missing_weights": list(model.load_report.missing_keys),
        "unexpected_weights": list(model.load_report.unexpected_keys),
    }


def _has(config, name: str) -> bool:
    try:
        return getattr(config, name) is not None
    except AttributeError:
        return False


@_reports_errors
def cmd_info(args) -> int:
    report = describe(args.path)
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    lines = [f"path: {report['path']}",
             f"model_type: {report['model_type']}",
             f"architecture: {', '.join(report['architectures']) or '(not stated)'} "
             f"(loaded as dl.free {report['dlfree_class']})",
             f"parameters: {report['parameters']:,}",
             f"dtype: {', '.join(report['stored_dtypes'])} (stored), "
             f"{', '.join(report['loaded_dtypes'])} (loaded)"]
    lines += [f"{key}: {value}" for key, value in report["config"].items()]
    for key in ("missing_weights", "unexpected_weights"):
        if report[key]:
            lines.append(f"{key.replace('_', ' ')}: {', '.join(report[key])}")
    print("\n".join(lines))
    return 0


# ---------------------------------------------------------------------- embed
@_reports_errors
def cmd_embed(args) -> int:
    from .auto import AutoModel
    from .tasks import sentence_embeddings
    from .tokenizer import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(args.path)
    model = AutoModel.from_pretrained(args.path)
    vectors = sentence_embeddings(model, tokenizer, args.texts, normalize=not args.no_normalize,
                                  max_length=args.max_length).numpy().tolist()
    if args.json:
        print(json.dumps({"texts": args.texts, "dimension": len(vectors[0]),
                          "normalized": not args.no_normalize, "embeddings": vectors}))
    else:  # one line per text, as numpy.loadtxt reads it
        for vector in vectors:
            print(" ".join(f"{x:.8g}" for x in vector))
    return 0


# ------------------------------------------------------------------- generate
class _Printer:
    """Streams the text to stdout as generate produces tokens: the prompt, then each new
    piece. Each step decodes the whole sequence and prints what it adds, since a byte-level
    token may hold only part of a character (shown once the character is complete)."""

    def __init__(self, tokenizer, prompt_ids: list[int], out):
        self.tokenizer, self.ids, self.out = tokenizer, list(prompt_ids), out
        self.printed = ""

    def _show(self, final: bool = False) -> None:
        text = self.tokenizer.decode(self.ids, skip_special_tokens=True)
        if text.startswith(self.printed) and (final or not text.endswith("\ufffd")):
            self.out.write(text[len(self.printed):])
            self.printed = text
        elif final:  # decoding changed text already printed: print what follows the change
            self.out.write(text[len(os.path.commonprefix([text, self.printed])):])
        self.out.flush()

    def __call__(self, tokens) -> None:
        self.ids.append(int(tokens.numpy()[0]))
        self._show()

    def finish(self) -> None:
        self._show(final=True)
        self.out.write("\n")


@_reports_errors
def cmd_generate(args) -> int:
    import dlfree as dl

    from .auto import AutoConfig, AutoModelForCausalLM, AutoModelForSeq2SeqLM, architecture_for
    from .tokenizer import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(args.path)
    config = AutoConfig.from_pretrained(args.path)
    # an encoder–decoder (T5) answers the prompt; a causal LM continues it
    seq2seq = "seq2seq_lm" in architecture_for(config.model_type).heads
    auto = AutoModelForSeq2SeqLM if seq2seq else AutoModelForCausalLM
    model = auto.from_pretrained(args.path, config=config)
    prompt = tokenizer(args.prompt, return_tensors="dl")
    generator = dl.Generator().manual_seed(args.seed) if args.seed is not None else None
    settings = dict(max_new_tokens=args.max_new_tokens, do_sample=args.do_sample,
                    temperature=args.temperature, top_k=args.top_k, top_p=args.top_p,
                    repetition_penalty=args.repetition_penalty, num_beams=args.num_beams,
                    generator=generator)
    ids, mask = prompt["input_ids"], prompt.get("attention_mask")
    if args.num_beams > 1:  # beam search knows its tokens only at the end
        out = model.generate(ids, mask, **settings)
        print(tokenizer.decode(out[0], skip_special_tokens=True))
        return 0
    printer = _Printer(tokenizer, [] if seq2seq else ids[0].tolist(), sys.stdout)
    model.generate(ids, mask, streamer=printer, **settings)
    printer.finish()
    return 0


# ---------------------------------------------------------------- export-onnx
def _exportable(model_type: str, task: str):
    """The model class `--task` names in the family, or an error listing the valid tasks."""
    from .onnx_export import exportable_heads

    heads = {head.replace("_", "-"): cls for head, cls in exportable_heads(model_type).items()}
    if task not in heads:
        valid = ", ".join(sorted(heads)) or "none (export-onnx writes models that read "\
            "input_ids and attention_mask)"
        raise ValueError(f"--task {task}: the {model_type!r} family has no such model to "
                         f"export; valid: {valid}")
    return heads[task]


@_reports_errors
def cmd_export_onnx(args) -> int:
    from dlfree.onnx.command import check_output_path, summary

    from .auto import AutoConfig
    from .hub import resolve_folder
    from .onnx_export import export_onnx

    check_output_path(args.out)
    folder = resolve_folder(args.path)
    config = AutoConfig.from_pretrained(folder)
    model = _exportable(config.model_type, args.task).from_pretrained(folder, config=config)
    proto = export_onnx(model, args.out, batch_size=args.batch_size,
                        sequence_length=args.sequence_length, opset_version=args.opset)
    print(summary(proto, args.out))
    return 0
