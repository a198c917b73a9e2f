"""Fixtures every provider test module shares: one loopback fixture server per module."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from socialrec_pipeline.sandbox.fixture_server import FixtureServer


@pytest.fixture(scope="module")
def server() -> Iterator[FixtureServer]:
    with FixtureServer() as srv:
        yield srv
