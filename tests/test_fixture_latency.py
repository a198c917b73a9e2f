"""The stand-ins' latency option (bench/burst.py --latency-ms): every answer waits that long."""

from __future__ import annotations

import time

import httpx

from socialrec_pipeline.sandbox.fixture_server import FixtureServer, Reply


def timed_get(server: FixtureServer) -> float:
    server.route("GET", "/ping", Reply.json({"ok": True}))
    with httpx.Client(timeout=5) as client:
        client.get(f"{server.url}/ping")  # connection set up outside the timing
        started = time.perf_counter()
        assert client.get(f"{server.url}/ping").json() == {"ok": True}
        return time.perf_counter() - started


def test_a_stand_in_answers_after_its_latency():
    with FixtureServer(latency_ms=300) as slow:
        assert timed_get(slow) >= 0.3
