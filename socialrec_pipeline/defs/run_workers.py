"""Warm run workers: the Celery app whose workers execute whole runs for the instance's Celery run
launcher (dagster-celery's `CeleryRunLauncher`, named in dagster.yaml and
deploy/celery-run-launcher.yaml).

A run started in a fresh process pays ~2.7 s of CPU to import Dagster and this code location before
its first step, more than the whole token costs; a worker imports both once, here, and each prefork
child it starts inherits them. `scripts/run.sh` starts one worker; more machines add their own:

    celery -A socialrec_pipeline.defs.run_workers worker -Q "$SOCIALREC_CELERY_RUN_QUEUE" \
        --concurrency=2 --prefetch-multiplier=1 --without-gossip --without-mingle

Settings (the same values the instance's run launcher reads): `SOCIALREC_CELERY_BROKER_URL` (the
RabbitMQ the stack already runs), `SOCIALREC_CELERY_RUN_QUEUE`, and `SOCIALREC_CELERY_BACKEND_URL`,
where each run's task state is kept: run monitoring reads it to tell a run whose worker died
(a killed child leaves its task FAILURE) from one still running.
"""

from __future__ import annotations

from celery.signals import task_postrun
from dagster_celery.make_app import make_app
from dagster_celery.tasks import create_execute_job_task, create_resume_job_task

import socialrec_pipeline.defs.definitions as code_location
from socialrec_pipeline.defs.run_worker_settings import (
    freeze_warm_heap,
    restore_sigterm,
    warm_run_imports,
    worker_app_args,
)

app = make_app(app_args=worker_app_args())
execute_job = create_execute_job_task(app)
resume_job = create_resume_job_task(app)
# Build the repository and import what a run loads lazily now, in the parent: prefork children
# start with both (copy-on-write).
code_location.defs.get_repository_def()
warm_run_imports()
freeze_warm_heap()  # last: what the children inherit stays shared with the parent

# After each run, the pool child gets its SIGTERM back (run_worker_settings.restore_sigterm).
task_postrun.connect(restore_sigterm, weak=False)
