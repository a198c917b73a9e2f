"""The daemon's log at the first launches: no DuplicateTaskNameWarning from dagster-celery's launcher."""

from __future__ import annotations

import subprocess
import sys

# As the daemon: Celery's app, the launcher's task registered at every launch, warnings as Python
# shows them by default; first without the run coordinator's module (the warning shows: the check
# can see it), then with it, on a second app (Celery warns once per app and name).
SCRIPT = """
import warnings
from dagster_celery.make_app import make_app
from dagster_celery.tasks import create_execute_job_task
from celery.exceptions import DuplicateTaskNameWarning

def two_launches():
    app = make_app(app_args={"broker": "memory://", "backend": "cache+memory://", "include": [],
                             "config_source": {}, "task_default_queue": "q"})
    with warnings.catch_warnings(record=True) as caught:  # entering it resets "once per place"
        for _ in range(2):
            create_execute_job_task(app).si(execute_job_args_packed={})  # as launch_run does
    return sum(issubclass(w.category, DuplicateTaskNameWarning) for w in caught)

before = two_launches()
import socialrec_pipeline.defs.run_coordinator  # what the daemon loads with its instance
print(before, two_launches())
"""


def test_the_daemon_hides_celerys_warning_about_the_launchers_task_registered_again():
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.split() == ["1", "0"], done.stdout + done.stderr
