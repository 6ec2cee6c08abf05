"""Shared fixtures for dlfree-hf tests: the transformers oracle (support/hf_oracle.py), one
per session, so its checkpoint folders are written once.

Tests that take `encoder_family` / `encoder_head` run once per BERT-family model and head;
modules that use `one_torch_thread` run the oracle on one thread.
"""

from __future__ import annotations

import pytest

from support.hf_oracle import ENCODER_FAMILIES, HEAD_SUFFIX, Oracle


def pytest_generate_tests(metafunc):
    if "encoder_family" in metafunc.fixturenames:
        metafunc.parametrize("encoder_family", list(ENCODER_FAMILIES))
    if "encoder_head" in metafunc.fixturenames:
        metafunc.parametrize("encoder_head", list(HEAD_SUFFIX))


@pytest.fixture(scope="session")
def oracle(tmp_path_factory) -> Oracle:
    return Oracle(tmp_path_factory)


@pytest.fixture(scope="module")
def one_torch_thread():
    """The oracle on one thread: on a busy machine torch's idle workers spin and make each
    tiny call take milliseconds; the previous setting comes back after the module."""
    torch = pytest.importorskip("torch")
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)
