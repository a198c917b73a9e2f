"""Shared fixtures: real MongoDB-wire server, real Redis, real RabbitMQ (never mocks).

- Mongo: `MONGODB_URI` when set, else SecantusDB started in-process once per session.
  Every test module gets a fresh database (`mongo_db`).
- Redis: `REDIS_URL` (default redis://127.0.0.1:6379/0); keys are namespaced per test.
- RabbitMQ: `RABBITMQ_URL` (default amqp://guest:guest@127.0.0.1:5672/%2F).
"""

from __future__ import annotations

import os
import sys
import uuid
from collections.abc import Iterator, Mapping

import pytest
from hypothesis import HealthCheck, settings
from pymongo.database import Database

from socialrec_pipeline.store.client import open_client, open_database
from socialrec_pipeline.store.embedded import configured_or_embedded_mongo
from tests.broker import Broker
from tests.postgres_server import stop_if_started_by_this_run

# Op retry policies are built when `socialrec_pipeline.defs` is first imported, which happens after
# this file is read: the tests' steps retry back to back (the retries still happen, and are counted).
# Set it in the shell to run the suite with the production delays. Step processes inherit it.
os.environ.setdefault("SOCIALREC_STEP_RETRY_DELAY_S", "0")
# The deployed sensor listens up to 20 s on an empty queue; a test's tick on an empty queue ends at
# once (the listening itself is tested with limits of its own, tests/stream/test_drain.py).
os.environ.setdefault("SOCIALREC_SENSOR_LISTEN_SECONDS", "0")

# No per-example deadline: on a shared 2-core machine a slow example is load, not a bug (a routing
# property once failed on a deadline). CI also tolerates slow data generation, and prints the blob
# that reproduces a failure. Pick another with HYPOTHESIS_PROFILE.
settings.register_profile("dev", deadline=None)
settings.register_profile("ci", deadline=None, suppress_health_check=[HealthCheck.too_slow], print_blob=True)


def full_run(environ: Mapping[str, str]) -> bool:
    """CI=true: the full run (.ci/run), which also runs the tests too costly for the edit loop."""
    return environ.get("CI", "").strip().lower() in {"true", "1"}


def hypothesis_profile(environ: Mapping[str, str]) -> str:
    if environ.get("HYPOTHESIS_PROFILE"):
        return environ["HYPOTHESIS_PROFILE"]
    return "ci" if full_run(environ) else "dev"


settings.load_profile(hypothesis_profile(os.environ))

#: The `dev` profile (a local run) tries a fifth of the examples a property test asks for, at least 20;
#: `ci` (and any profile named with HYPOTHESIS_PROFILE) tries them all. Every property test still runs.
DEV_EXAMPLE_SHARE = 5


def examples(wanted: int, profile: str | None = None) -> int:
    """How many examples a property test written for `wanted` tries under the active profile."""
    if (profile or hypothesis_profile(os.environ)) != "dev":
        return wanted
    return max(wanted // DEV_EXAMPLE_SHARE, min(wanted, 20))

#: Libraries a test module imports where a test uses them, never at module level: every pytest-xdist
#: worker collects every module, so an import at collection is paid five times (dagster_graphql's
#: test utilities ~1.2 s of CPU, dagster-k8s with kubernetes' client ~0.5 s, per worker).
NOT_AT_COLLECTION = ("dagster_graphql", "dagster_k8s", "kubernetes")
#: Which of them this process had imported when its collection finished (tests/test_collection_cost.py).
IMPORTED_AT_COLLECTION: set[str] = set()


def pytest_collection_finish(session: pytest.Session) -> None:
    IMPORTED_AT_COLLECTION.update(name for name in NOT_AT_COLLECTION if name in sys.modules)


#: The markers of the tests only the full run (CI=true, as .ci/run sets it) runs, each with the reason
#: a local run prints when it skips one. Together they were ~2/5 of the local suite's CPU (~110 of
#: ~290 s on 2026-12-06; docs/benchmarks.md, Suite wall time); CI runs every one of them.
FULL_RUN_ONLY = {
    # A code server, daemon, webserver or run workers of its own, and runs in processes of their own.
    "deployment": "starts a whole deployment of its own: runs with CI=true (CI=true scripts/test.sh -m deployment)",
    # A bench run as a script with a breach planted: it checks the bench's meter, not the product.
    "bench_self_test": "a bench's --self-test: runs with CI=true (CI=true scripts/test.sh -m bench_self_test)",
}


def skip_outside_full_run(items: list, environ: Mapping[str, str]) -> None:
    """Outside the full run, every item with a marker of `FULL_RUN_ONLY` gets a skip mark with its reason."""
    if full_run(environ):
        return
    for item in items:
        reason = next((why for name, why in FULL_RUN_ONLY.items() if item.get_closest_marker(name) is not None), None)
        if reason is not None:
            item.add_marker(pytest.mark.skip(reason=reason))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests of `FULL_RUN_ONLY` skipped outside the full run; tests marked `slow` first, spread over
    the workers (see `worker_order`)."""
    skip_outside_full_run(items, os.environ)
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    items[:] = worker_order(items, workers, is_slow)


def is_slow(item: pytest.Item) -> bool:
    """Marked `slow`, or with a marker of `FULL_RUN_ONLY` (each of those is slow too)."""
    return any(item.get_closest_marker(name) is not None for name in ("slow", *FULL_RUN_ONLY))


def worker_order(items: list, workers: int, is_slow) -> list:
    """The collection reordered so that each worker's first share begins with its part of the slow
    tests (dealt round-robin, in collection order), the fast ones after them.

    pytest-xdist's worksteal scheduler gives worker i the i-th contiguous share of the collection
    (share sizes as computed here) and idle workers steal from the end of the longest queue. With
    every slow test at the front, one worker held them all, the others stole them one by one from
    its queue, and the longest ones ran last, alone (suite 2:52 with two workers idle for 55 s).
    Every worker computes the same order, as xdist requires; with one worker: slow first, stably."""
    slow: list = []
    fast: list = []
    for item in items:
        (slow if is_slow(item) else fast).append(item)
    if workers <= 1:
        return slow + fast
    ordered: list = []
    remaining = len(items)
    for share in range(workers):
        size = remaining // (workers - share)
        remaining -= size
        mine = slow[share::workers]
        take = max(0, size - len(mine))
        ordered += mine + fast[:take]
        del fast[:take]
    return ordered + fast


REDIS_URL = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
RABBITMQ_URL = os.environ.get("RABBITMQ_URL", "amqp://guest:guest@127.0.0.1:5672/%2F")


@pytest.fixture(scope="session")
def mongo_uri() -> Iterator[str]:
    with configured_or_embedded_mongo(os.environ.get("MONGODB_URI")) as uri:
        yield uri


@pytest.fixture(scope="session")
def mongo_client(mongo_uri):
    client = open_client(mongo_uri)
    yield client
    client.close()


@pytest.fixture(scope="module")
def mongo_db(mongo_client, request) -> Iterator[Database]:
    """A fresh database per test module, dropped afterwards."""
    module = request.module.__name__.rsplit(".", 1)[-1]
    name = f"t_{module[:40]}_{uuid.uuid4().hex[:8]}"
    db = open_database(mongo_client, name)
    yield db
    mongo_client.drop_database(name)


@pytest.fixture
def fresh_db(mongo_client) -> Iterator[Database]:
    """A fresh database per test, for tests that need an empty store."""
    name = f"t_{uuid.uuid4().hex[:12]}"
    db = open_database(mongo_client, name)
    yield db
    mongo_client.drop_database(name)


@pytest.fixture(scope="session")
def redis_url() -> str:
    return REDIS_URL


@pytest.fixture(scope="session")
def rabbitmq_url() -> str:
    return RABBITMQ_URL


@pytest.fixture
def unique_suffix() -> str:
    """A per-test suffix for Redis keys, queue names and the like."""
    return uuid.uuid4().hex[:10]


# Tests reconcile hours of late November 2026: pin the first partition (read when the code
# location is imported) before any test module imports it.
os.environ.setdefault("SOCIALREC_RECONCILE_START", "2026-11-01-00:00")


@pytest.fixture
def broker(rabbitmq_url, unique_suffix) -> Iterator[Broker]:
    b = Broker(rabbitmq_url, f"test{unique_suffix}")
    yield b
    b.close()


def pytest_sessionfinish(session: pytest.Session) -> None:
    """The run's owner (the xdist controller, or pytest itself without workers) stops the helper's
    PostgreSQL if a test of this run started it; a worker never does (tests/postgres_server.py)."""
    if not hasattr(session.config, "workerinput"):
        stop_if_started_by_this_run()
