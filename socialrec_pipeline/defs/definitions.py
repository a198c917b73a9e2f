"""The code location `socialrec_pipeline`: what the webserver and the daemon load."""

import dagster as dg

from socialrec_pipeline.defs.metric_refresh import metric_refresh_job, metric_refresh_schedule
from socialrec_pipeline.defs.reconcile import reconcile_job, reconcile_schedule
from socialrec_pipeline.defs.record_token import record_token_job
from socialrec_pipeline.defs.resources import resources_from_env
from socialrec_pipeline.defs.retry import retry_job, retry_schedule
from socialrec_pipeline.defs.token_flow import token_flow_sensor
from socialrec_pipeline.defs.wallets import wallets_backfill_job

defs = dg.Definitions(
    jobs=[record_token_job, reconcile_job, retry_job, metric_refresh_job, wallets_backfill_job],
    schedules=[reconcile_schedule, retry_schedule, metric_refresh_schedule],
    sensors=[token_flow_sensor],
    resources=resources_from_env(),
)
