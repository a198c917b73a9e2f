"""The code location `socialrec_pipeline`: what the webserver and the daemon load."""

import dagster as dg

from socialrec_pipeline.defs.alerts import alert_sensors
from socialrec_pipeline.defs.assets import COLLECTION_SPECS
from socialrec_pipeline.defs.deployment_ready import deployment_ready_defs
from socialrec_pipeline.defs.health import (
    recording_health,
    recording_health_job,
    recording_health_schedule,
    recording_health_sensor,
)
from socialrec_pipeline.defs.integrity import integrity_checks, integrity_job, integrity_schedule
from socialrec_pipeline.defs.metric_refresh import metric_refresh_job, metric_refresh_schedule
from socialrec_pipeline.defs.operator_checks import operator_checks, operator_checks_job, operator_checks_schedule
from socialrec_pipeline.defs.reconcile import reconcile_job, reconcile_schedule, reconcile_window
from socialrec_pipeline.defs.record_token import record_token_job
from socialrec_pipeline.defs.resources import resources_from_env
from socialrec_pipeline.defs.retry import retry_job, retry_schedule
from socialrec_pipeline.defs.signals import SIGNAL_ASSETS, signals_job, signals_schedule, signals_settings_from_env
from socialrec_pipeline.defs.token_flow import token_flow_sensor
from socialrec_pipeline.defs.wallets import wallets_backfill_job

defs = dg.Definitions(
    assets=[*COLLECTION_SPECS, reconcile_window, recording_health, *SIGNAL_ASSETS],
    asset_checks=[*integrity_checks, *operator_checks],
    jobs=[
        record_token_job,
        reconcile_job,
        retry_job,
        metric_refresh_job,
        wallets_backfill_job,
        integrity_job,
        recording_health_job,
        operator_checks_job,
        signals_job,
    ],
    schedules=[
        reconcile_schedule,
        retry_schedule,
        metric_refresh_schedule,
        integrity_schedule,
        recording_health_schedule,
        operator_checks_schedule,
        signals_schedule,
    ],
    sensors=[token_flow_sensor, recording_health_sensor, *alert_sensors],
    resources={**resources_from_env(), "signals": signals_settings_from_env()},
    # Jobs name their executor; this one is for the asset job Dagster builds for Materialize and a
    # check's Execute button, so integrity checks run in one process however they are launched.
    executor=dg.in_process_executor,
)
defs = dg.Definitions.merge(defs, deployment_ready_defs())  # `socialrec doctor`'s checks in the UI
