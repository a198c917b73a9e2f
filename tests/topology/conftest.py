"""A PostgreSQL of the project's own (scripts/postgres.sh) and a fresh database per test."""

from __future__ import annotations

import os
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BINARIES_ABSENT = 3  # scripts/postgres.sh: no server binaries on this machine


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """`SOCIALREC_TEST_POSTGRES_URL` when set, else the helper's server (started if it is not up,
    and then stopped again when the session ends, so no server outlives the tests that started it).

    Skipped only when the machine has no PostgreSQL server binaries; .ci/run starts the server,
    so in CI the topology tests always run.
    """
    url = os.environ.get("SOCIALREC_TEST_POSTGRES_URL")
    if url:
        yield url
        return
    script = ROOT / "scripts" / "postgres.sh"
    was_running = subprocess.run(["bash", str(script), "status"], capture_output=True, timeout=60).returncode == 0
    started = subprocess.run(["bash", str(script), "start"], capture_output=True, text=True, timeout=120)
    if started.returncode == BINARIES_ABSENT:
        pytest.skip(f"PostgreSQL server binaries are absent: {started.stderr.strip()}")
    assert started.returncode == 0, f"scripts/postgres.sh start failed: {started.stderr}"
    try:
        yield subprocess.run(["bash", str(script), "url"], capture_output=True, text=True, check=True).stdout.strip()
    finally:
        if not was_running:
            subprocess.run(["bash", str(script), "stop"], capture_output=True, timeout=120)


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
