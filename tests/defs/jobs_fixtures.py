"""Loopback stand-ins (SolTracker + X + Apify) and a resource map for running the jobs in process."""

from __future__ import annotations

import dagster as dg

from socialrec_pipeline.defs.resources import (
    RecordingSettingsResource,
)
from socialrec_pipeline.sandbox.fixture_server import FixtureServer
from socialrec_pipeline.sandbox.platforms import apify as apify_fixtures
from socialrec_pipeline.sandbox.platforms import telegram as telegram_fixtures
from socialrec_pipeline.sandbox.platforms.x import demo_fixtures
from socialrec_pipeline.sandbox.resources import stand_in_resources
from socialrec_pipeline.sandbox.soltracker import SolTrackerFixture, upstream_token

#: Unique strings: the leak test asserts they appear nowhere in a run's events, tags or config.
SOLTRACKER_KEY = "st-secret-4f1d9c2b7a"
X_KEY = "x-secret-93ab17e6c0"

_BASE58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"


def unique_address() -> str:
    """A fresh base58 mint address: Redis (locks, caches) is shared between tests and runs."""
    import secrets

    return "".join(secrets.choice(_BASE58) for _ in range(44))


FOUR_URL_TOKEN = unique_address()


def four_url_token(address: str, **kw) -> dict:
    """ok (website, URL-only), ok (X profile), not_found (Telegram name), skipped_paid (TikTok)."""
    return upstream_token(
        address,
        symbol="FOUR",
        website="https://fourcoin.example/",
        twitter="https://twitter.com/kolguy",
        telegram="t.me/nobody",
        discord="https://www.tiktok.com/@moonkol/video/7350000000000000001",
        **kw,
    )


def start_fixtures(tokens=()) -> tuple[FixtureServer, SolTrackerFixture]:
    server = FixtureServer().start()
    soltracker = SolTrackerFixture(tokens, api_key=SOLTRACKER_KEY)
    soltracker.install(server)
    demo_fixtures().register(server)
    apify_fixtures.register_demo(server)
    telegram_fixtures.register(server)  # catch-all "/" prefix: keep last
    return server, soltracker


def job_resources(server_url: str, mongo_uri: str, db_name: str, redis_url: str, *, from_env: bool = False) -> dict:
    """With `from_env`, the keys come through `EnvVar` exactly as in the code location."""
    st_key = dg.EnvVar("SOL_TRACKER_API_KEY") if from_env else SOLTRACKER_KEY
    x_key = dg.EnvVar("TWITTERAPI_API_KEY") if from_env else X_KEY
    return stand_in_resources(
        lambda _service: server_url, mongo_uri=mongo_uri, database=db_name, redis_url=redis_url,
        soltracker_key=st_key, x_key=x_key, recording=RecordingSettingsResource(retry_min_interval_minutes="0"),
    )


def output_metadata(result, step: str) -> dict:
    """The metadata of a step's first output (values are Dagster `MetadataValue`s)."""
    event = next(e for e in result.all_events if e.step_key == step and e.event_type_value == "STEP_OUTPUT")
    return event.event_specific_data.metadata


def reconcile_metadata(result) -> dict:
    """The metadata of the run's `reconciled_hours` materialization (values are `MetadataValue`s),
    which the `reconcile_summary` step of the `reconcile_window` graph produces."""
    (materialization,) = result.asset_materializations_for_node("reconcile_window")
    return materialization.metadata


def reconcile_steps(result, op: str = "") -> list:
    """The events of the `reconcile_window` graph's steps (keys `reconcile_window.<op>[...]`),
    of the op `op` only when given."""
    prefix = f"reconcile_window.{op}"
    return [e for e in result.all_events if (e.step_key or "").startswith(prefix)]


def reconcile_job_with(resources: dict, asset=None):
    """`reconcile_job` resolved with `resources` (an asset job needs its assets and resources to run).

    `asset` replaces the reconcile step, e.g. `reconcile_asset(retry_policy=None)`."""
    from socialrec_pipeline.defs.reconcile import reconcile_job, reconcile_window

    defs = dg.Definitions(assets=[asset or reconcile_window], jobs=[reconcile_job], resources=resources)
    return defs.resolve_job_def(reconcile_job.name)
