"""Store fixtures: repositories over a real wire server (SecantusDB in-process or MONGODB_URI)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest

from socialrec_pipeline.store import Store

T0 = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)


def h(hours: float) -> datetime:
    return T0 + timedelta(hours=hours)


def unique(prefix: str = "k") -> str:
    """Keys unique per call, so tests can share one module database."""
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


@pytest.fixture(scope="module")
def store(mongo_db) -> Store:
    s = Store(mongo_db)
    s.ensure_indexes()
    return s


@pytest.fixture
def empty_store(fresh_db) -> Store:
    s = Store(fresh_db)
    s.ensure_indexes()
    return s
