"""dlfree.hf: HuggingFace checkpoints, tokenizers and generation (distribution dlfree-hf)."""

from .version import __version__
