"""scripts/pool_limits.sh sets the pools' limits in the instance, so Deployment → Concurrency lists them."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.slow  # starts real processes: scheduled first, left out by --quick

ROOT = Path(__file__).resolve().parents[1]


def _limit(home: Path, pool: str) -> str:
    dagster = Path(sys.executable).with_name("dagster")
    env = {**os.environ, "DAGSTER_HOME": str(home)}
    out = subprocess.run(
        [str(dagster), "instance", "concurrency", "get", pool],
        cwd=home, env=env, capture_output=True, text=True, timeout=120, check=True,
    )
    return out.stdout.strip()


def test_run_sh_step_sets_the_paid_pool_limit_of_dagster_yaml(tmp_path):
    shutil.copy(ROOT / "dagster.yaml", tmp_path / "dagster.yaml")
    assert _limit(tmp_path, "paid_social_api") == '"paid_social_api": 0 / 0 slots occupied'  # not set yet
    env = {**os.environ, "DAGSTER_HOME": str(tmp_path), "DAGSTER": str(Path(sys.executable).with_name("dagster"))}
    subprocess.run(["bash", str(ROOT / "scripts/pool_limits.sh")], env=env, check=True, timeout=240)
    default_limit = yaml.safe_load((ROOT / "dagster.yaml").read_text())["concurrency"]["pools"]["default_limit"]
    assert _limit(tmp_path, "paid_social_api") == f'"paid_social_api": 0 / {default_limit} slots occupied'
    assert _limit(tmp_path, "reconcile") == f'"reconcile": 0 / {default_limit} slots occupied'
    assert "scripts/pool_limits.sh" in (ROOT / "scripts/run.sh").read_text()  # run.sh takes this step
