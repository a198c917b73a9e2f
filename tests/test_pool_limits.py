"""`socialrec pool-limits` sets the pools' limits in the instance, so Deployment → Concurrency lists them."""

from __future__ import annotations

import os
import shutil
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
