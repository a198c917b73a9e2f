"""scripts/run_workers.sh turns its settings into the Celery worker's arguments, and refuses bad ones
before starting anything. Run on a copy of the script whose `.venv/bin/celery` prints its arguments."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def script(tmp_path) -> Path:
    (tmp_path / "scripts").mkdir()
    copy = tmp_path / "scripts" / "run_workers.sh"
    shutil.copy(ROOT / "scripts" / "run_workers.sh", copy)
    celery = tmp_path / ".venv" / "bin" / "celery"
    celery.parent.mkdir(parents=True)
    celery.write_text('#!/bin/sh\nprintf "%s\\n" "$@"\n')
    celery.chmod(0o755)
    return copy


def run(script: Path, **settings: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SOCIALREC_RUN_WORKER_")}
    env["SOCIALREC_CELERY_RUN_QUEUE"] = "socialrec-runs-script-test"
    return subprocess.run(
        ["bash", str(script)], env={**env, **settings}, capture_output=True, text=True, timeout=30
    )


def test_by_default_two_runs_at_once_and_no_child_kept_at_rest(script):
    done = run(script)
    assert done.returncode == 0, done.stderr
    args = done.stdout.split("\n")
    assert "--autoscale=2,0" in args and args[args.index("-Q") + 1] == "socialrec-runs-script-test"


def test_children_kept_at_rest_when_asked(script):
    done = run(script, SOCIALREC_RUN_WORKER_CONCURRENCY="3", SOCIALREC_RUN_WORKER_IDLE_CHILDREN="1")
    assert done.returncode == 0, done.stderr
    assert "--autoscale=3,1" in done.stdout.split("\n")


@pytest.mark.parametrize(
    ("settings", "why"),
    [
        ({"SOCIALREC_RUN_WORKER_CONCURRENCY": "0"}, "must be a positive integer"),
        ({"SOCIALREC_RUN_WORKER_CONCURRENCY": "two"}, "must be a positive integer"),
        ({"SOCIALREC_RUN_WORKER_IDLE_CHILDREN": "-1"}, "must be a non-negative integer"),
        ({"SOCIALREC_RUN_WORKER_IDLE_CHILDREN": "1.5"}, "must be a non-negative integer"),
        ({"SOCIALREC_RUN_WORKER_IDLE_CHILDREN": "3"}, "exceeds SOCIALREC_RUN_WORKER_CONCURRENCY (2)"),
    ],
)
def test_a_bad_setting_stops_the_script_before_celery_starts(script, settings, why):
    done = run(script, **settings)
    assert done.returncode == 2 and why in done.stderr, (done.returncode, done.stderr)
    assert done.stdout == ""  # celery never ran
