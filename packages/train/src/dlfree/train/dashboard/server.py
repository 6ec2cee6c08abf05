"""The dashboard's HTTP server: the standard library's ThreadingHTTPServer on a daemon
thread, serving the page at `/`, the run's events as Server-Sent Events at `/events`, and
all events so far as one JSON list at `/events.json`.

The standard library serves one page with a push stream well and adds no dependency; an
ASGI server would bring an event loop and a package for the same three routes. Each
connection gets its own thread (daemon threads: a page left open never holds up the
process), so a slow or vanished client delays nobody else.
"""

from __future__ import annotations

import errno
import socket
import threading
import urllib.parse
import warnings
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from .events import EventLog, event_json, sse_message

LOOPBACK = ("127.0.0.1", "localhost", "::1")
# A comment line sent on an idle stream this often (seconds), so that a page that went
# away is noticed (the write fails) and proxies keep the connection open.
KEEPALIVE_S = 10.0
# How long serve_forever waits between checks for shutdown: stopping the run waits for it.
POLL_S = 0.1
# How soon a browser's EventSource reconnects after the stream breaks (milliseconds).
RETRY_MS = 1000


def check_address(host, port) -> None:
    """Refuse a `host` that is not an address string and a `port` outside 0-65535."""
    if not isinstance(host, str) or not host:
        raise TypeError(f"Dashboard: host must be an address such as '127.0.0.1', got "
                        f"{host!r}")
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise ValueError(f"Dashboard: port must be a whole number from 0 (any free port) to "
                         f"65535, got {port!r}")


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    server_version = "dlfree-dashboard"

    def do_GET(self):  # noqa: N802 (the name http.server looks up)
        url = urllib.parse.urlsplit(self.path)
        if url.path in ("/", "/index.html"):
            self._send(self.server.page().encode("utf-8"), "text/html; charset=utf-8")
        elif url.path == "/events.json":
            events = ",".join(event_json(e) for e in self.server.log.after(0))
            self._send(f"[{events}]".encode(), "application/json")
        elif url.path == "/events":
            last_id = self._last_event_id(url.query)
            if last_id is not None:
                self._stream(last_id)
        else:
            self.send_error(HTTPStatus.NOT_FOUND, "no such page: the dashboard serves /, "
                            "/events and /events.json")

    def _send(self, body: bytes, content_type: str) -> None:
        self.send_response(HTTPStatus.OK)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)

    def _last_event_id(self, query: str) -> int | None:
        """Where the stream starts: after the Last-Event-ID a reconnecting EventSource sends,
        or the `since` query parameter; 0 (everything) without either."""
        raw = self.headers.get("Last-Event-ID") or \
            urllib.parse.parse_qs(query).get("since", ["0"])[0]
        try:
            value = int(raw)
            if value < 0:
                raise ValueError
        except ValueError:
            self.send_error(HTTPStatus.BAD_REQUEST, f"the last event id must be a whole "
                            f"number >= 0, got {raw!r}")
            return None
        return value

    def _stream(self, last_id: int) -> None:
        self.send_response(HTTPStatus.OK)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        log = self.server.log
        try:
            self.wfile.write(f"retry: {RETRY_MS}\n\n".encode())
            while True:
                events = log.wait_after(last_id, KEEPALIVE_S)
                if events:
                    self.wfile.write("".join(sse_message(e) for e in events).encode("utf-8"))
                    last_id = events[-1]["id"]
                elif log.closed:
                    return
                else:
                    self.wfile.write(b": keep-alive\n\n")
                self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            return  # the page went away: its thread ends, the run goes on

    def log_message(self, format, *args):
        """Requests are not logged: the training's own output stays readable."""


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address, log: EventLog, page):
        super().__init__(address, _Handler)
        self.log = log
        self.page = page


class _Server6(_Server):
    address_family = socket.AF_INET6


class DashboardServer:
    """Serves `log` and the page `page()` returns on `host`:`port` (0: a free port) from a
    daemon thread, once `start()` is called, until `stop()`. A host other than the loopback
    addresses must be given explicitly and is warned about: the page shows the run's
    configuration to anyone who can reach the port."""

    def __init__(self, log: EventLog, page, host: str = "127.0.0.1", port: int = 0):
        check_address(host, port)
        self.log = log
        self.page = page
        self.host, self.port = host, port
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """The page's address (with the port actually bound once started)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/"

    def start(self) -> str:
        """Bind and serve; returns the URL. A port already taken is an OSError that says so."""
        if self.host not in LOOPBACK:
            warnings.warn(f"Dashboard: serving on {self.host}, not only this machine: anyone "
                          "who can reach the port sees the run (its configuration included)",
                          stacklevel=3)
        server_type = _Server6 if ":" in self.host else _Server
        try:
            self._server = server_type((self.host, self.port), self.log, self.page)
        except OSError as e:
            if e.errno == errno.EADDRINUSE:
                raise OSError(e.errno, f"Dashboard: port {self.port} on {self.host} is in use "
                              "(another run's dashboard?); pass port=0 for a free port, or "
                              "another port") from None
            raise
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, args=(POLL_S,),
                                        name="dlfree-dashboard", daemon=True)
        self._thread.start()
        return self.url

    def stop(self) -> None:
        """Stop accepting connections and close the port; streams still open end once
        they have sent what the (closed) log holds."""
        if self._server is None:
            return
        self._server.shutdown()
        self._server.server_close()
        self._server = None
