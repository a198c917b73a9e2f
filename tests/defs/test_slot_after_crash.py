"""A run worker killed mid-step leaves no pool slot behind (SPEC §10, issue 18).

A worker process is killed (SIGKILL) while a pooled step holds a slot of the `paid_social_api`
pool (every paid call runs in such a step). The run is then marked failed, as run
monitoring does for a dead worker, and a real `dagster-daemon` runs its slot-freeing pass. With the setting of
our instance files (`free_slots_after_run_end_seconds`) the slot is freed; without it (the breach
the setting exists for) it is held forever.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import pytest
import yaml

from socialrec_pipeline.defs.paid_pool import PAID_POOL

pytestmark = pytest.mark.slow  # starts real processes: scheduled first, left out by --quick

ROOT = Path(__file__).resolve().parents[2]
WORKER = Path(__file__).with_name("crash_worker.py")


def claimed(instance: dg.DagsterInstance) -> int:
    return len(instance.event_log_storage.get_concurrency_info(PAID_POOL).claimed_slots)


def until(check, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} not within {timeout:.0f} s")
        time.sleep(0.25)


@contextlib.contextmanager
def running_daemon(home: Path, env: dict) -> Iterator[None]:
    """A real `dagster-daemon run` on the instance (no code location: only its own loops)."""
    daemon = subprocess.Popen(
        [str(Path(sys.executable).with_name("dagster-daemon")), "run", "--empty-workspace"],
        env=env, cwd=home, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    try:
        yield
    finally:
        os.killpg(daemon.pid, signal.SIGTERM)
        try:
            daemon.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(daemon.pid, signal.SIGKILL)
            daemon.wait(timeout=30)


@pytest.mark.parametrize("kind", ["pooled"])
@pytest.mark.parametrize("free_after", [1, None])
def test_a_killed_worker_leaves_no_slot_behind(tmp_path, kind, free_after):
    monitoring: dict = {"enabled": True, "poll_interval_seconds": 1}
    if free_after is not None:
        monitoring["free_slots_after_run_end_seconds"] = free_after
    config = {"concurrency": {"pools": {"default_limit": 1}}, "run_monitoring": monitoring}
    (tmp_path / "dagster.yaml").write_text(yaml.safe_dump(config))
    env = {**os.environ, "DAGSTER_HOME": str(tmp_path), "PYTHONPATH": str(ROOT)}
    worker = subprocess.Popen(
        [sys.executable, str(WORKER), kind], env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    try:
        assert worker.stdout is not None
        assert worker.stdout.readline().strip() == "CLAIMED"
        with dg.DagsterInstance.from_config(str(tmp_path)) as instance:
            assert claimed(instance) == 1
            os.kill(worker.pid, signal.SIGKILL)
            worker.wait(timeout=30)
            (run,) = instance.get_runs()
            assert run.status == dg.DagsterRunStatus.STARTED and claimed(instance) == 1  # the slot outlives it
            instance.report_run_failed(run)  # what run monitoring does when it finds the worker dead
            with running_daemon(tmp_path, env):
                # The daemon's monitoring loop frees a finished run's slots every poll interval (1 s here).
                until(lambda: "MONITORING" in instance.get_daemon_heartbeats(), 120, "the daemon's monitoring loop")
                if free_after:
                    until(lambda: claimed(instance) == 0, 60, "the dead run's slot freed")
                else:
                    time.sleep(5)  # five passes of the loop: the breach keeps the slot
                    assert claimed(instance) == 1
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait(timeout=30)
