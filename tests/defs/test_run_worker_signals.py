"""A run worker's pool child keeps its default SIGTERM after a run: Dagster's interrupt handling,
on leaving, maps SIGTERM to SIGINT's disposition, which Celery's pool children ignore, so without
this the autoscaler could never stop an idle child. And the worker's warm heap is frozen before the
pool forks (run_worker_settings.freeze_warm_heap), so a child's collections leave it shared."""

from __future__ import annotations

import gc
import importlib
import signal
import sys

from celery.signals import task_postrun

from socialrec_pipeline.defs.run_worker_settings import restore_sigterm


def test_after_a_run_sigterm_is_the_default_again():
    before = signal.getsignal(signal.SIGTERM)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a pool child's SIGTERM after a Dagster run
    try:
        restore_sigterm(task_id="t")
        assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    finally:
        signal.signal(signal.SIGTERM, before)


def import_run_workers(monkeypatch):
    for name, value in {
        "SOCIALREC_CELERY_BROKER_URL": "amqp://guest:guest@127.0.0.1:1/%2F",
        "SOCIALREC_CELERY_RUN_QUEUE": "socialrec-runs-signal-test",
        "SOCIALREC_CELERY_BACKEND_URL": "redis://127.0.0.1:1/0",
    }.items():
        monkeypatch.setenv(name, value)
    return importlib.import_module("socialrec_pipeline.defs.run_workers")


def test_the_run_worker_app_connects_it_to_every_task(monkeypatch):
    run_workers = import_run_workers(monkeypatch)
    gc.unfreeze()  # the import froze this process's heap; the rest of the suite collects as usual
    before = signal.getsignal(signal.SIGTERM)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        task_postrun.send(sender=run_workers.execute_job, task_id="t", task=run_workers.execute_job)
        assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    finally:
        signal.signal(signal.SIGTERM, before)


def test_the_run_worker_freezes_what_it_built_before_its_pool_forks(monkeypatch):
    gc.unfreeze()
    monkeypatch.delitem(sys.modules, "socialrec_pipeline.defs.run_workers", raising=False)  # a fresh import
    try:
        import_run_workers(monkeypatch)
        frozen = gc.get_freeze_count()
    finally:
        gc.unfreeze()  # the rest of the suite collects as usual
    # Everything built by then (Dagster, the code location, the repository), not a few late objects.
    assert frozen > 100_000, frozen
