"""The dashboard's server: the page and the Server-Sent Events stream read by a plain HTTP
client (support.sse), two clients at once, a client gone mid-stream, malformed requests,
a port already taken, the host rule, and the server stopping with the run."""

from __future__ import annotations

import io
import json
import socket
import struct
import threading
import time
import urllib.error
import urllib.request

from dlfree.train import Monitor
from dlfree.train.dashboard import DashboardServer, EventLog

import pytest

from support import sse


@pytest.fixture
def monitor():
    """A Monitor serving on a free loopback port, without resource sampling."""
    out = io.StringIO()
    m = Monitor(port=0, resources=False, file=out, title="server test", config={"lr": 0.1})
    m.printed = out.getvalue()
    yield m
    m.finish()


def _port(monitor) -> int:
    return int(monitor.url.rsplit(":", 1)[1].rstrip("/"))


def _read_all(s: socket.socket) -> bytes:
    chunks = []
    while chunk := s.recv(4096):
        chunks.append(chunk)
    return b"".join(chunks)


def test_the_url_is_printed_once_and_serves_the_page(monitor):
    assert monitor.printed == f"dashboard: {monitor.url}\n"
    assert monitor.url.startswith("http://127.0.0.1:") and not monitor.url.endswith(":0/")
    with urllib.request.urlopen(monitor.url, timeout=10) as response:
        page = response.read().decode()
        assert response.headers["Content-Type"] == "text/html; charset=utf-8"
    assert "<title>server test</title>" in page
    assert 'new EventSource("events")' in page
    assert "http" not in page.replace(monitor.url, "")  # nothing is loaded from elsewhere


def test_the_stream_back_fills_every_past_event_then_goes_on_live(monitor):
    for step in range(1, 4):
        monitor.log(step, loss=1.0 / step)
    with sse.stream(monitor.url) as response:
        assert response.status == 200
        assert response.headers["Content-Type"] == "text/event-stream; charset=utf-8"
        past = sse.events(response, len(monitor.events))
        monitor.log(4, loss=0.25)
        live = sse.events(response, 1)[0]
    assert [e["id"] for e in past] == list(range(1, len(past) + 1))
    assert past[0] == {"id": 1, "kind": "config", "title": "server test", "config": {"lr": 0.1}}
    assert [(e["step"], e["value"]) for e in past if e["kind"] == "point"] == \
        [(1, 1.0), (2, 0.5), (3, 1 / 3)]
    assert (live["kind"], live["name"], live["step"], live["value"]) == ("point", "loss", 4, 0.25)


def test_a_reconnect_resumes_after_its_last_event_id(monitor):
    for step in range(1, 6):
        monitor.log(step, loss=float(step))
    total = len(monitor.events)
    with sse.stream(monitor.url, headers={"Last-Event-ID": "4"}) as response:
        resumed = sse.events(response, total - 4)
    assert [e["id"] for e in resumed] == list(range(5, total + 1))
    with sse.stream(monitor.url, path=f"/events?since={total - 1}") as response:
        assert [e["id"] for e in sse.events(response, 1)] == [total]


def test_two_clients_get_the_same_stream_at_once(monitor):
    got: list[list[dict]] = [[], []]
    connected = threading.Barrier(3)

    def read(i):
        with sse.stream(monitor.url) as response:
            connected.wait()
            got[i] = sse.events(response)  # until the run ends

    readers = [threading.Thread(target=read, args=(i,)) for i in range(2)]
    for reader in readers:
        reader.start()
    connected.wait(10)
    for step in range(1, 21):
        monitor.log(step, loss=float(step))
    monitor.finish()
    for reader in readers:
        reader.join(10)
        assert not reader.is_alive()
    assert got[0] == got[1] == monitor.events.after(0)
    assert got[0][-1]["kind"] == "end" and got[0][-1]["status"] == "finished"


def _handler_threads() -> int:
    return sum("process_request_thread" in t.name for t in threading.enumerate())


def test_a_client_that_disconnects_mid_stream_harms_nobody(monitor):
    before = _handler_threads()
    client = socket.create_connection(("127.0.0.1", _port(monitor)), 10)
    client.sendall(b"GET /events HTTP/1.1\r\nHost: x\r\n\r\n")
    assert b"text/event-stream" in client.recv(4096)
    assert _handler_threads() == before + 1
    # a reset, not a polite close: the server's next writes to it fail
    client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    client.close()
    for step in range(1, 50):
        monitor.log(step, loss=float(step), lr=0.1)
    deadline = time.monotonic() + 10
    while _handler_threads() > before and time.monotonic() < deadline:
        time.sleep(0.02)
    assert _handler_threads() == before  # its thread ended
    with sse.stream(monitor.url) as response:
        assert len(sse.events(response, len(monitor.events))) == len(monitor.events)


def test_malformed_requests_get_a_clear_status(monitor):
    for request, answer in (
            (b"NOT A REQUEST\r\n\r\n", b"Error code: 400"),  # (an HTTP/0.9 reply: no headers)
            (b"GET / HTTP/1.1\r\n" + b"X: y\r\n" * 101 + b"\r\n", b"HTTP/1.0 431")):
        with socket.create_connection(("127.0.0.1", _port(monitor)), 10) as s:
            s.sendall(request)
            assert answer in _read_all(s)
    for path, status in (("/nowhere", 404), ("/events?since=-3", 400),
                         ("/events?since=abc", 400)):
        with pytest.raises(urllib.error.HTTPError) as caught:
            urllib.request.urlopen(monitor.url.rstrip("/") + path, timeout=10)
        caught.value.close()
        assert caught.value.code == status, path
    request = urllib.request.Request(monitor.url, data=b"x", method="POST")
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(request, timeout=10)
    caught.value.close()
    assert caught.value.code == 501
    with urllib.request.urlopen(monitor.url, timeout=10) as response:  # still serving
        assert response.status == 200


def test_events_json_lists_everything_so_far(monitor):
    monitor.log(1, loss=float("nan"))
    monitor.note("hello")
    with urllib.request.urlopen(monitor.url + "events.json", timeout=10) as response:
        listed = json.loads(response.read())
    assert [e["kind"] for e in listed] == ["config", "point", "progress", "note"]
    assert listed[1]["value"] is None  # NaN: strict JSON has none, so null


def test_a_second_run_on_a_taken_port_is_a_clear_error_and_a_freed_port_is_reusable(monitor):
    port = _port(monitor)
    with pytest.raises(OSError, match=rf"port {port} on 127.0.0.1 is in use .*port=0"):
        Monitor(port=port, resources=False, file=io.StringIO())
    monitor.finish()
    again = Monitor(port=port, resources=False, file=io.StringIO())
    assert again.url == monitor.url
    again.finish()


def test_the_server_stops_with_the_run(monitor):
    with sse.stream(monitor.url) as response:
        monitor.log(1, loss=1.0)
        started = time.perf_counter()
        monitor.finish("done here")
        streamed = sse.events(response)  # the stream ends after the last event
    assert streamed[-1]["kind"] == "end" and streamed[-1]["status"] == "done here"
    assert time.perf_counter() - started < 2
    with pytest.raises(OSError):
        urllib.request.urlopen(monitor.url, timeout=2)
    with pytest.raises(RuntimeError, match="has finished"):
        monitor.log(2, loss=1.0)


def test_only_loopback_unless_told_and_then_a_warning():
    log = EventLog()
    assert DashboardServer(log, str).host == "127.0.0.1"
    server = DashboardServer(log, str, host="0.0.0.0", port=0)
    with pytest.warns(UserWarning, match="serving on 0.0.0.0, not only this machine"):
        server.start()
    server.stop()
    with pytest.raises(ValueError, match="port must be a whole number from 0"):
        DashboardServer(log, str, port=70000)
    with pytest.raises(TypeError, match="host must be an address"):
        DashboardServer(log, str, host=None)


def test_the_event_log_numbers_events_and_refuses_after_close():
    log = EventLog()
    assert log.append("note", text="a") == 1
    assert log.append("point", name="x", step=1, value=2.0) == 2
    assert log.after(1) == [{"id": 2, "kind": "point", "name": "x", "step": 1, "value": 2.0}]
    assert log.wait_after(2, 0.01) == []
    with pytest.raises(ValueError, match="kind must be one of config, point"):
        log.append("points")
    log.close()
    assert log.wait_after(2, 10) == []  # wakes at once on a closed log
    with pytest.raises(RuntimeError, match="the log is closed"):
        log.append("note", text="late")
