"""Helpers the test files share: the PyTorch parity harnesses and their one input-spec
vocabulary, oracles, data and checks for the optimizer, metric, HF and Trainer tests.

pytest puts `tests/` on `sys.path` (`pythonpath` in the root pyproject.toml), so a test
imports a helper by package name, `from support.parity import Case`, and the suite runs
under `--import-mode=importlib`; conftest.py files hold fixtures only.
"""
