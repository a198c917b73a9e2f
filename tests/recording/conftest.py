"""Fixtures for the recording services: a store on a fresh database, Redis, test generators."""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
import redis as redis_lib

from socialrec_pipeline.store import Store

_B58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"


def make_address(seed: int | None = None) -> str:
    rng = random.Random(seed)
    return "".join(rng.choice(_B58) for _ in range(44))


@pytest.fixture
def store(fresh_db) -> Store:
    s = Store(fresh_db)
    s.ensure_indexes()
    return s


@pytest.fixture
def redis_client(redis_url) -> Iterator[redis_lib.Redis]:
    client = redis_lib.Redis.from_url(redis_url)
    yield client
    client.close()


@pytest.fixture
def address() -> str:
    return make_address()


class Clock:
    """A controllable UTC clock."""

    def __init__(self, start: datetime | None = None) -> None:
        self.now = start or datetime(2026, 11, 30, 12, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


_counter = itertools.count()
