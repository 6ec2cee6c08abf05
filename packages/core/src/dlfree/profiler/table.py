"""`profile.table()`: the per-name rows as aligned text, with the unattributed time and a total."""

from __future__ import annotations

SORT_KEYS = {
    "self_time": lambda row: row.self_time,
    "total_time": lambda row: row.total_time,
    "calls": lambda row: row.calls,
    "memory": lambda row: row.self_memory,
    "total_memory": lambda row: row.total_memory,
    "self_device_time": lambda row: row.self_device_time or 0.0,
    "device_time": lambda row: row.device_time or 0.0,
}

_NAME_WIDTH = 48  # longer names are cut, so that one long range name does not widen every row


def format_bytes(n: int) -> str:
    """`n` bytes in B, KiB, MiB or GiB, one decimal above bytes."""
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if abs(n) >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"


def check_sort(sort_by: str, row_limit, profile_memory: bool) -> None:
    if sort_by not in SORT_KEYS:
        raise ValueError(f"table: unknown sort_by={sort_by!r}; valid: "
                         + ", ".join(repr(k) for k in SORT_KEYS))
    if sort_by.endswith("memory") and not profile_memory:
        raise ValueError(f"table: sort_by={sort_by!r} needs memory, which this profile did not "
                         "record; use profile(profile_memory=True)")
    if row_limit is not None and (isinstance(row_limit, bool) or not isinstance(row_limit, int)
                                  or row_limit < 1):
        raise ValueError(f"table: row_limit must be a positive int or None (all rows), "
                         f"got {row_limit!r}")


def format_table(rows, wall_time: float, attributed: float, sort_by: str, row_limit,
                 memory: bool, shapes: bool) -> str:
    """The rows sorted by `sort_by` (descending), at most `row_limit`, then the time spent
    outside every recorded event (`wall_time - attributed`, seconds) and the total."""
    ordered = sorted(rows, key=SORT_KEYS[sort_by], reverse=True)
    shown = ordered if row_limit is None else ordered[:row_limit]
    device = any(row.device_time is not None for row in rows)

    def percent(seconds: float) -> str:
        return f"{100 * seconds / wall_time:.1f}%" if wall_time > 0 else "-"

    header = ["Name", "Kind", "Calls", "Self ms", "Self %", "Total ms", "Total %"]
    if memory:
        header += ["Self mem", "Total mem"]
    if device:
        header += ["Device self ms", "Device total ms"]
    if shapes:
        header += ["Input shapes"]
    lines = []
    for row in shown:
        name = row.name if len(row.name) <= _NAME_WIDTH else row.name[:_NAME_WIDTH - 3] + "..."
        cells = [name, row.kind, str(row.calls), f"{row.self_time * 1e3:.3f}",
                 percent(row.self_time), f"{row.total_time * 1e3:.3f}", percent(row.total_time)]
        if memory:
            cells += [format_bytes(row.self_memory), format_bytes(row.total_memory)]
        if device:
            cells += ["-" if row.device_time is None else f"{t * 1e3:.3f}"
                      for t in (row.self_device_time, row.device_time)]
        if shapes:
            cells += [_shapes(row.input_shapes)]
        lines.append(cells)
    outside = wall_time - attributed
    blank = [""] * (len(header) - 5)
    footer = [["[outside ops and ranges]", "", "", f"{outside * 1e3:.3f}", percent(outside)]
              + blank,
              ["Total (profiled wall time)", "", "", f"{wall_time * 1e3:.3f}", percent(wall_time)]
              + blank]
    widths = [max(len(cells[i]) for cells in [header, *lines, *footer])
              for i in range(len(header))]
    left = {0, 1, len(header) - 1} if shapes else {0, 1}

    def render(cells) -> str:
        return "  ".join(c.ljust(w) if i in left else c.rjust(w)
                         for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

    rule = "  ".join("-" * w for w in widths)
    out = [render(header), rule, *[render(cells) for cells in lines]]
    if len(shown) < len(ordered):
        out.append(f"... {len(ordered) - len(shown)} more rows (raise row_limit to see them)")
    out += [rule, *[render(cells) for cells in footer]]
    return "\n".join(out)


def _shapes(shapes) -> str:
    if shapes is None:
        return ""
    return "[" + ", ".join("None" if s is None else str(list(s)) for s in shapes) + "]"
