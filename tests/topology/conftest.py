"""A PostgreSQL of the project's own (scripts/postgres.sh) and a fresh database per test."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest

from tests.postgres_server import BINARIES_ABSENT, ensure_started


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """`SOCIALREC_TEST_POSTGRES_URL` when set, else the helper's server: started if it is not up, and
    stopped again when the test run ends, so no server outlives the tests that started it (one server
    for every pytest worker: tests/postgres_server.py).

    Skipped only when the machine has no PostgreSQL server binaries; .ci/run starts the server,
    so in CI the topology tests always run.
    """
    url = os.environ.get("SOCIALREC_TEST_POSTGRES_URL")
    if url:
        yield url
        return
    code, detail = ensure_started()
    if code == BINARIES_ABSENT:
        pytest.skip(f"PostgreSQL server binaries are absent: {detail}")
    assert code == 0, f"scripts/postgres.sh start failed: {detail}"
    yield detail


@pytest.fixture
def postgres_db(postgres_server) -> Iterator[dict]:
    """A database of the test's own on that server, dropped afterwards (connection parts as a dict)."""
    import psycopg2
    from psycopg2.extensions import parse_dsn

    parts = parse_dsn(postgres_server)
    name = f"dagster_t_{uuid.uuid4().hex[:10]}"
    admin = psycopg2.connect(postgres_server, connect_timeout=10)
    admin.autocommit = True
    with admin.cursor() as cur:
        cur.execute(f'CREATE DATABASE "{name}"')
    try:
        yield {
            "host": parts.get("host", "127.0.0.1"),
            "port": int(parts.get("port", 5432)),
            "user": parts.get("user", "postgres"),
            "password": parts.get("password") or "unused-with-trust-auth",
            "db": name,
        }
    finally:
        with admin.cursor() as cur:
            cur.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.close()
