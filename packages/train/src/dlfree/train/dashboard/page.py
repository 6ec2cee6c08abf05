"""The dashboard's one page (`page.html` beside this file: markup, style and script, nothing
loaded from elsewhere), live or frozen: the frozen page carries the run's events inside it
and draws them without a server."""

from __future__ import annotations

import html
from functools import cache
from importlib import resources

from .events import event_json

TITLE_MARK = "{{title}}"
FROZEN_MARK = "<!--frozen-events-->"


@cache
def _template() -> str:
    return resources.files(__package__).joinpath("page.html").read_text(encoding="utf-8")


def render_page(title: str, frozen: list[dict] | None = None) -> str:
    """The page headed `title`; with `frozen` (events, in order), the report that replays
    them instead of connecting to a server."""
    page = _template().replace(TITLE_MARK, html.escape(title))
    if frozen is None:
        return page
    # "</" inside the JSON would end the script element early
    events = "[" + ",".join(event_json(e) for e in frozen) + "]"
    script = ('<script type="application/json" id="frozen-events">'
              + events.replace("</", "<\\/") + "</script>")
    return page.replace(FROZEN_MARK, script)
