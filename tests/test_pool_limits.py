"""`socialrec pool-limits` sets the pools' limits in the instance, so Deployment → Concurrency lists them."""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from dagster import DagsterInstance

from socialrec_pipeline.defs.paid_pool import PAID_POOL
from socialrec_pipeline.defs.pool_limits import POOLS, set_pool_limits
from socialrec_pipeline.defs.reconcile import RECONCILE_POOL

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_LIMIT = yaml.safe_load((ROOT / "dagster.yaml").read_text())["concurrency"]["pools"]["default_limit"]


def _limits(home: Path) -> dict[str, int]:
    with DagsterInstance.from_config(str(home)) as instance:
        return {pool: instance.event_log_storage.get_concurrency_info(pool).slot_count for pool in POOLS}


def _home(tmp_path: Path, instance_file: Path = ROOT / "dagster.yaml") -> Path:
    shutil.copy(instance_file, tmp_path / "dagster.yaml")
    return tmp_path


@pytest.mark.slow  # starts the CLI as run.sh does
def test_the_run_sh_step_sets_every_pool_to_the_default_limit_of_dagster_yaml(tmp_path):
    home = _home(tmp_path)
    assert _limits(home) == {PAID_POOL: 0, RECONCILE_POOL: 0}  # not set yet: the page would list none
    cli = Path(sys.executable).with_name("socialrec")
    out = subprocess.run(
        [str(cli), "pool-limits"], env={**os.environ, "DAGSTER_HOME": str(home)},
        capture_output=True, text=True, check=True, timeout=120,
    )  # fmt: skip
    assert _limits(home) == {PAID_POOL: DEFAULT_LIMIT, RECONCILE_POOL: DEFAULT_LIMIT}
    assert f"{PAID_POOL}={DEFAULT_LIMIT}" in out.stdout
    assert ".venv/bin/socialrec\" pool-limits" in (ROOT / "scripts/run.sh").read_text()  # run.sh takes this step


def test_a_given_limit_wins_and_setting_again_changes_nothing_else(tmp_path):
    home = _home(tmp_path)
    with DagsterInstance.from_config(str(home)) as instance:
        assert set_pool_limits(instance, 5) == {PAID_POOL: 5, RECONCILE_POOL: 5}
        assert set_pool_limits(instance) == {PAID_POOL: DEFAULT_LIMIT, RECONCILE_POOL: DEFAULT_LIMIT}
    assert _limits(home) == {PAID_POOL: DEFAULT_LIMIT, RECONCILE_POOL: DEFAULT_LIMIT}


def test_no_limit_anywhere_or_a_bad_one_is_refused_and_sets_nothing(tmp_path):
    instance_file = tmp_path / "source.yaml"
    config = yaml.safe_load((ROOT / "dagster.yaml").read_text())
    del config["concurrency"]["pools"]
    instance_file.write_text(yaml.safe_dump(config))
    (tmp_path / "home").mkdir()
    home = _home(tmp_path / "home", instance_file)
    with DagsterInstance.from_config(str(home)) as instance:
        with pytest.raises(ValueError, match="default_limit"):
            set_pool_limits(instance)
        for bad in (-1, True, 2.5):
            with pytest.raises(ValueError, match="whole number"):
                set_pool_limits(instance, bad)  # type: ignore[arg-type]
    assert _limits(home) == {PAID_POOL: 0, RECONCILE_POOL: 0}


#: run.sh's commands that open the Dagster instance (each creates a fresh one's SQLite databases).
OPENERS = ("scripts/run_workers.sh", "dagster\" api grpc", "dagster-daemon\"", "dagster-webserver\"")


def test_run_sh_opens_a_fresh_instance_alone_before_starting_anything_that_opens_it():
    """Two processes creating a fresh instance's SQLite databases at once both stamp Alembic's
    version table (seen in half of the trials with two concurrent `socialrec pool-limits`), and
    every later start of that DAGSTER_HOME fails with "more than one head present": `pool-limits`
    runs first, in the foreground, and every process that opens the instance starts after it."""
    lines = (ROOT / "scripts/run.sh").read_text().splitlines()
    first = next(i for i, line in enumerate(lines) if '.venv/bin/socialrec" pool-limits' in line)
    assert not lines[first].lstrip().startswith("start ") and not lines[first].rstrip().endswith("&")
    starts = [(i, line) for i, line in enumerate(lines) if line.lstrip().startswith("start ")]
    openers = [i for i, line in starts if any(o in line for o in OPENERS)]
    assert len(openers) == len(OPENERS), [lines[i] for i in openers]
    assert all(i > first for i in openers), [lines[i] for i in openers if i < first]


@pytest.mark.slow  # starts the CLI
def test_a_bench_deployment_prepares_a_fresh_instance_with_one_alembic_stamp_per_database(tmp_path, monkeypatch):
    from bench.daemon_bench import prepare_instance

    (tmp_path / "dagster.yaml").write_text(
        (ROOT / "dagster.yaml").read_text() + "\n" + (ROOT / "deploy/local-storage.yaml").read_text()
    )
    prepare_instance({**os.environ, "DAGSTER_HOME": str(tmp_path)})
    for db in ("runs", "schedules"):  # the consolidated event log keeps no Alembic stamp
        with contextlib.closing(sqlite3.connect(tmp_path / f"{db}.db")) as conn:
            rows = conn.execute("SELECT version_num FROM alembic_version").fetchall()
        assert len(rows) == 1, (db, rows)
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))  # the local storage's base_dir
    assert _limits(tmp_path) == {PAID_POOL: DEFAULT_LIMIT, RECONCILE_POOL: DEFAULT_LIMIT}
