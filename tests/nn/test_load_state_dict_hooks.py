"""load_state_dict pre-hooks (torch's signature, prefixes, order, error messages) and the
`rename=` key map, each against what torch does with the same hook or renamed dict."""

from __future__ import annotations

import dlfree as dl
import dlfree.nn as nn

import numpy as np
import pytest
import torch

from support.torch_copy import assert_same_state, to_numpy


def _pair():
    torch.manual_seed(0)
    theirs = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Sequential(
        torch.nn.Linear(4, 2)))
    ours = nn.Sequential(nn.Linear(3, 4), nn.Sequential(nn.Linear(4, 2)))
    return ours, theirs


def _old_checkpoint():
    """Weights saved under old names: `w`/`b` where the layers now say weight/bias."""
    rng = np.random.default_rng(0)
    shapes = {"0.w": (4, 3), "0.b": (4,), "1.0.w": (2, 4), "1.0.b": (2,)}
    return {k: rng.standard_normal(s).astype(np.float32) for k, s in shapes.items()}


def test_a_pre_hook_upgrading_old_keys_loads_as_in_torch():
    seen = {"dl": [], "torch": []}

    def upgrade(tag):
        def hook(module, state_dict, prefix, local_metadata, strict, missing, unexpected,
                 error_msgs):
            seen[tag].append((type(module).__name__, prefix))
            for old, new in (("w", "weight"), ("b", "bias")):
                if prefix + old in state_dict:
                    state_dict[prefix + new] = state_dict.pop(prefix + old)
        return hook

    ours, theirs = _pair()
    for ours_m, theirs_m in ((ours[0], theirs[0]), (ours[1][0], theirs[1][0])):
        ours_m.register_load_state_dict_pre_hook(upgrade("dl"))
        theirs_m.register_load_state_dict_pre_hook(upgrade("torch"))
    old = _old_checkpoint()
    result = ours.load_state_dict(old)
    expected = theirs.load_state_dict({k: torch.tensor(v) for k, v in old.items()})
    assert seen["dl"] == seen["torch"] == [("Linear", "0."), ("Linear", "1.0.")]
    assert (result.missing_keys, result.unexpected_keys) == tuple(expected)
    assert list(old) == ["0.w", "0.b", "1.0.w", "1.0.b"]  # the caller's dict is untouched
    assert_same_state(ours, theirs)


def test_hook_errors_fail_the_load_and_the_old_spelling_works():
    ours, theirs = _pair()

    def refuse(state_dict, prefix, local_metadata, strict, missing, unexpected, error_msgs):
        error_msgs.append(f"{prefix}: checkpoint too old")

    ours._register_load_state_dict_pre_hook(refuse)
    theirs._register_load_state_dict_pre_hook(refuse)
    state = {k: to_numpy(v) for k, v in theirs.state_dict().items()}
    with pytest.raises(RuntimeError, match="checkpoint too old"):
        theirs.load_state_dict(theirs.state_dict())
    with pytest.raises(dl.CheckpointError, match="load_state_dict into Sequential: "
                                                 ": checkpoint too old"):
        ours.load_state_dict(state)


def test_rename_maps_prefixes_and_reports_what_it_renamed():
    ours, theirs = _pair()
    wrapped = {f"module.{k}": to_numpy(v) for k, v in theirs.state_dict().items()}
    result = ours.load_state_dict(wrapped, rename={"module.": ""})
    assert result.renamed == {k: k.removeprefix("module.") for k in wrapped}
    missing, unexpected = result  # still torch's pair
    assert missing == unexpected == []
    assert_same_state(ours, theirs)
    with pytest.raises(KeyError, match="rename entries \\['encoder.'\\] match no key"):
        ours.load_state_dict(wrapped, rename={"encoder.": ""})
