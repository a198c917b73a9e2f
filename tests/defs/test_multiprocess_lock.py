"""The token lock survives the process boundaries of the multiprocess executor (SPEC §6.2)."""

from __future__ import annotations

import dagster as dg
import pytest

from socialrec_pipeline.recording.locks import TokenLocks, open_redis

from .jobs_fixtures import SOLTRACKER_KEY, X_KEY, four_url_token, start_fixtures, unique_address
from .multiprocess_job import record_token_multiprocess

pytestmark = pytest.mark.slow  # starts real processes: scheduled first, left out by --quick


def test_record_token_job_under_the_multiprocess_executor(mongo_uri, fresh_db, redis_url, monkeypatch, tmp_path):
    address = unique_address()
    server, _ = start_fixtures([four_url_token(address)])
    try:
        for name, value in {
            "MONGODB_URI": mongo_uri, "MONGODB_DATABASE": fresh_db.name, "REDIS_URL": redis_url,
            "SOL_TRACKER_BASE_URL": server.url, "SOL_TRACKER_API_KEY": SOLTRACKER_KEY,
            "TWITTERAPI_BASE_URL": server.url, "TWITTERAPI_API_KEY": X_KEY,
            "TELEGRAM_BASE_URL": server.url, "APIFY_BASE_URL": server.url,
        }.items():  # fmt: skip
            monkeypatch.setenv(name, value)
        with dg.instance_for_test(temp_dir=str(tmp_path)) as instance:
            result = dg.execute_job(
                dg.reconstructable(record_token_multiprocess),
                instance=instance,
                run_config={"ops": {"prepare": {"config": {"token_address": address, "symbol": "FOUR"}}}},
            )
            assert result.success
            # Every step ran in a process of its own, yet each held (or extended) the run's lock.
            pids = {
                e.dagster_event.pid for e in instance.all_logs(result.run_id)
                if e.dagster_event is not None and e.dagster_event.event_type_value == "STEP_START"
            }  # fmt: skip
            assert len(pids) >= 3
    finally:
        server.stop()

    marker = fresh_db["tokens"].find_one({"address": address})
    assert marker is not None
    assert {u["source_field"]: u["status"] for u in marker["social_urls"]} == {
        "website": "ok", "twitter": "ok", "telegram": "not_found", "discord": "skipped_paid",
    }  # fmt: skip
    assert TokenLocks(open_redis(redis_url)).owner_of(address) is None  # released by write_marker
