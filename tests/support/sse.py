"""A plain HTTP client for the dashboard's Server-Sent Events stream (no browser, no SSE
library): the oracle that the stream is framed as the SSE standard says."""

from __future__ import annotations

import contextlib
import http.client
import json
import urllib.parse


@contextlib.contextmanager
def stream(url: str, path: str = "/events", headers: dict | None = None, timeout: float = 10):
    """The open response for `path` on the server at `url`, closed afterwards."""
    parts = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout)
    try:
        conn.request("GET", path, headers=headers or {})
        with conn.getresponse() as response:
            yield response
    finally:
        conn.close()


def messages(response):
    """The SSE messages of a streaming response, as dicts of their fields ("id", "data",
    ...; several data lines joined by newlines), until the stream ends. Comment lines
    (starting with ":") and the "retry" field are read and passed over, as a browser does."""
    fields: dict[str, str] = {}
    while True:
        line = response.readline()
        if not line:
            return
        line = line.decode("utf-8").rstrip("\r\n")
        if not line:
            if "data" in fields:
                yield fields
            fields = {}
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "data" and "data" in fields:
            fields["data"] += "\n" + value
        elif name != "retry":
            fields[name] = value


def events(response, count: int | None = None) -> list[dict]:
    """The events (parsed data, with the SSE id checked against the event's) of a stream,
    `count` of them or all until it ends."""
    found = []
    for message in messages(response):
        event = json.loads(message["data"])
        assert int(message["id"]) == event["id"], message
        found.append(event)
        if count is not None and len(found) == count:
            break
    return found
