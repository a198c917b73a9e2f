"""Fixtures for the Dagster shell: per-test queues on the real broker, resources on real servers."""

from __future__ import annotations

import dagster as dg
import pytest

from socialrec_pipeline.defs.resources import MongoResource, RabbitMQResource, RecordingSettingsResource
from tests.broker import QUALIFYING_ADDRESSES, Broker, flow

from .jobs_fixtures import start_fixtures

__all__ = ["QUALIFYING_ADDRESSES", "Broker", "flow"]

@pytest.fixture
def stream_resources(mongo_uri, fresh_db, broker) -> dict:
    return {
        "mongo": MongoResource(uri=mongo_uri, database=fresh_db.name),
        "rabbitmq": RabbitMQResource(url=broker.url, env=broker.env, exchange=broker.exchange),
        "recording": RecordingSettingsResource(),
    }


@pytest.fixture(scope="module")
def instance():
    """One ephemeral Dagster instance per test module."""
    with dg.DagsterInstance.ephemeral() as inst:
        yield inst


@pytest.fixture(scope="module")
def fixtures():
    """Loopback stand-ins (SolTracker + platforms) per module; a module may override it with tokens."""
    server, soltracker = start_fixtures()
    yield server, soltracker
    server.stop()
