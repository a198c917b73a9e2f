"""A run worker imports, before its pool forks, what a run would otherwise import on first use
(run_worker_settings.warm_run_imports): a child's first run then imports almost nothing. And the
warm-up never keeps a worker from starting."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

from socialrec_pipeline.defs.run_worker_settings import warm_run_imports

ROOT = Path(__file__).resolve().parents[2]

# What run_workers.py does before forking, then a real run on the deployment's local instance (the
# project's dagster.yaml with deploy/local-storage.yaml, as run.sh writes it), counting the modules
# the run still had to import.
A_WORKER_THEN_A_RUN = """
import json, sys
import dagster as dg
import socialrec_pipeline.defs.definitions as code_location
from socialrec_pipeline.defs.run_worker_settings import warm_run_imports

code_location.defs.get_repository_def()
before = set(sys.modules)
warm_run_imports()
warmed = set(sys.modules)

@dg.op
def one():
    return 1

@dg.job
def tiny():
    one()

with dg.DagsterInstance.get() as instance:
    assert tiny.execute_in_process(instance=instance).success
left = sorted(set(sys.modules) - warmed)
print(json.dumps({"warmed": sorted(warmed - before), "left": left}))
"""


def test_a_childs_first_run_finds_its_imports_done(tmp_path):
    home = tmp_path / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text(
        (ROOT / "dagster.yaml").read_text() + (ROOT / "deploy" / "local-storage.yaml").read_text()
    )
    env = {
        **os.environ,
        "DAGSTER_HOME": str(home),
        "SOCIALREC_CELERY_BROKER_URL": "amqp://guest:guest@127.0.0.1:1/%2F",
        "SOCIALREC_CELERY_RUN_QUEUE": "socialrec-runs-warm-test",
        "SOCIALREC_CELERY_BACKEND_URL": "redis://127.0.0.1:1/0",
    }
    done = subprocess.run(
        [sys.executable, "-c", A_WORKER_THEN_A_RUN], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    modules = json.loads(done.stdout.strip().splitlines()[-1])
    warmed, left = set(modules["warmed"]), modules["left"]
    # The instance's storage stack came in with the warm-up (a cold child imported ~450 modules on
    # its first run, these among them) ...
    assert {"sqlalchemy", "alembic", "httpcore", "tldextract"} <= warmed, sorted(warmed)[:50]
    assert len(warmed) > 300, len(warmed)
    # ... and the run found nearly everything it needed already there.
    assert len(left) < 30, left


def test_a_worker_whose_instance_cannot_load_still_starts(monkeypatch, caplog):
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    with caplog.at_level(logging.WARNING, logger="socialrec_pipeline.defs.run_worker_settings"):
        warm_run_imports()  # returns: no DAGSTER_HOME, no instance, and no exception
    assert "instance not loaded before forking" in caplog.text
