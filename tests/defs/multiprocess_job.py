"""`record_token_job` under the multiprocess executor, reconstructable in its step processes.

Each step process calls `record_token_multiprocess` (the forkserver has imported this module), so the
resources are built from the environment the test sets (exactly how the code location builds them).
"""

from __future__ import annotations

import dagster as dg

from socialrec_pipeline.defs.record_token import record_token_job
from socialrec_pipeline.defs.resources import resources_from_env


def record_token_multiprocess() -> dg.JobDefinition:
    return record_token_job.graph.to_job(
        name="record_token_multiprocess",
        # forkserver: each step still runs in a process of its own, forked from a server that has
        # already imported dagster and this module (~0.1 s a step instead of a ~2-4 s interpreter start).
        # The forkserver is started once per test process and keeps the environment it started with:
        # a second test needing other settings in its step processes must use "spawn".
        executor_def=dg.multiprocess_executor.configured({"max_concurrent": 2, "start_method": {"forkserver": {}}}),
        resource_defs=resources_from_env(),
        tags=record_token_job.tags,
    )
