"""Typed settings of the recording services. Every default is the closed, cheap choice.

A missing value takes its default; a malformed value raises (never coerced into "on" or into a
lower threshold). The earlier system compared `x < undefined`, which let every event through when
the key was misspelt — here the threshold is a strict int that may not go below the constant.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, ValidationError, field_validator

from socialrec_pipeline.domain.enums import Platform
from socialrec_pipeline.domain.events import AF_INVESTOR_THRESHOLD

if TYPE_CHECKING:
    from socialrec_pipeline.routing.gate import GateSettings

DEFAULT_PAID_PLATFORMS: frozenset[Platform] = frozenset({Platform.TIKTOK, Platform.INSTAGRAM})

#: Environment variable → field, for `RecordingSettings.from_env`.
ENV_NAMES: dict[str, str] = {
    "SOCIALREC_AF_THRESHOLD": "af_threshold",
    "SOCIALREC_ENABLE_PAID": "enable_paid",
    "SOCIALREC_ENABLE_COMMUNITY": "enable_community",
    "SOCIALREC_PAID_PLATFORMS": "paid_platforms",
    "SOCIALREC_MAX_ATTEMPTS": "max_attempts",
    "SOCIALREC_RETRY_MIN_INTERVAL_MINUTES": "retry_min_interval_minutes",
    "SOCIALREC_RETRY_LIMIT": "retry_limit",
    "SOCIALREC_RECONCILE_PAGE_LIMIT": "reconcile_page_limit",
    "SOCIALREC_LOCK_TTL_S": "lock_ttl_s",
    "SOCIALREC_UNKNOWN_TOKEN_TTL_S": "unknown_token_ttl_s",
    "SOCIALREC_METRIC_MIN_INTERVAL_MINUTES": "metric_min_interval_minutes",
    "SOCIALREC_PROFILE_MAX_AGE_HOURS": "profile_max_age_hours",
}


class SettingError(ValueError):
    """A malformed or out-of-range setting. Its message is one paragraph naming the variable,
    the value and what is accepted: what an operator reads in a failed run, tick or load."""


def _one_paragraph(exc: ValidationError, values: Mapping[str, Any]) -> str:
    fields = {field: name for name, field in ENV_NAMES.items()}
    parts = []
    for error in exc.errors():
        field = str(error["loc"][0]) if error.get("loc") else "?"
        name = fields.get(field, field)
        parts.append(f"{name}={values.get(field)!r} is refused: {error['msg']}")
    return "; ".join(parts) + (
        ". Fix the variable in the deployment's environment (docs/configuration.md) and restart or reload; "
        "a malformed setting never falls back to a more permissive value."
    )


class RecordingSettings(BaseModel):
    """Frozen settings for recording, reconcile and retry (SPEC §2.3, §6–§8)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    af_threshold: StrictInt = Field(default=AF_INVESTOR_THRESHOLD, ge=AF_INVESTOR_THRESHOLD)
    enable_paid: StrictBool = False
    enable_community: StrictBool = False
    paid_platforms: frozenset[Platform] = DEFAULT_PAID_PLATFORMS
    max_attempts: StrictInt = Field(default=5, ge=1, le=100)
    retry_min_interval_minutes: StrictInt = Field(default=60, ge=0)
    retry_limit: StrictInt = Field(default=50, ge=1, le=10_000)
    reconcile_page_limit: StrictInt = Field(default=100, ge=1, le=200)
    lock_ttl_s: StrictInt = Field(default=120, ge=10, le=3600)
    unknown_token_ttl_s: StrictInt = Field(default=300, ge=1, le=86_400)
    #: The metric refresh adds a point to an object only when its last point is older (SPEC §9).
    metric_min_interval_minutes: StrictInt = Field(default=60, ge=1, le=7 * 24 * 60)
    #: A stored full profile younger than this is not fetched again for an embedded copy (SPEC §5;
    #: 0 = fetch on every observation).
    profile_max_age_hours: StrictInt = Field(default=7 * 24, ge=0, le=24 * 365)

    @field_validator("paid_platforms", mode="before")
    @classmethod
    def _paid_platforms(cls, value: Any) -> Any:
        # An empty set would silently make every provider "free": refuse it.
        if value is None or (hasattr(value, "__len__") and len(value) == 0):
            raise ValueError("paid_platforms may not be empty")
        return value

    def gate_settings(self) -> GateSettings:
        """The routing gate's settings built from these values."""
        from socialrec_pipeline.routing.gate import GateSettings

        return GateSettings(
            enable_paid=self.enable_paid,
            enable_community=self.enable_community,
            paid_platforms=frozenset(self.paid_platforms),
        )

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> RecordingSettings:
        """Build from environment-style strings; a malformed value raises `ValueError`.

        The paid/community switches and the paid platform set are parsed by the gate's own
        parser, so one spelling of `SOCIALREC_ENABLE_PAID` is accepted everywhere."""
        from socialrec_pipeline.routing.gate import GateSettings

        try:
            gate = GateSettings.from_env({k: v for k, v in env.items() if v is not None and v.strip() != ""})
        except ValueError as exc:
            raise SettingError(f"{exc}. Fix the variable in the deployment's environment and restart or reload; "
                               "the paid gate stays closed meanwhile.") from None
        values: dict[str, Any] = {
            "enable_paid": gate.enable_paid,
            "enable_community": gate.enable_community,
            "paid_platforms": frozenset(gate.paid_platforms),
        }
        for name, field in ENV_NAMES.items():
            raw = env.get(name)
            if field in values or raw is None or raw.strip() == "":
                continue
            try:
                values[field] = int(raw.strip())
            except ValueError:
                raise SettingError(
                    f"{name} must be an integer, got {raw.strip()!r}. Fix the variable in the deployment's "
                    "environment (docs/configuration.md) and restart or reload."
                ) from None
        try:
            return cls(**values)
        except ValidationError as exc:
            raise SettingError(_one_paragraph(exc, values)) from None
