"""Unknown-name errors suggest each close registered name once (issue 21: "did you mean
roberta, roberta?"), the ones equal but for case first."""

from __future__ import annotations

import re

import dlfree as dl

import pytest


def _suggestions(registry, name: str) -> list[str]:
    with pytest.raises(dl.PluginError) as info:
        registry.get(name)
    found = re.search(r"did you mean (.*?)\?", str(info.value))
    return found.group(1).split(", ") if found else []


@pytest.mark.parametrize("kind", ["layers", "optimizers", "architectures", "losses"])
def test_each_suggestion_is_named_once(kind):
    registry = getattr(dl.registry, kind)
    for name in registry.names():
        for wrong in (name.upper(), name.title(), name + name[-1], name[:-1] + "_"):
            if wrong in registry.names():
                continue
            suggested = _suggestions(registry, wrong)
            assert len(suggested) == len(set(suggested)), (wrong, suggested)
            if wrong.lower() == name.lower():
                assert suggested[0].lower() == name.lower(), (wrong, suggested)
