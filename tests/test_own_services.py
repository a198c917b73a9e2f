"""The helpers that start a test's or bench's own servers pick ports a server can really bind, and
report a server that died while starting at once, with its log."""

from __future__ import annotations

import socket
import sys
import threading
import time

import pytest

from bench.own_services import OwnService, start_on_free_port
from tests.ports import free_port_base


class _ExitsAtOnce(OwnService):
    name = "exits-at-once"
    start_timeout = 60.0

    def command(self) -> list[str]:
        return [sys.executable, "-c", "import sys; print('cannot bind: Address already in use'); sys.exit(1)"]

    def ready(self) -> bool:
        return False


def test_a_server_that_exits_while_starting_fails_at_once_with_its_log(tmp_path):
    started = time.monotonic()
    with pytest.raises(RuntimeError, match="exited while starting.*Address already in use"):
        _ExitsAtOnce(free_port_base(1), workdir=str(tmp_path)).start()
    assert time.monotonic() - started < _ExitsAtOnce.start_timeout / 2  # not the whole start timeout


def test_a_port_taken_between_the_probe_and_the_bind_moves_on_to_the_next(tmp_path):
    base = free_port_base(3)
    made: list[int] = []

    def make(port: int) -> OwnService:
        made.append(port)
        return _ExitsAtOnce(port, workdir=str(tmp_path)) if port == base else _Listens(port, workdir=str(tmp_path))

    server = start_on_free_port(make, range(base, base + 3), "a server")
    try:
        assert made == [base, base + 1] and server.port == base + 1 and server.running
    finally:
        server.stop()


class _Listens(OwnService):
    name = "listens"

    def command(self) -> list[str]:
        code = f"import socket,time; s=socket.socket(); s.bind(('127.0.0.1',{self.port})); s.listen(); time.sleep(60)"
        return [sys.executable, "-c", code]

    def ready(self) -> bool:
        with socket.create_connection(("127.0.0.1", self.port), timeout=1):
            return True


class _LosesTheBind(OwnService):
    """A server that lost its port to another process: it waits a moment, then exits as one that
    cannot bind does; meanwhile the other process answers on the port."""

    name = "loses-the-bind"

    def command(self) -> list[str]:
        return [sys.executable, "-c", "import sys,time; time.sleep(2); print('Address already in use'); sys.exit(1)"]

    def ready(self) -> bool:
        with socket.create_connection(("127.0.0.1", self.port), timeout=1):
            return True


def test_a_port_answered_by_another_process_is_not_taken_for_our_server(tmp_path):
    port = free_port_base(1)
    other = socket.socket()
    opened = threading.Event()

    def listen_soon() -> None:  # after the start's own probe found the port free
        time.sleep(0.3)
        other.bind(("127.0.0.1", port))
        other.listen()
        opened.set()

    threading.Thread(target=listen_soon, daemon=True).start()
    try:
        with pytest.raises(RuntimeError, match="exited while starting"):
            _LosesTheBind(port, workdir=str(tmp_path)).start()
        assert opened.is_set()  # the other process did answer on the port all along
    finally:
        other.close()
