"""The run queue of this deployment: Dagster's `QueuedRunCoordinator` behind the launch gate.

Every launch path ends in the coordinator's `submit_run` (the Launchpad and GraphQL through the
webserver; schedules, sensors and backfills through the daemon; Materialize and a check's Execute
button are launches too). Before a run is queued:

- `launch_gate.launch_refusals` decides; a refused run raises `LaunchRefused`, which Dagster
  records on the run (failed, with our message) and returns to the caller: nothing ran.
- a run that materializes `reconciled_hours` through another job than `reconcile_job` (the
  asset's Materialize button, a backfill from its partition bar) gets the tag
  `socialrec/job=reconcile` before it is queued, so the queue's tag limit and the run filters
  treat it as the reconcile run it is.

dagster.yaml, deploy/dagster.yaml and the Helm values name this class as the run coordinator.
"""

from __future__ import annotations

import warnings
from typing import Any

import dagster as dg

from socialrec_pipeline.defs.launch_gate import LaunchRefused, launch_refusals, run_family
from socialrec_pipeline.defs.tags import JOB_FAMILY_TAG

# The daemon that runs this queue also launches what it releases. dagster-celery's CeleryRunLauncher
# registers its `execute_job` task again for every launch, and Celery (5.7 here) warns at the second
# registration — "DuplicateTaskNameWarning: Task name 'execute_job' is already registered to a
# different callable", with advice about unique names — although both are the same task from the
# same factory. It was the one alarming line of every local start-up; only that message is hidden.
warnings.filterwarnings("ignore", message="Task name 'execute_job' is already registered to a different callable")


def run_asset_names(run: Any) -> list[str]:
    keys = [*(run.asset_selection or ()), *(key.asset_key for key in (run.asset_check_selection or ()))]
    return [key.to_user_string() for key in keys]


class GatedRunCoordinator(dg.QueuedRunCoordinator):
    """`QueuedRunCoordinator` (same config) that refuses launches carrying deployment settings."""

    def submit_run(self, context):  # SubmitRunContext is not exported by Dagster
        run = context.dagster_run
        assets = run_asset_names(run)
        refusals = launch_refusals(run.run_config, run.tags, job_name=run.job_name, asset_names=assets)
        if refusals:
            # The documented per-run override of run retries: a refused launch is not re-launched as is.
            self._instance.add_run_tags(run.run_id, {"dagster/max_retries": "0"})
            raise LaunchRefused(refusals)
        family = run_family(run.job_name, (run.run_config or {}).get("ops") or {}, assets)
        if family is not None and JOB_FAMILY_TAG not in run.tags:
            self._instance.add_run_tags(run.run_id, {JOB_FAMILY_TAG: family})
        return super().submit_run(context)
