"""Issue 19 defect 7: SolTracker's 5 s bounds the whole call (SPEC §2.2), not each network read,
and a compressed body is bounded by its decoded size while it is decoded.

The server here is a raw loopback socket, so it can do what a well-behaved HTTP server never
does: send its headers or its body a byte at a time, or a small gzip body that inflates to 64 MiB."""

from __future__ import annotations

import gzip
import json
import socket
import threading
import time
import tracemalloc
import zlib
from collections.abc import Callable

import pytest

from socialrec_pipeline.recording.soltracker import SolTrackerClient, UpstreamShapeError, UpstreamUnavailable
from socialrec_pipeline.sandbox.soltracker import upstream_token

ADDRESS = "7GCihgDB8fe6KNjn2MYtkzZcRjQy3t9GHdC8uHYmW2hr"
BODY = json.dumps(upstream_token(ADDRESS, website="https://pop.example")).encode()
#: A pause between two bytes far below the client's timeout: no single read ever times out.
DRIP_PAUSE_S = 0.05
#: The client's whole-call timeout in these tests (the product's is 5 s).
TIMEOUT_S = 0.5


class RawServer:
    """Accepts connections on loopback and runs `script(conn)` for each request, noting whether
    the script got to send everything (`completed`) or found the client gone."""

    def __init__(self, script: Callable[[socket.socket], None]) -> None:
        self.script = script
        self.completed: list[bool] = []
        self._sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._sock.getsockname()[1]}"
        self._threads: list[threading.Thread] = []
        self._accept = threading.Thread(target=self._serve, daemon=True)
        self._accept.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            worker = threading.Thread(target=self._handle, args=(conn,), daemon=True)
            self._threads.append(worker)
            worker.start()

    def _handle(self, conn: socket.socket) -> None:
        with conn:
            request = b""
            while b"\r\n\r\n" not in request:
                chunk = conn.recv(4096)
                if not chunk:
                    return
                request += chunk
            try:
                self.script(conn)
                self.completed.append(True)
            except OSError:  # the client hung up before the script was done
                self.completed.append(False)

    def finish(self, wait_s: float = 10.0) -> None:
        for worker in self._threads:
            worker.join(wait_s)
        self._sock.close()


def drip(conn: socket.socket, data: bytes) -> None:
    for i in range(len(data)):
        conn.sendall(data[i : i + 1])
        time.sleep(DRIP_PAUSE_S)


def head(length: int, extra: str = "") -> bytes:
    return f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {length}\r\n{extra}\r\n".encode()


def dripped_body(conn: socket.socket) -> None:
    conn.sendall(head(len(BODY)))
    drip(conn, BODY)  # ~len(BODY) x 50 ms: several seconds, each byte well within a read timeout


def dripped_headers(conn: socket.socket) -> None:
    drip(conn, head(len(BODY), "X-Pad: " + "a" * 100 + "\r\n"))
    conn.sendall(BODY)


@pytest.mark.parametrize("script", [dripped_body, dripped_headers], ids=["body", "headers"])
def test_a_slowly_sent_answer_cannot_hold_a_call_past_the_timeout(script):
    """Before: each read waited at most the timeout, so a byte every 50 ms held the call for the
    whole answer (~24 s in the probe) and then returned it. Now the call fails as timed out and
    the server finds the connection gone before it could send everything."""
    assert len(BODY) * DRIP_PAUSE_S > 4 * TIMEOUT_S  # the answer takes far longer than the timeout
    server = RawServer(script)
    client = SolTrackerClient(server.url, "k", timeout_s=TIMEOUT_S)
    try:
        with pytest.raises(UpstreamUnavailable, match="timed out"):
            client.get_token(ADDRESS)
    finally:
        client.close()
        server.finish()
    assert server.completed == [False]


def test_an_answer_within_the_timeout_still_arrives_whole():
    server = RawServer(lambda conn: conn.sendall(head(len(BODY)) + BODY))
    client = SolTrackerClient(server.url, "k", timeout_s=TIMEOUT_S)
    try:
        assert client.get_token(ADDRESS).website == "https://pop.example"
        assert client.get_token(ADDRESS).address == ADDRESS  # one connection per call, and again
    finally:
        client.close()
        server.finish()
    assert server.completed == [True, True]


BOUND = 1024 * 1024
INFLATED = 64 * 1024 * 1024


@pytest.fixture(scope="module")
def bombs() -> dict[str, bytes]:
    zeros = b"\0" * INFLATED
    return {"gzip": gzip.compress(zeros, 9), "deflate": zlib.compress(zeros, 9)}


@pytest.mark.parametrize("coding", ["gzip", "deflate"])
def test_a_compression_bomb_is_refused_before_it_is_inflated(bombs, coding):
    """A ~64 KiB body that inflates to 64 MiB, against a 1 MiB bound. Before: httpx inflated each
    network chunk whole, so the bound was checked only after tens of MiB were in memory (142 MiB in
    the probe). Now the decoder never produces more than the bound: the refusal comes with the
    process's peak allocation near the bound, not near the inflated size."""
    bomb = bombs[coding]
    server = RawServer(lambda conn: conn.sendall(head(len(bomb), f"Content-Encoding: {coding}\r\n") + bomb))
    client = SolTrackerClient(server.url, "k", max_body_bytes=BOUND)
    tracemalloc.start()
    try:
        with pytest.raises(UpstreamShapeError, match=f"over {BOUND} bytes refused"):
            client.get_token(ADDRESS)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        client.close()
        server.finish()
    assert peak < 8 * BOUND, f"peak {peak} bytes"  # the inflated body is 64 x the bound


def test_a_compressed_answer_is_decoded_and_an_unrequested_coding_refused():
    packed = gzip.compress(BODY)
    gz = RawServer(lambda conn: conn.sendall(head(len(packed), "Content-Encoding: gzip\r\n") + packed))
    br = RawServer(lambda conn: conn.sendall(head(len(BODY), "Content-Encoding: br\r\n") + BODY))
    try:
        with SolTrackerClient(gz.url, "k") as client:
            assert client.get_token(ADDRESS).website == "https://pop.example"
        with SolTrackerClient(br.url, "k") as client, pytest.raises(UpstreamShapeError, match="'br' refused"):
            client.get_token(ADDRESS)
    finally:
        gz.finish()
        br.finish()
