"""The settings of a warm run worker (socialrec_pipeline/defs/run_workers.py), apart from the
Celery app so they can be checked without building one."""

from __future__ import annotations

import os
from collections.abc import Mapping

#: The variables the worker and the launcher share; a worker without them must not start, or it
#: would take runs from another deployment's queue or never report a dead run.
WORKER_SETTINGS = ("SOCIALREC_CELERY_BROKER_URL", "SOCIALREC_CELERY_RUN_QUEUE", "SOCIALREC_CELERY_BACKEND_URL")


def worker_app_args(environ: Mapping[str, str] = os.environ) -> dict:
    """The Celery app settings of a run worker, from the environment (every one required)."""
    missing = [name for name in WORKER_SETTINGS if not environ.get(name)]
    if missing:
        raise RuntimeError(f"a run worker needs {', '.join(missing)} (docs/configuration.md)")
    return {
        "broker": environ["SOCIALREC_CELERY_BROKER_URL"],
        "backend": environ["SOCIALREC_CELERY_BACKEND_URL"],
        "include": [],
        "task_default_queue": environ["SOCIALREC_CELERY_RUN_QUEUE"],
        "config_source": {
            # One run at a time per child, none reserved ahead: a queued run goes to whichever
            # child frees first.
            "worker_prefetch_multiplier": 1,
            "result_expires": 24 * 3600,
            "broker_connection_retry_on_startup": True,
        },
    }
