"""The reconcile limit holds on the asset's launch paths too: the `reconcile_window` step is in the
`reconcile` op pool, so a reconcile hour launched while two others run waits for one of them, also
when it comes from Materialize or a backfill of `reconciled_hours` (Dagster's asset job, which the
run queue's `socialrec/job=reconcile` limit would not see without the tag the launch gate adds)."""

from __future__ import annotations

import threading
import time

import dagster as dg
import pytest

from socialrec_pipeline.defs.reconcile import RECONCILE_POOL

from .jobs_fixtures import four_url_token, job_resources, reconcile_job_with, unique_address

pytestmark = pytest.mark.slow  # starts real processes: scheduled first, left out by --quick

WINDOW = "2026-11-30-03:00"


def step_started(instance: dg.DagsterInstance) -> bool:
    return any(
        e.is_dagster_event and e.dagster_event_type == dg.DagsterEventType.STEP_START
        for run in instance.get_runs()
        for e in instance.all_logs(run.run_id)
    )


def test_a_third_reconcile_hour_waits_for_the_pool(fixtures, tmp_path, mongo_uri, fresh_db, redis_url):
    server, soltracker = fixtures
    soltracker.put(four_url_token(unique_address(), last_transfer="2026-11-30T03:30:00Z"))
    job = reconcile_job_with(job_resources(server.url, mongo_uri, fresh_db.name, redis_url))
    pools = {"concurrency": {"pools": {"default_limit": 2}}}
    with dg.instance_for_test(temp_dir=str(tmp_path), overrides=pools) as inst:
        storage = inst.event_log_storage
        storage.initialize_concurrency_limit_to_default(RECONCILE_POOL)
        for hour in ("hour-a", "hour-b"):  # two reconcile hours in flight elsewhere
            assert storage.claim_concurrency_slot(RECONCILE_POOL, hour, "reconcile_window").is_claimed
        results: list = []
        worker = threading.Thread(
            target=lambda: results.append(job.execute_in_process(partition_key=WINDOW, instance=inst))
        )
        worker.start()
        time.sleep(4)
        assert worker.is_alive() and not step_started(inst)  # the third waits for a slot
        storage.free_concurrency_slot_for_step("hour-a", "reconcile_window")
        worker.join(timeout=120)
        assert not worker.is_alive() and results[0].success and step_started(inst)
