"""The loopback stand-ins' fault API: tests queue and clear faults without touching internals."""

from __future__ import annotations

import socket
import struct
import time

import httpx
import pytest

from socialrec_pipeline.sandbox.fixture_server import Faults, FixtureServer, Reply
from socialrec_pipeline.sandbox.soltracker import SolTrackerFixture, upstream_token

ADDRESS = "7GCihgDB8fe6KNjn2MYtkzZcRjQy3t9GHdC8uHYmW2hr"


@pytest.fixture
def server():
    with FixtureServer() as s:
        s.route("GET", "/a", Reply.json({"ok": "a"}))
        s.route("GET", "/b", Reply.json({"ok": "b"}))
        yield s


def statuses(server: FixtureServer, path: str, n: int) -> list[int]:
    with httpx.Client(base_url=server.url, timeout=5) as client:
        return [client.get(path).status_code for _ in range(n)]


def test_a_fault_answers_the_next_calls_then_the_route_answers_again(server):
    server.fail_with(Reply.json({"message": "down"}, status=503), times=2)
    assert statuses(server, "/a", 3) == [503, 503, 200]
    assert len(server.calls("/a")) == 3  # faulted calls are logged like the others


def test_a_fault_can_be_scoped_to_a_path_prefix(server):
    server.fail_with(Reply.json({}, status=500), path_prefix="/b")
    assert statuses(server, "/a", 1) == [200]
    assert statuses(server, "/b", 2) == [500, 200]


def test_clear_faults_drops_the_unused_ones_and_says_how_many(server):
    server.fail_with(Reply.json({}, status=503), times=5)
    assert statuses(server, "/a", 1) == [503]
    assert server.clear_faults() == 4
    assert statuses(server, "/a", 1) == [200]


def test_failing_clears_its_faults_on_exit_even_when_the_block_raises(server):
    with pytest.raises(RuntimeError), server.failing(Reply.json({}, status=503), times=10):
        assert statuses(server, "/a", 1) == [503]
        raise RuntimeError("the test failed half-way")
    assert statuses(server, "/a", 1) == [200]


def test_clear_also_drops_faults(server):
    server.fail_with(Reply.json({}, status=503))
    server.clear()
    server.route("GET", "/a", Reply.json({}))
    assert statuses(server, "/a", 1) == [200]


def test_times_must_be_positive():
    with pytest.raises(ValueError):
        Faults().add(Reply(), times=0)


def test_soltracker_faults_come_after_the_key_check_and_clear_on_exit():
    soltracker = SolTrackerFixture([upstream_token(ADDRESS)], api_key="k")
    with FixtureServer() as server, httpx.Client(base_url=server.url, timeout=5) as client:
        soltracker.install(server)
        path = f"/api/v1/tokens/{ADDRESS}"
        with soltracker.failing(Reply.json({"message": "down"}, status=503), times=3):
            assert client.get(path).status_code == 401  # a wrong key is refused; the fault stays queued
            assert client.get(path, headers={"x-api-key": "k"}).status_code == 503
        assert client.get(path, headers={"x-api-key": "k"}).status_code == 200
        soltracker.fail_with(Reply.json({}, status=500), times=2)
        assert soltracker.clear_faults() == 2
        assert client.get(path, headers={"x-api-key": "k"}).status_code == 200


def _wait_for(condition, timeout_s: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return condition()


def _reset_midway(server: FixtureServer, sent: bytes) -> None:
    """Send part of a request, then close with RST (SO_LINGER 0): a caller that gave up."""
    host, port = server.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        sock.sendall(sent)
        time.sleep(0.05)  # the server is reading the rest when the reset arrives
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


def test_a_client_that_hangs_up_is_counted_not_printed_as_a_traceback(server, capsys):
    _reset_midway(server, b"GET /a HTT")
    assert _wait_for(lambda: server.client_hangups == 1)
    assert "Traceback" not in capsys.readouterr().err
    assert statuses(server, "/a", 1) == [200]  # the server goes on answering


def test_an_error_that_is_not_a_hangup_is_still_printed(server, capsys):
    host, port = server.url.removeprefix("http://").split(":")
    printed: list[str] = []
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        sock.sendall(b"POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: many\r\n\r\n")
        assert _wait_for(lambda: printed.append(capsys.readouterr().err) or "ValueError" in "".join(printed))
    assert "Traceback" in "".join(printed)
    assert server.client_hangups == 0
