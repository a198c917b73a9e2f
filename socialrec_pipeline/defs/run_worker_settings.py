"""The settings of a warm run worker (socialrec_pipeline/defs/run_workers.py), apart from the
Celery app so they can be checked without building one."""

from __future__ import annotations

import gc
import logging
import os
import signal
from collections.abc import Mapping
from typing import Any

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


def restore_sigterm(**_: Any) -> None:
    """Give a run worker's pool child back its SIGTERM after a run (connected to Celery's
    `task_postrun` in run_workers.py). Dagster's run execution, on leaving its interrupt capture,
    maps SIGTERM to whatever SIGINT does, and Celery's pool children ignore SIGINT: from its first
    run on, a child ignored SIGTERM, so the autoscaler's "Scaling down" never stopped the idle child
    (~145 MiB at rest) and a shutdown had to kill it. Celery itself resets a child's SIGTERM to the
    default when the child starts; this keeps it so."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def warm_run_imports() -> None:
    """Import, in the parent, what a run would otherwise import on its first use: the instance's
    storage (SQLAlchemy, Alembic, Dagster's storage modules), run coordinator and compute log
    manager, httpx's transport, and the Public Suffix List the domain fingerprints read. Each pool
    child forked afterwards inherits them instead of importing ~450 modules on its first run (~0.35 s
    of CPU and ~33 MiB of private memory per child; docs/benchmarks-history.md, Idle cost) and
    parsing the list on its first web URL (~40 ms, ~6 MiB). Best effort: a worker whose instance
    cannot load yet still starts, and its children import what they need themselves."""
    import dagster as dg
    import httpx

    from socialrec_pipeline.routing.apex import apex_domain

    httpx.Client(timeout=1).close()
    apex_domain("warm-up.example.com")
    try:
        with dg.DagsterInstance.get() as instance:
            instance.run_coordinator  # noqa: B018 - each is built on first access
            instance.compute_log_manager  # noqa: B018
    except Exception as error:  # the worker must start even if the instance is not reachable yet
        logging.getLogger(__name__).warning("run worker: instance not loaded before forking (%s)", error)


def freeze_warm_heap() -> None:
    """Move every object the worker has built so far (Dagster, the code location, the repository)
    out of the garbage collector's reach, once, before the pool forks its children. A child's
    collections would otherwise walk those objects and write their headers, copying page after page
    of the parent's heap into the child: with the freeze they stay shared (figures: docs/benchmarks-history.md,
    Idle cost). They live as long as the worker anyway."""
    gc.freeze()
