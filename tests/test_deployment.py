"""The deployment files agree with the code: every setting documented, compose and instance valid."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from socialrec_pipeline.recording.settings import ENV_NAMES

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "socialrec_pipeline"

#: The names SPEC and the foundation issue fix for every deployment.
CONTRACT_ENV = {
    "MONGODB_URI", "MONGODB_DATABASE", "REDIS_URL", "RABBITMQ_URL", "SOCIALREC_ENV",
    "SOL_TRACKER_BASE_URL", "SOL_TRACKER_API_KEY", "AF_GROUP_IDS", "TWITTERAPI_BASE_URL",
    "TWITTERAPI_API_KEY", "GITHUB_API_BASE_URL", "GITHUB_TOKEN", "YOUTUBE_API_BASE_URL",
    "YOUTUBE_API_KEY", "APIFY_BASE_URL", "APIFY_TOKEN", "REDDIT_BASE_URL", "TELEGRAM_BASE_URL",
    "URLSCAN_BASE_URL", "URLSCAN_API_KEY", "SOCIALREC_ENABLE_PAID", "SOCIALREC_ENABLE_COMMUNITY",
}  # fmt: skip

_READS = re.compile(r'(?:env_or|EnvVar|environ\.get)\(\s*"([A-Z][A-Z0-9_]+)"|environ\["([A-Z][A-Z0-9_]+)"\]')


def variables_the_code_reads() -> set[str]:
    names: set[str] = set(ENV_NAMES)
    for path in PACKAGE.rglob("*.py"):
        for match in _READS.finditer(path.read_text()):
            names.add(match.group(1) or match.group(2))
    return names


def readme_table_variables() -> set[str]:
    text = (ROOT / "README.md").read_text()
    section = text.split("## Configuration", 1)[1].split("\n## ", 1)[0]
    first_cells = re.findall(r"^\|([^|]+)\|", section, re.M)
    return {name for cell in first_cells for name in re.findall(r"`([A-Z][A-Z0-9_]+)`", cell)}


def test_every_variable_the_code_reads_is_documented_in_the_readme_table():
    read = variables_the_code_reads()
    assert read >= CONTRACT_ENV, CONTRACT_ENV - read
    assert read - readme_table_variables() == set()


def compose() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def test_compose_runs_the_whole_stack_with_the_webserver_on_loopback_only():
    services = compose()["services"]
    assert set(services) == {"mongo", "redis", "rabbitmq", "postgres", "user-code", "webserver", "daemon"}
    assert services["mongo"]["image"].startswith("mongo:7")
    assert services["redis"]["image"].startswith("redis:7")
    assert services["rabbitmq"]["image"] == "rabbitmq:3-management"
    for name, service in services.items():
        for port in service.get("ports", []):
            assert str(port).startswith("127.0.0.1:"), f"{name} publishes {port} beyond loopback"
    assert services["webserver"]["ports"] == ["127.0.0.1:3000:3000"]


def test_compose_passes_every_contract_variable_to_the_code_location():
    environment = compose()["x-socialrec-env"]
    assert set(environment) >= CONTRACT_ENV


@pytest.mark.skipif(shutil.which("docker-compose") is None, reason="docker-compose is not installed")
def test_compose_file_is_valid():
    result = subprocess.run(["docker-compose", "config", "-q"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("instance_file", ["dagster.yaml", "deploy/dagster.yaml"])
def test_instance_files_cap_runs_by_job_family_and_partition(instance_file, tmp_path, monkeypatch):
    from dagster import DagsterInstance

    config = yaml.safe_load((ROOT / instance_file).read_text())
    config.pop("storage", None)  # Postgres storage is exercised by the compose stack, not here
    (tmp_path / "dagster.yaml").write_text(yaml.safe_dump(config))
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))
    with DagsterInstance.get() as instance:
        queue = instance.get_concurrency_config().run_queue_config
        limits = {(lim["key"], str(lim.get("value"))): lim["limit"] for lim in queue.tag_concurrency_limits}
        assert limits[("socialrec/job", "reconcile")] == 2
        assert limits[("socialrec/job", "retry")] == 3
        assert limits[("socialrec/job", "metric_refresh")] == 1
        assert limits[("socialrec/job", "wallets_backfill")] == 1
        assert limits[("dagster/partition", str({"applyLimitPerUniqueValue": True}))] == 1
        assert instance.get_concurrency_config().pool_config.default_pool_limit == 2


def test_workspaces_load_the_socialrec_pipeline_location():
    local = yaml.safe_load((ROOT / "workspace.yaml").read_text())["load_from"][0]["python_module"]
    assert local == {"module_name": "socialrec_pipeline.defs.definitions", "location_name": "socialrec_pipeline"}
    deployed = yaml.safe_load((ROOT / "deploy/workspace.yaml").read_text())["load_from"][0]["grpc_server"]
    assert deployed["location_name"] == "socialrec_pipeline"
