"""A run worker's pool child keeps its default SIGTERM after a run: Dagster's interrupt handling,
on leaving, maps SIGTERM to SIGINT's disposition, which Celery's pool children ignore, so without
this the autoscaler could never stop an idle child."""

from __future__ import annotations

import importlib
import signal

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


def test_the_run_worker_app_connects_it_to_every_task(monkeypatch):
    for name, value in {
        "SOCIALREC_CELERY_BROKER_URL": "amqp://guest:guest@127.0.0.1:1/%2F",
        "SOCIALREC_CELERY_RUN_QUEUE": "socialrec-runs-signal-test",
        "SOCIALREC_CELERY_BACKEND_URL": "redis://127.0.0.1:1/0",
    }.items():
        monkeypatch.setenv(name, value)
    run_workers = importlib.import_module("socialrec_pipeline.defs.run_workers")
    before = signal.getsignal(signal.SIGTERM)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        task_postrun.send(sender=run_workers.execute_job, task_id="t", task=run_workers.execute_job)
        assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    finally:
        signal.signal(signal.SIGTERM, before)
