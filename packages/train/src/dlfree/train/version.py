"""The version of the dlfree-train distribution (read by hatchling at build time)."""

__version__ = "0.1.0"
