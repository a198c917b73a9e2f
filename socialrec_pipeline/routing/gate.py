"""The gate: may this routed URL be fetched now? (SPEC §2.3, §3.5)

Order: a paid platform while paid is off → `skipped_paid`; an X community while communities are off
→ `unsupported` ("community fetching disabled"); no generator for the source type → `unsupported`.
Settings fail closed: a missing value takes the safe default, a malformed one raises — nothing that
is not an explicit `true` ever opens paid fetching.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Mapping
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, StrictBool, field_validator

from socialrec_pipeline.domain.enums import FetchStatus, Platform
from socialrec_pipeline.routing.source_types import SourceType
from socialrec_pipeline.routing.types import RoutedUrl

ENV_ENABLE_PAID = "SOCIALREC_ENABLE_PAID"
ENV_ENABLE_COMMUNITY = "SOCIALREC_ENABLE_COMMUNITY"
ENV_PAID_PLATFORMS = "SOCIALREC_PAID_PLATFORMS"

_TRUE = frozenset({"true", "1"})
_FALSE = frozenset({"false", "0"})

REASON_PAID = "paid platform while paid fetching is disabled"
REASON_COMMUNITY = "community fetching disabled"
REASON_NO_GENERATOR = "no generator for this source type"
REASON_NOT_ROUTED = "not a routable URL"


class GateSettingsError(ValueError):
    """A gate setting is present but malformed; the process must not start with a guess."""


class GateSettings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    enable_paid: StrictBool = False
    enable_community: StrictBool = False
    paid_platforms: frozenset[Platform] = frozenset({Platform.TIKTOK, Platform.INSTAGRAM})

    def is_paid(self, platform: Platform) -> bool:
        """Whether calls to this platform cost money (whatever `enable_paid` says)."""
        return platform in self.paid_platforms

    @field_validator("paid_platforms")
    @classmethod
    def _not_empty(cls, value: frozenset[Platform]) -> frozenset[Platform]:
        # An empty set would quietly make every paid platform free while paid is off.
        if not value:
            raise ValueError("paid_platforms must name at least one platform")
        return value

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> GateSettings:
        """Parse `SOCIALREC_ENABLE_PAID`, `SOCIALREC_ENABLE_COMMUNITY` (`true/false/1/0`, any case,
        surrounding spaces ignored) and `SOCIALREC_PAID_PLATFORMS` (comma-separated platform codes).
        Unset → default; anything else → `GateSettingsError`."""
        values: dict[str, object] = {}
        for field, name in (("enable_paid", ENV_ENABLE_PAID), ("enable_community", ENV_ENABLE_COMMUNITY)):
            if name in env:
                values[field] = _parse_bool(name, env[name])
        if ENV_PAID_PLATFORMS in env:
            values["paid_platforms"] = _parse_platforms(env[ENV_PAID_PLATFORMS])
        return cls.model_validate(values)


def _parse_bool(name: str, raw: object) -> bool:
    text = raw.strip().lower() if isinstance(raw, str) else None
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise GateSettingsError(f"{name} must be one of true/false/1/0, got {raw!r}")


def _parse_platforms(raw: object) -> frozenset[Platform]:
    if not isinstance(raw, str):
        raise GateSettingsError(f"{ENV_PAID_PLATFORMS} must be a string, got {type(raw).__name__}")
    codes = [c.strip().lower() for c in raw.split(",") if c.strip()]
    if not codes:
        raise GateSettingsError(f"{ENV_PAID_PLATFORMS} is set but names no platform")
    known = {p.value for p in Platform}
    unknown = [c for c in codes if c not in known]
    if unknown:
        raise GateSettingsError(f"{ENV_PAID_PLATFORMS} has unknown platform codes {unknown}; known: {sorted(known)}")
    return frozenset(Platform(c) for c in codes)


@dataclass(frozen=True, slots=True)
class GateDecision:
    allowed: bool
    #: SKIPPED_PAID or UNSUPPORTED when refused, None when allowed.
    status: FetchStatus | None
    reason: str


ALLOWED = GateDecision(True, None, "")

Supported = Callable[[SourceType], bool] | Container[SourceType]


def _has_generator(supported: Supported, source_type: SourceType) -> bool:
    if callable(supported):
        return bool(supported(source_type))
    return source_type in supported


def gate(routed: RoutedUrl | None, settings: GateSettings | None, supported: Supported) -> GateDecision:
    if routed is None:
        return GateDecision(False, FetchStatus.UNSUPPORTED, REASON_NOT_ROUTED)
    if not isinstance(settings, GateSettings):
        # None means "not configured": the defaults (paid off). Anything else must validate.
        settings = GateSettings() if settings is None else GateSettings.model_validate(settings)
    if settings.is_paid(routed.platform) and not settings.enable_paid:
        return GateDecision(False, FetchStatus.SKIPPED_PAID, REASON_PAID)
    if routed.source_type is SourceType.X_COMMUNITY and not settings.enable_community:
        return GateDecision(False, FetchStatus.UNSUPPORTED, REASON_COMMUNITY)
    if not _has_generator(supported, routed.source_type):
        return GateDecision(False, FetchStatus.UNSUPPORTED, f"{REASON_NO_GENERATOR}: {routed.source_type.value}")
    return ALLOWED
