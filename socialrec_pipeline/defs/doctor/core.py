"""What every doctor check shares: the row (`Finding`), the context the checks read, and the
small helpers that keep secrets out of a row.
"""

from __future__ import annotations

import contextlib
import functools
import re
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import urlsplit

import dagster as dg

from socialrec_pipeline.defs.resources import RecordingSettingsResource, bound_resources_from_env
from socialrec_pipeline.providers.http import build_client
from socialrec_pipeline.recording.settings import RecordingSettings

Status = Literal["ok", "warn", "fail"]
STATUSES: tuple[Status, ...] = ("ok", "warn", "fail")

#: Seconds each check may take before its row says it timed out.
DEFAULT_TIMEOUT_S = 10.0
#: The daemon beats every ~20 s; older than this and it is considered stopped.
HEARTBEAT_FRESH_S = 120.0
#: The daemons the code location needs: the sensor and the schedules.
REQUIRED_DAEMONS = ("SENSOR", "SCHEDULER", "QUEUED_RUN_COORDINATOR")
#: A mint every SolTracker deployment may or may not know (wrapped SOL): 200 and 404 both prove the key.
PROBE_ADDRESS = "So11111111111111111111111111111111111111112"
#: A GitHub login that exists; the answer's status is all the doctor reads.
PROBE_GITHUB_LOGIN = "github"
#: A YouTube channel id (YouTube's own); one `channels` call costs 1 quota unit.
PROBE_YOUTUBE_CHANNEL = "UCBR8-60-B28hp2BmDPdntcQ"
PROBE_DOMAIN = "example.com"
#: Index names RecordInbox.ensure_indexes creates (stream/inbox.py).
INBOX_INDEXES = ("uniq_inbox_token_address", "idx_inbox_state", "idx_inbox_check_at")
#: The doctor's own keys and documents; nothing of the product is touched.
PROBE_PREFIX = "socialrec-doctor:"
PROBE_COLLECTION = "_socialrec_doctor"


@dataclass(frozen=True)
class Finding:
    """One row: the check's name, its verdict, what was found and what to do about it."""

    check: str
    status: Status
    finding: str
    action: str = ""

    def masked(self, secrets: Sequence[str]) -> Finding:
        text, todo = self.finding, self.action
        for secret in secrets:
            if secret and len(secret) >= 4:
                text, todo = text.replace(secret, "***"), todo.replace(secret, "***")
        return Finding(self.check, self.status, text, todo)


class ConfigMissing(Exception):
    """A resource could not be built from the environment (a required variable unset)."""


@functools.cache
def _init_instance() -> dg.DagsterInstance:
    """The instance `build_resources` hands each resource's init context. None of ours reads it;
    without one, every build makes an ephemeral instance of its own (~45 ms of CPU, mostly
    Alembic stamping its in-memory tables), and a doctor run builds up to six."""
    return dg.DagsterInstance.ephemeral()


@dataclass
class DoctorContext:
    """What the checks read. `resources` is the code location's resource map (bound_resources_from_env()
    by default); `instance` opens the Dagster instance (DagsterInstance.get by default)."""

    resources: Mapping[str, Any] = field(default_factory=bound_resources_from_env)
    instance: Callable[[], dg.DagsterInstance] | None = dg.DagsterInstance.get
    definitions: Callable[[], dg.Definitions] | None = None
    spend_quota: bool = False
    timeout_s: float = DEFAULT_TIMEOUT_S
    heartbeat_fresh_s: float = HEARTBEAT_FRESH_S
    _built: dict[str, Any] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def resource(self, name: str) -> Any:
        """The resource `name` with its `EnvVar`s resolved, as a run would get it."""
        with self._lock:
            if name not in self._built:
                try:
                    with dg.build_resources({name: self.resources[name]}, instance=_init_instance()) as built:
                        self._built[name] = getattr(built, name)
                except Exception as exc:  # an unset required variable, a malformed value
                    self._built[name] = ConfigMissing(_config_error(exc))
            value = self._built[name]
        if isinstance(value, ConfigMissing):
            raise value
        return value

    def dagster_instance(self) -> dg.DagsterInstance:
        with self._lock:
            if "__instance__" not in self._built:
                try:
                    if self.instance is None:
                        raise ConfigMissing("no Dagster instance")
                    self._built["__instance__"] = self.instance()
                except Exception as exc:
                    self._built["__instance__"] = exc
            value = self._built["__instance__"]
        if isinstance(value, Exception):
            raise value
        return value

    def secrets(self) -> list[str]:
        """Every secret value the resources hold (masked in every row)."""
        found: list[str] = []
        for name in ("mongo", "soltracker", "generators", "redis", "rabbitmq"):
            with contextlib.suppress(Exception):
                found += _secret_values(self.resource(name))
        return found

    def settings(self) -> RecordingSettings:
        recording = self.resources.get("recording") or RecordingSettingsResource.from_environment()
        return recording.settings()


def _config_error(exc: Exception) -> str:
    text = str(exc)
    unset = re.search(r'environment variable "([A-Za-z_][A-Za-z0-9_]*)" which is not set', text)
    if unset:
        return f"{unset.group(1)} is unset"
    return first_line(exc)


def _secret_values(resource: Any) -> list[str]:
    values: list[str] = []
    for name, value in vars(resource).items() if hasattr(resource, "__dict__") else ():
        if isinstance(value, str) and name in ("api_key", "token", "client_secret"):
            values.append(value)
        elif isinstance(value, str) and name in ("uri", "url"):
            password = urlsplit(value).password
            if password:
                values.append(password)
        elif isinstance(value, dg.ConfigurableResource):
            values += _secret_values(value)
    return values


def set_or_unset(value: Any) -> str:
    return "set" if value else "unset"


@contextlib.contextmanager
def http_client(base_url: str, timeout_s: float, **kw: Any) -> Iterator[Any]:
    client = build_client(base_url, timeout=min(timeout_s, 5.0), **kw)
    try:
        yield client
    finally:
        client.close()


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return (text.splitlines()[0] if text else type(exc).__name__)[:300]
