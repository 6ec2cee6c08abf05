"""The hook implementations through which dlfree-hf registers its model families and
commands, exactly as a third-party plugin would (entry point `hf` in the `dlfree` group)."""

from __future__ import annotations

from dlfree import hookimpl


@hookimpl
def dlfree_register_architectures(register):
    # Imported here, not at module level: discovering plugins must stay cheap.
    from .models import (
        albert,
        bert,
        deberta_v2,
        distilbert,
        gpt2,
        llama,
        mistral,
        qwen2,
        roberta,
        t5,
        vit,
        xlm_roberta,
    )

    for family in (bert, roberta, distilbert, gpt2, llama, mistral, qwen2, xlm_roberta, albert,
                   t5, vit, deberta_v2):
        register(family.MODEL_TYPE, family.CONFIG, family.HEADS)


@hookimpl
def dlfree_register_commands(cli):
    from .cli import register_commands

    register_commands(cli)
