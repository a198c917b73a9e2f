"""Credentials a run stops using: a rejected key or a spent quota (SPEC §4.1, issue 9).

When a provider refuses our key (401/403) or says its quota is spent, every further call made with
that credential in the same run would get the same answer: the run stops calling it. Stops are keyed
by the credential's environment variable (`TWITTERAPI_API_KEY`, `YOUTUBE_API_KEY`, `APIFY_TOKEN`),
so TikTok and Instagram, both served through Apify, stop together. The URLs that are not called keep
the status the stop gives (`unsupported` for a rejected key, `error` for a spent quota) without an
attempt: the target was never judged.

Scope: one token in `record_token_job` (its per-URL steps may run in other processes: Redis) or one
retry / metric refresh run. Paid out-of-credit keeps its own flag (`CreditGuard`).
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from typing import Protocol, cast

import redis

from socialrec_pipeline.domain.enums import FetchStatus, Platform
from socialrec_pipeline.domain.errors import ProviderStop

PROVIDER_STOP_PREFIX = "social-record-provider-stop:"

#: The credential each keyed platform is called with (the variable an operator fixes).
PLATFORM_CREDENTIALS: dict[Platform, str] = {
    Platform.X: "TWITTERAPI_API_KEY",
    Platform.YOUTUBE: "YOUTUBE_API_KEY",
    Platform.TIKTOK: "APIFY_TOKEN",
    Platform.INSTAGRAM: "APIFY_TOKEN",
}


@dataclass(frozen=True)
class StoppedCredential:
    setting: str
    status: FetchStatus
    reason: str

    @classmethod
    def of(cls, error: ProviderStop) -> StoppedCredential:
        return cls(error.setting, error.status, str(error)[:300])

    @property
    def key_rejected(self) -> bool:
        return self.status is FetchStatus.UNSUPPORTED

    @property
    def warning_code(self) -> str:
        return f"{'key_rejected' if self.key_rejected else 'quota_exceeded'}:{self.setting}"

    def advice(self) -> str:
        """What the operator should do, naming the variable."""
        if self.key_rejected:
            return (
                f"The provider rejected the key in {self.setting} ({self.reason}). Fix {self.setting} and restart "
                "the code location: its URLs are recorded `unsupported` without attempts meanwhile, and the "
                "hourly retry_job (partition unsupported) fetches them once the key works."
            )
        return (
            f"The quota of {self.setting} is spent ({self.reason}). No call with it for the rest of this run; "
            "its URLs stay `error` without attempts and the hourly retry_job fetches them once the quota is back "
            f"(or raise the quota of the project behind {self.setting})."
        )


class ProviderStops(Protocol):
    def stopped(self, platform: Platform | str | None) -> StoppedCredential | None: ...

    def stop(self, error: ProviderStop) -> None: ...


def credential_of(platform: Platform | str | None) -> str | None:
    if platform is None:
        return None
    try:
        return PLATFORM_CREDENTIALS.get(Platform(platform))
    except ValueError:
        return None


class InMemoryProviderStops:
    """One process, one run (retry, metric refresh, a whole token recorded in one call)."""

    def __init__(self) -> None:
        self._stops: dict[str, StoppedCredential] = {}
        self._lock = threading.Lock()

    def stopped(self, platform: Platform | str | None) -> StoppedCredential | None:
        setting = credential_of(platform)
        with self._lock:
            return self._stops.get(setting) if setting else None

    def stop(self, error: ProviderStop) -> None:
        with self._lock:
            self._stops.setdefault(error.setting, StoppedCredential.of(error))


class RedisProviderStops:
    """A Redis hash scoped to a token or a run, so parallel per-URL steps see a stop at once."""

    def __init__(
        self, client: redis.Redis, scope: str, ttl_s: float = 3600.0, *, prefix: str = PROVIDER_STOP_PREFIX
    ) -> None:
        self.redis = client
        self.key = f"{prefix}{scope}"
        self.ttl_ms = max(1, int(ttl_s * 1000))

    def stopped(self, platform: Platform | str | None) -> StoppedCredential | None:
        setting = credential_of(platform)
        if setting is None:
            return None
        # redis-py types its sync and async clients alike; a sync client answers the value itself.
        raw = cast(bytes | str | None, self.redis.hget(self.key, setting))
        if raw is None:
            return None
        value = json.loads(raw)
        return StoppedCredential(setting, FetchStatus(value["status"]), value["reason"])

    def stop(self, error: ProviderStop) -> None:
        stopped = StoppedCredential.of(error)
        pipe = self.redis.pipeline()
        pipe.hsetnx(self.key, error.setting, json.dumps({"status": str(stopped.status), "reason": stopped.reason}))
        pipe.pexpire(self.key, self.ttl_ms)
        pipe.execute()

    def clear(self) -> None:
        self.redis.delete(self.key)
