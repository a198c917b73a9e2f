"""What a launch may carry (SPEC §10, "Deployment settings are deployment-only").

One place decides, for any run whatever launched it (the Launchpad, GraphQL, a schedule, a sensor, a
backfill, an asset's Materialize button, a check's Execute button):

- **Resources**: no field of any resource may be set in run config. Each resource field is a
  deployment setting with an environment variable (`RESOURCE_SETTINGS`); a refusal names it.
- **Per-run knobs** (`KNOBS`): an integer from 1 to the deployment's cap, a `SOCIALREC_CAP_*`
  setting with a default (`LaunchCaps`). Every other op config field is refused unless it is one
  of the few per-token inputs (`TOKEN_INPUTS`), each validated.
- **Run tags**: launcher tags that carry container, environment or routing settings
  (`dagster-k8s/config`, the Celery queue, Docker/ECS container settings) are refused; the job
  family tag `socialrec/job` cannot be changed, and is added where a launch path left it out (an
  asset materialization of `reconciled_hours`), so the run queue's limits and the UI's filters hold.

Plain Python on the run's config and tags: `GatedRunCoordinator` (defs/run_coordinator.py) calls
it before a run is queued, and the ops call `refuse_op_config` again when they start (a run executed
in process, without the coordinator, is held to the same bounds). `launch_refusals` is the function a
benchmark or a test can call to try a launch without Dagster.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from socialrec_pipeline.defs.tags import JOB_FAMILY_TAG
from socialrec_pipeline.domain.events import MAX_SYMBOL_CHARS, is_token_address
from socialrec_pipeline.recording.settings import ENV_NAMES

#: Resource key → config path (dotted, under `resources.<key>.config`) → the environment variable
#: that sets it. Every field of every resource of the code location is listed (a test checks it).
RESOURCE_SETTINGS: dict[str, dict[str, str]] = {
    "mongo": {"uri": "MONGODB_URI", "database": "MONGODB_DATABASE"},
    "redis": {"url": "REDIS_URL"},
    "rabbitmq": {
        "url": "RABBITMQ_URL",
        "env": "SOCIALREC_ENV",
        "exchange": "RABBITMQ_EXCHANGE",
        "management_url": "RABBITMQ_MANAGEMENT_URL",
    },
    "soltracker": {
        "base_url": "SOL_TRACKER_BASE_URL",
        "api_key": "SOL_TRACKER_API_KEY",
        "af_group_ids": "AF_GROUP_IDS",
    },
    "recording": {field: name for name, field in ENV_NAMES.items()},
    "signals": {
        "cluster_hub_limit": "SOCIALREC_CLUSTER_HUB_LIMIT",
        "cluster_retention_days": "SOCIALREC_CLUSTER_RETENTION_DAYS",
    },
    "generators": {
        "x.base_url": "TWITTERAPI_BASE_URL",
        "x.api_key": "TWITTERAPI_API_KEY",
        "github.base_url": "GITHUB_API_BASE_URL",
        "github.token": "GITHUB_TOKEN",
        "youtube.base_url": "YOUTUBE_API_BASE_URL",
        "youtube.api_key": "YOUTUBE_API_KEY",
        "telegram.base_url": "TELEGRAM_BASE_URL",
        "telegram.bot_api_base_url": "TELEGRAM_BOT_API_BASE_URL",
        "telegram.bot_token": "TELEGRAM_BOT_TOKEN",
        "apify.base_url": "APIFY_BASE_URL",
        "apify.token": "APIFY_TOKEN",
        "reddit.base_url": "REDDIT_BASE_URL",
        "reddit.client_id": "REDDIT_CLIENT_ID",
        "reddit.client_secret": "REDDIT_CLIENT_SECRET",
        "urlscan.base_url": "URLSCAN_BASE_URL",
        "urlscan.api_key": "URLSCAN_API_KEY",
    },
}


@dataclass(frozen=True)
class Knob:
    """A per-run integer: 1 ≤ value ≤ the deployment's cap (`cap_variable`, default `cap_default`)."""

    cap_variable: str
    cap_default: int
    nullable: bool = False  # null = "the deployment's own value" (e.g. SOCIALREC_RETRY_LIMIT)


#: Op name (the step a job, a schedule or an asset materialization runs) → its bounded knobs.
KNOBS: dict[str, dict[str, Knob]] = {
    "retry_urls": {"limit": Knob("SOCIALREC_CAP_RETRY_LIMIT", 1000, nullable=True)},
    "refresh_metrics": {
        "budget": Knob("SOCIALREC_CAP_METRIC_BUDGET", 2000),
        "lookback_hours": Knob("SOCIALREC_CAP_METRIC_LOOKBACK_HOURS", 720),
    },
    # A reconcile run stops before the next hourly run starts.
    "reconcile_window": {"max_minutes": Knob("SOCIALREC_CAP_RECONCILE_MINUTES", 55)},
    "backfill_known_wallets": {
        "batch_size": Knob("SOCIALREC_CAP_WALLETS_BATCH_SIZE", 10_000),
        "max_batches": Knob("SOCIALREC_CAP_WALLETS_MAX_BATCHES", 100_000, nullable=True),
    },
}

_OBJECT_ID = re.compile(r"^[0-9a-f]{24}$")


def _token_address(value: Any) -> str | None:
    if is_token_address(value):
        return None
    return "a base58 mint address (32-44 characters)"


def _optional(pattern: re.Pattern[str], what: str, max_chars: int = 64):
    def check(value: Any) -> str | None:
        if value is None or (isinstance(value, str) and len(value) <= max_chars and pattern.match(value)):
            return None
        return what

    return check


def _optional_instant(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, str) and len(value) <= 64:
        try:
            datetime.fromisoformat(value)
            return None
        except ValueError:
            pass
    return "null or an ISO-8601 instant"


def _optional_text(max_chars: int):
    def check(value: Any) -> str | None:
        if value is None or (isinstance(value, str) and len(value) <= max_chars):
            return None
        return f"null or text of at most {max_chars} characters"

    return check


def _bool(value: Any) -> str | None:
    return None if isinstance(value, bool) else "true or false"


#: Op → the per-token inputs it takes at launch (each validated; none of them is a setting).
TOKEN_INPUTS: dict[str, dict[str, Any]] = {
    "prepare": {
        "token_address": _token_address,
        "first_flow_timestamp": _optional_instant,
        "symbol": _optional_text(MAX_SYMBOL_CHARS),
        "force_below_threshold": _bool,
    },
    "backfill_known_wallets": {"after_id": _optional(_OBJECT_ID, "null or a 24-hex-digit account _id")},
}

#: Op → the `socialrec/job` value of its runs, whichever job (or asset job) runs the op.
OP_FAMILY: dict[str, str] = {
    "reconcile_window": "reconcile",
    "retry_urls": "retry",
    "refresh_metrics": "metric_refresh",
    "backfill_known_wallets": "wallets_backfill",
}
#: Asset → the `socialrec/job` value of the runs that materialize it.
ASSET_FAMILY: dict[str, str] = {"reconciled_hours": "reconcile"}
#: Job → its `socialrec/job` value (the tag the job definition sets).
JOB_FAMILY: dict[str, str] = {
    "record_token_job": "record_token",
    "reconcile_job": "reconcile",
    "retry_job": "retry",
    "metric_refresh_job": "metric_refresh",
    "wallets_backfill_job": "wallets_backfill",
    "integrity_job": "integrity",
    "recording_health_job": "health",
    "operator_checks_job": "health",
    "deployment_ready_job": "health",
    "signals_job": "signals",
}

#: Run tags that configure the launcher (the run's container, environment, image or route): a
#: launch may not carry them, whatever their value. Key prefix → the deployment setting instead.
LAUNCHER_TAG_PREFIXES: dict[str, str] = {
    "dagster-k8s/": "the run launcher's run_k8s_config in deploy/helm-values.yaml (and the socialrec-env Secret)",
    "dagster-celery/queue": "SOCIALREC_CELERY_RUN_QUEUE (deploy/celery-run-launcher.yaml)",
    "dagster-celery/run_priority": "the run queue's limits in dagster.yaml",
    "dagster-celery/config": "deploy/celery-run-launcher.yaml",
    "dagster-docker/": "the run launcher's container settings in the deployment's dagster.yaml",
    "dagster-ecs/": "the run launcher's task settings in the deployment's dagster.yaml",
    "ecs/": "the run launcher's task settings in the deployment's dagster.yaml",
    "docker/": "the run launcher's container settings in the deployment's dagster.yaml",
}

_DEPLOYMENT = "in the deployment's environment (docs/configuration.md) and restart or reload the code location"


class LaunchRefused(Exception):
    """A launch carried something a launch may not set; the message says what and what to change."""

    def __init__(self, refusals: Iterable[str]) -> None:
        self.refusals = list(refusals)
        super().__init__(
            "Launch refused (nothing ran): " + " ".join(f"({i}) {r}" for i, r in enumerate(self.refusals, 1))
        )


@dataclass(frozen=True)
class LaunchCaps:
    """The deployment's caps of the per-run knobs (`SOCIALREC_CAP_*`, read where the check runs)."""

    caps: Mapping[str, int]
    errors: tuple[str, ...] = ()

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> LaunchCaps:
        env = os.environ if environ is None else environ
        caps: dict[str, int] = {}
        errors: list[str] = []
        for knobs in KNOBS.values():
            for knob in knobs.values():
                raw = (env.get(knob.cap_variable) or "").strip()
                if not raw:
                    caps[knob.cap_variable] = knob.cap_default
                    continue
                try:
                    value = int(raw)
                except ValueError:
                    value = 0
                if value < 1:
                    # Fail closed: a malformed cap refuses the knob rather than lifting the bound.
                    errors.append(
                        f"{knob.cap_variable}={raw!r} is not a whole number of at least 1; fix it {_DEPLOYMENT}"
                    )
                    caps[knob.cap_variable] = 0
                else:
                    caps[knob.cap_variable] = value
        return cls(caps, tuple(errors))

    def cap(self, knob: Knob) -> int:
        return self.caps.get(knob.cap_variable, knob.cap_default)


def _leaves(value: Any, prefix: str) -> Iterable[str]:
    """Dotted paths of the values set under `value` (an empty mapping sets nothing)."""
    if isinstance(value, Mapping):
        for key, inner in value.items():
            if key == "env" and prefix and not isinstance(inner, Mapping):  # {env: NAME} is still a value
                yield prefix
                return
            yield from _leaves(inner, f"{prefix}.{key}" if prefix else str(key))
    elif value is not None or prefix:
        yield prefix


def resource_refusals(key: str, config: Any) -> list[str]:
    """Refusals for `resources.<key>.config` set to `config` (nothing set = none)."""
    if config is None or config == {}:
        return []
    settings = RESOURCE_SETTINGS.get(key)
    if settings is None:
        return [
            f"run config sets resources.{key}.config: resources are deployment settings and cannot be set at "
            f"launch; {key} is configured by the deployment (dagster.yaml and the code location), not per run."
        ]
    refusals = []
    for path in _leaves(config, "") if isinstance(config, Mapping) else [""]:
        variable = settings.get(path) or next(
            (var for field, var in settings.items() if path.startswith(field + ".")), None
        )
        where = f"resources.{key}.config" + (f".{path}" if path else "")
        if variable is None:
            known = ", ".join(sorted(set(settings.values())))
            refusals.append(
                f"run config sets {where}: resources are deployment settings and cannot be set at launch; "
                f"the {key} resource is configured by {known} {_DEPLOYMENT}."
            )
        else:
            refusals.append(
                f"run config sets {where}: resources are deployment settings and cannot be set at launch; "
                f"set {variable} {_DEPLOYMENT}."
            )
    return refusals


def knob_refusals(op: str, config: Mapping[str, Any], caps: LaunchCaps | None = None) -> list[str]:
    """Refusals for `ops.<op>.config` = `config` (bounds of the knobs, validity of token inputs)."""
    caps = caps or LaunchCaps.from_env()
    knobs = KNOBS.get(op, {})
    inputs = TOKEN_INPUTS.get(op, {})
    refusals = []
    for field, value in config.items():
        where = f"ops.{op}.config.{field}"
        if field in knobs:
            knob = knobs[field]
            cap = caps.cap(knob)
            if value is None and knob.nullable:
                continue
            if cap < 1:
                refusals.append(f"{where} cannot be checked: {knob.cap_variable} is malformed; fix it {_DEPLOYMENT}.")
            elif isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= cap:
                refusals.append(
                    f"{where}={value!r} is out of bounds: it must be a whole number from 1 to {cap} "
                    f"(the cap is the deployment setting {knob.cap_variable})."
                )
        elif field in inputs:
            expected = inputs[field](value)
            if expected:
                refusals.append(f"{where}={value!r} is refused: expected {expected}.")
        else:
            refusals.append(
                f"run config sets {where}, which is not a per-run setting of this step "
                f"(per-run settings here: {', '.join(sorted([*knobs, *inputs])) or 'none'})."
            )
    return refusals


def tag_refusals(tags: Mapping[str, str], family: str | None) -> list[str]:
    refusals = []
    for key in sorted(tags):
        for prefix, instead in LAUNCHER_TAG_PREFIXES.items():
            if key.startswith(prefix):
                refusals.append(
                    f"run tag {key} configures the run launcher (container, environment or route) and cannot be "
                    f"set at launch; change {instead} instead."
                )
                break
    value = tags.get(JOB_FAMILY_TAG)
    if family is not None and value is not None and value != family:
        refusals.append(
            f"run tag {JOB_FAMILY_TAG}={value} would take this run out of the {family} limits; "
            f"the tag is set by the job ({family}) and cannot be changed at launch."
        )
    return refusals


def run_family(job_name: str, op_names: Iterable[str] = (), asset_names: Iterable[str] = ()) -> str | None:
    """The `socialrec/job` value of a run of `job_name` that executes these ops / assets."""
    if job_name in JOB_FAMILY:
        return JOB_FAMILY[job_name]
    for asset in asset_names:
        if asset in ASSET_FAMILY:
            return ASSET_FAMILY[asset]
    for op in op_names:
        if op in OP_FAMILY:
            return OP_FAMILY[op]
    return None


def launch_refusals(
    run_config: Mapping[str, Any] | None,
    tags: Mapping[str, str] | None = None,
    *,
    job_name: str = "",
    asset_names: Iterable[str] = (),
    caps: LaunchCaps | None = None,
) -> list[str]:
    """Every reason to refuse this launch (empty: it may run). Pure; no Dagster involved."""
    caps = caps or LaunchCaps.from_env()
    run_config = run_config or {}
    refusals: list[str] = []
    resources = run_config.get("resources") or {}
    for key, section in resources.items():
        if not isinstance(section, Mapping) or any(k != "config" and v not in (None, {}) for k, v in section.items()):
            refusals.append(
                f"run config sets resources.{key} beyond its config; resources are fixed by the deployment."
            )
            continue
        refusals.extend(resource_refusals(key, section.get("config")))
    ops = run_config.get("ops") or {}
    for op, section in ops.items():
        if not isinstance(section, Mapping):
            refusals.append(f"run config sets ops.{op} to {section!r}; only ops.{op}.config is accepted.")
            continue
        extra = sorted(key for key, value in section.items() if key != "config" and value not in (None, {}))
        if extra:
            refusals.append(f"run config sets ops.{op}.{extra[0]}: only ops.{op}.config is accepted at launch.")
        config = section.get("config") or {}
        if isinstance(config, Mapping):
            refusals.extend(knob_refusals(op, config, caps))
        else:
            refusals.append(f"run config sets ops.{op}.config to {config!r}; expected a mapping of per-run settings.")
    refusals.extend(tag_refusals(tags or {}, run_family(job_name, ops, asset_names)))
    return refusals


def refuse_op_config(op: str, config: Mapping[str, Any]) -> None:
    """Raise `LaunchRefused` when an op's config breaks the bounds (called as the op starts)."""
    refusals = knob_refusals(op, config)
    if refusals:
        raise LaunchRefused(refusals)
