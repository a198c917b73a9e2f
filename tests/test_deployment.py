"""The deployment files agree with the code: every setting documented (docs/configuration.md), compose and
instance valid."""

from __future__ import annotations

import ast
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

#: A name that is an environment variable wherever it appears as a whole string literal.
ENV_NAME = re.compile(
    r"^(?:SOCIALREC|SOL_TRACKER|MONGODB|REDIS|RABBITMQ|TWITTERAPI|GITHUB|YOUTUBE|APIFY|REDDIT|TELEGRAM|URLSCAN|AF"
    r"|DAGSTER)_[A-Z0-9_]+$"
)
#: Direct reads of any upper-case name, whatever its prefix.
_DIRECT_READ = re.compile(
    r'(?:env_or|EnvVar|environ\.get|getenv)\(\s*"([A-Z][A-Z0-9_]+)"|environ\["([A-Z][A-Z0-9_]+)"\]'
)
#: `${NAME:-default}` / `${NAME-}` in a shell script; `env: NAME` in a Dagster instance file.
_SHELL_READ = re.compile(r"\$\{((?:SOCIALREC|DAGSTER|MONGODB|REDIS|RABBITMQ|PGBOUNCER)_[A-Z0-9_]+)(?::?-|\})")
_INSTANCE_READ = re.compile(r"^\s*env:\s*([A-Z][A-Z0-9_]+)\s*$", re.M)
CONFIGURATION_DOC = ROOT / "docs" / "configuration.md"


def names_in_python(source: str) -> set[str]:
    """Every string literal of `source` that is a whole variable name: read directly
    (`environ.get("X")`, `EnvVar("X")`) or through a constant or a registry (`WEBHOOK_ENV = "X"`,
    `Knob("X", ...)`, `ENV_NAMES`, the launch gate's resource settings)."""
    literals = {
        node.value
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and ENV_NAME.match(node.value)
    }
    return literals | {a or b for a, b in _DIRECT_READ.findall(source)}


def variables_the_code_reads() -> set[str]:
    from socialrec_pipeline.defs.launch_gate import KNOBS, RESOURCE_SETTINGS

    names: set[str] = set(ENV_NAMES)
    names |= {name for fields in RESOURCE_SETTINGS.values() for name in fields.values()}
    names |= {knob.cap_variable for knobs in KNOBS.values() for knob in knobs.values()}
    for path in PACKAGE.rglob("*.py"):
        names |= names_in_python(path.read_text())
    for path in (ROOT / "scripts").glob("*.sh"):
        names |= set(_SHELL_READ.findall(path.read_text()))
    for path in (ROOT / "deploy").glob("*.yaml"):
        names |= set(_INSTANCE_READ.findall(path.read_text()))
    return names


def documented_variables(text: str) -> set[str]:
    """The names in the first column of every table row of the configuration page."""
    first_cells = re.findall(r"^\|([^|]+)\|", text, re.M)
    return {name for cell in first_cells for name in re.findall(r"`([A-Z][A-Z0-9_]+)`", cell)}


def test_the_configuration_table_lists_exactly_the_variables_the_code_reads():
    read = variables_the_code_reads()
    assert read >= CONTRACT_ENV, CONTRACT_ENV - read
    documented = documented_variables(CONFIGURATION_DOC.read_text())
    assert read - documented == set(), "read by the code but missing from docs/configuration.md"
    assert documented - read == set(), "in docs/configuration.md but read nowhere"


def test_reads_through_constants_and_registries_are_detected():
    source = (
        'WEBHOOK = "SOCIALREC_NEW_HOOK"\n'
        "def f(env):\n    return env.get(WEBHOOK)\n"
        'CAP = Knob("SOCIALREC_CAP_NEW", 1)\n'
        'TABLE = {"field": "NEW_SERVICE_URL", "other": "SOL_TRACKER_NEW"}\n'
        'MESSAGE = "set SOCIALREC_ENV in the environment"\n'
        'KEY = dg.EnvVar("DISCORD_BOT_TOKEN")\n'
    )
    found = {"SOCIALREC_NEW_HOOK", "SOCIALREC_CAP_NEW", "SOL_TRACKER_NEW", "DISCORD_BOT_TOKEN"}
    assert names_in_python(source) == found
    assert _SHELL_READ.findall('P="${SOCIALREC_X:-1}"; Q="${DAGSTER_Y}"; R="$ROOT"') == ["SOCIALREC_X", "DAGSTER_Y"]
    assert _INSTANCE_READ.findall("hostname:\n  env: DAGSTER_POSTGRES_HOST\n") == ["DAGSTER_POSTGRES_HOST"]


def test_a_row_missing_or_a_stale_row_fails_the_comparison():
    read = variables_the_code_reads()
    text = CONFIGURATION_DOC.read_text()
    without_a_row = "\n".join(line for line in text.splitlines() if not line.startswith("| `APIFY_TOKEN`"))
    assert read - documented_variables(without_a_row) == {"APIFY_TOKEN"}
    with_a_stale_row = text + "\n| `SOCIALREC_NOT_READ_ANYWHERE` | location | — | nothing |\n"
    assert documented_variables(with_a_stale_row) - read == {"SOCIALREC_NOT_READ_ANYWHERE"}


def compose() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def test_compose_runs_the_whole_stack_with_the_webserver_on_loopback_only():
    services = compose()["services"]
    assert set(services) == {
        "mongo", "redis", "rabbitmq", "postgres", "pgbouncer", "user-code", "webserver", "daemon"
    }  # fmt: skip
    assert services["mongo"]["image"].startswith("mongo:7")
    assert services["redis"]["image"].startswith("redis:7")
    assert services["rabbitmq"]["image"] == "rabbitmq:3-management"
    for name, service in services.items():
        for port in service.get("ports", []):
            assert str(port).startswith("127.0.0.1:"), f"{name} publishes {port} beyond loopback"
    assert services["webserver"]["ports"] == ["127.0.0.1:3000:3000"]


def test_compose_s_dagster_services_reach_postgres_through_pgbouncer_only():
    """Every Dagster process reaches its storage through the pooler (scripts/pgbouncer.sh), which
    alone reaches the postgres service: a service left on postgres directly would fork a server
    backend for each of its storage calls again."""
    services = compose()["services"]
    environment = compose()["x-socialrec-env"]
    assert (environment["DAGSTER_POSTGRES_HOST"], environment["DAGSTER_POSTGRES_PORT"]) == ("pgbouncer", "6432")
    pooler = services["pgbouncer"]
    assert pooler["build"]["dockerfile"] == "deploy/pgbouncer.Dockerfile"
    assert "scripts/pgbouncer.sh" in (ROOT / "deploy/pgbouncer.Dockerfile").read_text()
    assert (pooler["environment"]["DAGSTER_POSTGRES_HOST"], pooler["environment"]["PGBOUNCER_LISTEN_PORT"]) == (
        "postgres", environment["DAGSTER_POSTGRES_PORT"]
    )
    assert pooler["environment"]["DAGSTER_POSTGRES_USER"] == environment["DAGSTER_POSTGRES_USER"]
    for name in ("user-code", "webserver", "daemon"):
        assert services[name]["environment"] == environment
        assert "pgbouncer" in services[name]["depends_on"] and "postgres" not in services[name]["depends_on"], name


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
