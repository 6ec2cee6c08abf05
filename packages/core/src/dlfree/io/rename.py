"""Renaming state-dict keys on load (`rename=`), for checkpoints saved under other names.

`{"module.": ""}` drops the prefix `DataParallel` adds; `{"fc": "head"}` moves one layer.
An entry matches a key equal to it or a key it prefixes up to a dot, so `"fc"` renames
`fc.weight` but not `fc2.weight`; the longest matching entry wins.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping


def _matches(old: str, key: str) -> bool:
    return key == old or (key.startswith(old) and (old.endswith(".") or old == ""
                                                   or key[len(old)] == "."))


def rename_keys(keys, rename: Mapping[str, str], what: str) -> dict[str, str]:
    """{old key: new key} for each of `keys` that an entry of `rename` matches. An entry
    that matches no key, or two keys renamed onto one name, is a `KeyError` naming it."""
    if not isinstance(rename, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in rename.items()):
        raise TypeError(f"{what}: rename must map old key names (or prefixes) to new ones, "
                        f"str to str, got {rename!r}")
    renamed: dict[str, str] = {}
    used = set()
    for key in keys:
        entries = [old for old in rename if _matches(old, key)]
        if entries:
            old = max(entries, key=len)
            used.add(old)
            renamed[key] = rename[old] + key[len(old):]
    unused = [old for old in rename if old not in used]
    if unused:
        raise KeyError(f"{what}: rename entries {unused} match no key; the keys are "
                       f"{sorted(keys)[:8]}{' ...' if len(keys) > 8 else ''}")
    counts = Counter(renamed.get(k, k) for k in keys)
    clashes = sorted(name for name, n in counts.items() if n > 1)
    if clashes:
        raise KeyError(f"{what}: rename gives several keys the name(s) {clashes}")
    return renamed


def apply_rename(state: Mapping, rename: Mapping[str, str] | None, what: str
                 ) -> tuple[dict, dict[str, str]]:
    """`state` with its keys renamed, and the renames made ({old: new})."""
    if rename is None:
        return dict(state), {}
    renamed = rename_keys(list(state), rename, what)
    return {renamed.get(k, k): v for k, v in state.items()}, renamed
