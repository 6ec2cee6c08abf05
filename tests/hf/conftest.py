"""Shared fixtures for dlfree-hf tests: the transformers oracle (support/hf_oracle.py), one
per session, so its checkpoint folders are written once.

Tests that take `encoder_family` / `encoder_head` run once per BERT-family model and head;
modules that use `one_torch_thread` run the oracle on one thread. The families added after
BERT, RoBERTa and DistilBERT run the representative tests (outputs, gradients, the Auto
class; multiple choice's export) by default and every other shared test in the slow set, to
keep the default run short.
"""

from __future__ import annotations

import pytest

from support.hf_oracle import (
    ENCODER_FAMILIES,
    FIRST_FAMILIES,
    HEAD_SUFFIX,
    REPRESENTATIVE,
    Oracle,
)


def pytest_generate_tests(metafunc):
    if "encoder_family" in metafunc.fixturenames:
        metafunc.parametrize("encoder_family", list(ENCODER_FAMILIES))
    if "encoder_head" in metafunc.fixturenames:
        metafunc.parametrize("encoder_head", list(HEAD_SUFFIX))


def pytest_collection_modifyitems(items):
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        family = params.get("encoder_family")
        if family is None or family in FIRST_FAMILIES:
            continue
        representative = item.originalname in REPRESENTATIVE and not params.get("sharded")
        if not representative:
            item.add_marker(pytest.mark.slow)


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
