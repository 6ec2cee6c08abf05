"""The model families dlfree-hf provides, one module each; every module exposes MODEL_TYPE,
CONFIG and HEADS (head name to model class), which plugin.py registers."""
