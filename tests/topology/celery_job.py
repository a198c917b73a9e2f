"""`record_token_job`'s graph under dagster-celery's executor: every step is a Celery task.

Celery workers import this module (the job is reconstructable by module and function name), so
the resources are built from the environment the test gives them, as in the code location.
"""

from __future__ import annotations

import dagster as dg
from dagster_celery import celery_executor

from socialrec_pipeline.defs.record_token import record_token_job
from socialrec_pipeline.defs.resources import resources_from_env


def record_token_celery() -> dg.JobDefinition:
    return record_token_job.graph.to_job(
        name="record_token_celery",
        executor_def=celery_executor,
        resource_defs=resources_from_env(),
        tags=record_token_job.tags,
    )
