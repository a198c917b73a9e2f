"""`record_token_job` under the multiprocess executor, reconstructable in its step processes.

Each step process imports this module and calls `record_token_multiprocess`, so the resources are
built from the environment the test sets (exactly how the code location builds them).
"""

from __future__ import annotations

import dagster as dg

from socialrec_pipeline.defs.record_token import record_token_job
from socialrec_pipeline.defs.resources import resources_from_env


def record_token_multiprocess() -> dg.JobDefinition:
    return record_token_job.graph.to_job(
        name="record_token_multiprocess",
        executor_def=dg.multiprocess_executor.configured({"max_concurrent": 2}),
        resource_defs=resources_from_env(),
        tags=record_token_job.tags,
    )
