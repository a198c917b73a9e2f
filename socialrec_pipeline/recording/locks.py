"""Redis-backed coordination: the token lock, the unknown-token cache, the paid-credit flag.

Rule from the earlier system's worst defect: a Redis failure is never read as "someone else holds
the lock". `try_acquire` returns False only on real contention; every Redis error propagates.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Protocol, cast

import redis

TOKEN_LOCK_PREFIX = "social-record:"
UNKNOWN_TOKEN_PREFIX = "social-record-unknown:"
PAID_CREDIT_PREFIX = "social-record-paid-credit-exhausted:"

# Compare-and-act by owner token: only the holder may extend or release.
_EXTEND = """
if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('pexpire', KEYS[1], ARGV[2])
end
return 0
"""
_RELEASE = """
if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('del', KEYS[1])
end
return 0
"""


def open_redis(url: str, *, timeout_s: float = 3.0) -> redis.Redis:
    """A client whose calls are bounded in time, so an unreachable Redis fails fast and loudly."""
    return redis.Redis.from_url(
        url,
        socket_timeout=timeout_s,
        socket_connect_timeout=timeout_s,
        decode_responses=False,
    )


class LockNotHeld(RuntimeError):
    """The caller expected to hold a lock that is missing or owned by someone else."""


class TokenLocks:
    """Try-locks `social-record:{address}` with owner tokens (SET NX PX + Lua compare-and-act).

    Owner tokens are plain strings, so a step in another process that only knows `owner` can
    extend, keep alive and release a lock taken elsewhere (Dagster: acquire in one op, finish in
    another).
    """

    def __init__(self, client: redis.Redis, ttl_s: float = 120.0, *, prefix: str = TOKEN_LOCK_PREFIX) -> None:
        if ttl_s <= 0:
            raise ValueError("lock ttl must be positive")
        self.redis = client
        self.ttl_s = ttl_s
        self.prefix = prefix
        self._extend = client.register_script(_EXTEND)
        self._release = client.register_script(_RELEASE)

    @property
    def ttl_ms(self) -> int:
        return max(1, int(self.ttl_s * 1000))

    def key(self, address: str) -> str:
        return f"{self.prefix}{address}"

    def try_acquire(self, address: str, owner: str) -> bool:
        """True when taken now, False on contention. Never waits; Redis errors raise."""
        return bool(self.redis.set(self.key(address), owner, nx=True, px=self.ttl_ms))

    def extend(self, address: str, owner: str) -> bool:
        """Reset the TTL if `owner` still holds the lock."""
        return bool(self._extend(keys=[self.key(address)], args=[owner, self.ttl_ms]))

    def release(self, address: str, owner: str) -> bool:
        """Delete the lock if `owner` holds it; False when it expired or belongs to another owner."""
        return bool(self._release(keys=[self.key(address)], args=[owner]))

    def owner_of(self, address: str) -> str | None:
        # redis-py types its sync and async clients alike; a sync client answers the value itself.
        value = cast(bytes | str | None, self.redis.get(self.key(address)))
        return value.decode() if isinstance(value, bytes) else value

    @contextlib.contextmanager
    def held(self, address: str, owner: str, *, release: bool = False) -> Iterator[KeepAlive]:
        """Keep an already-acquired lock alive while the block runs (extends every ttl/3).

        Raises `LockNotHeld` when `owner` does not hold the lock on entry, and on exit when the
        keep-alive found it gone meanwhile; a Redis error met by the keep-alive is raised on exit
        too (never swallowed). With `release=True` the lock is released on exit (the last step).
        """
        if not self.extend(address, owner):
            raise LockNotHeld(f"lock {self.key(address)} is not held by this owner")
        keeper = KeepAlive(self, address, owner).start()
        try:
            yield keeper
        finally:
            keeper.stop()
            if release:
                self.release(address, owner)
        keeper.raise_if_lost()

    @contextlib.contextmanager
    def acquired(self, address: str, owner: str) -> Iterator[bool]:
        """Try-lock + keep-alive + release. Yields False (and does nothing else) on contention.

        Like `held`, raises on exit when the keep-alive lost the lock or met a Redis error."""
        if not self.try_acquire(address, owner):
            yield False
            return
        keeper = KeepAlive(self, address, owner).start()
        try:
            yield True
        finally:
            keeper.stop()
            self.release(address, owner)
        keeper.raise_if_lost()


class KeepAlive:
    """Background thread extending one lock every ttl/3 until stopped.

    `lost` is set when an extension found the lock gone or Redis failed; the work may check it,
    and `raise_if_lost` (called by `held` / `acquired` when the block ends) turns it into an error.
    """

    def __init__(self, locks: TokenLocks, address: str, owner: str) -> None:
        self._locks = locks
        self._address = address
        self._owner = owner
        self._stop = threading.Event()
        self.lost = threading.Event()
        self.error: BaseException | None = None
        self.extensions = 0
        self._thread = threading.Thread(target=self._run, name=f"lock-keepalive-{address[:8]}", daemon=True)

    def start(self) -> KeepAlive:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)

    def raise_if_lost(self) -> None:
        """The Redis error the keep-alive met, or `LockNotHeld` when the lock was found gone."""
        if self.error is not None:
            raise self.error
        if self.lost.is_set():
            raise LockNotHeld(f"lock {self._locks.key(self._address)} was lost while the work ran")

    def _run(self) -> None:
        interval = self._locks.ttl_s / 3
        while not self._stop.wait(interval):
            try:
                if not self._locks.extend(self._address, self._owner):
                    self.lost.set()
                    return
                self.extensions += 1
            except redis.RedisError as exc:  # surfaced through `lost`/`error`; the owner decides
                self.error = exc
                self.lost.set()
                return


class UnknownTokenCache:
    """Negative cache: an address the upstream did not know is not asked again for `ttl_s`.

    It also counts the upstream's consecutive "unknown" answers (`remember` increments, a known
    token resets): a wrong base URL answers 404 for every token, exactly like "unknown token", and
    a long streak is how an operator gets told. The counter is scoped by `streak_scope` (the
    upstream's base URL), so two deployments on one Redis do not mix their streaks.
    """

    def __init__(
        self, client: redis.Redis, ttl_s: float = 300.0, *, prefix: str = UNKNOWN_TOKEN_PREFIX, streak_scope: str = ""
    ) -> None:
        self.redis = client
        self.ttl_s = ttl_s
        self.prefix = prefix
        # Never a base58 address: `-` and `:` are outside the alphabet.
        self.streak_key = f"{prefix}upstream-404-streak:{hashlib.sha1(streak_scope.encode()).hexdigest()[:12]}"

    def is_known_unknown(self, address: str) -> bool:
        return bool(self.redis.exists(f"{self.prefix}{address}"))

    def remember(self, address: str) -> int:
        """Cache the address as unknown; returns how many upstream answers in a row said unknown."""
        pipe = self.redis.pipeline()
        pipe.set(f"{self.prefix}{address}", b"1", px=max(1, int(self.ttl_s * 1000)))
        pipe.incr(self.streak_key)
        pipe.expire(self.streak_key, 7 * 86_400)
        return int(pipe.execute()[1])

    def note_known(self) -> None:
        """The upstream knew a token: the streak of unknown answers is over."""
        self.redis.delete(self.streak_key)

    def unknown_streak(self) -> int:
        # redis-py types its sync and async clients alike; a sync client answers the value itself.
        return int(cast(bytes | str | None, self.redis.get(self.streak_key)) or 0)

    def forget(self, address: str) -> None:
        self.redis.delete(f"{self.prefix}{address}")


#: How long an out-of-credit answer stops every paid call (then one call probes the provider again).
CREDIT_GUARD_TTL_S = 3600.0


@dataclass(frozen=True)
class CreditGuardState:
    """A tripped guard: when, until when, and what tripped it (shown in run metadata and logs)."""

    tripped_at: datetime | None
    until: datetime | None
    detail: str = ""

    def describe(self) -> str:
        until = f"until {self.until:%Y-%m-%d %H:%M:%S} UTC" if self.until else "until reset"
        since = f"since {self.tripped_at:%Y-%m-%d %H:%M:%S} UTC, " if self.tripped_at else ""
        return f"tripped {since}{until}" + (f" ({self.detail})" if self.detail else "")


class CreditGuard(Protocol):
    """"A paid provider ran out of credit": every paid call checks it right before calling."""

    def is_exhausted(self) -> bool: ...

    def mark_exhausted(self, detail: str = "") -> None: ...

    def state(self) -> CreditGuardState | None: ...


class InMemoryCreditGuard:
    """The single-process variant (services used without Redis: tools, unit tests)."""

    def __init__(self) -> None:
        self._state: CreditGuardState | None = None

    def is_exhausted(self) -> bool:
        return self._state is not None

    def mark_exhausted(self, detail: str = "") -> None:
        if self._state is None:
            self._state = CreditGuardState(datetime.now(UTC), None, detail)

    def state(self) -> CreditGuardState | None:
        return self._state


class PaidCreditGuard:
    """One Redis flag per paid provider account, shared by every step, run and job of the
    deployment: once a paid provider answers out-of-credit, no paid call starts anywhere until the
    flag expires (`ttl_s`, one hour by default: then the next paid call probes the provider again)
    or an operator clears it (`socialrec paid-credit reset`). The value says when and why it
    tripped; the first trip wins (`SET NX`), so its expiry is not pushed back by later answers."""

    def __init__(
        self, client: redis.Redis, scope: str, ttl_s: float = CREDIT_GUARD_TTL_S, *, prefix: str = PAID_CREDIT_PREFIX
    ) -> None:
        self.redis = client
        self.key = f"{prefix}{scope}"
        self.ttl_ms = max(1, int(ttl_s * 1000))

    def is_exhausted(self) -> bool:
        return bool(self.redis.exists(self.key))

    def mark_exhausted(self, detail: str = "") -> None:
        value = json.dumps({"tripped_at": datetime.now(UTC).isoformat(), "detail": detail[:300]})
        self.redis.set(self.key, value.encode(), px=self.ttl_ms, nx=True)

    def state(self) -> CreditGuardState | None:
        with self.redis.pipeline() as pipe:
            pipe.get(self.key)
            pipe.pttl(self.key)
            value, pttl = pipe.execute()
        if value is None:
            return None
        try:
            data = json.loads(value)
            tripped_at = datetime.fromisoformat(data["tripped_at"])
            detail = str(data.get("detail") or "")
        except (ValueError, KeyError, TypeError):  # a flag set by an older release: b"1"
            tripped_at, detail = None, ""
        until = datetime.now(UTC) + timedelta(milliseconds=pttl) if pttl and pttl > 0 else None
        return CreditGuardState(tripped_at, until, detail)

    def clear(self) -> bool:
        return bool(self.redis.delete(self.key))
