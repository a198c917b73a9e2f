"""Builds the recording services from resources, so ops stay a few lines each."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import dagster as dg
import pymongo.errors
import redis.exceptions

from socialrec_pipeline.defs.resources import (
    GeneratorsResource,
    MongoResource,
    RecordingSettingsResource,
    RedisResource,
    SolTrackerResource,
)
from socialrec_pipeline.recording.locks import LockNotHeld, TokenLocks, UnknownTokenCache
from socialrec_pipeline.recording.processor import TokenRecorder
from socialrec_pipeline.recording.settings import SettingError


def token_recorder(
    mongo: MongoResource,
    redis: RedisResource,
    soltracker: SolTrackerResource | None,
    recording: RecordingSettingsResource,
    generators: GeneratorsResource,
) -> TokenRecorder:
    settings = recording.settings()
    client = redis.client()
    return TokenRecorder(
        store=mongo.store(),
        upstream=soltracker.client() if soltracker is not None else None,
        locks=TokenLocks(client, ttl_s=settings.lock_ttl_s),
        unknown_tokens=UnknownTokenCache(client, ttl_s=settings.unknown_token_ttl_s),
        registry=generators.registry(settings.gate_settings()),
        settings=settings,
    )


def status_counts(statuses) -> dict[str, int]:
    """`status_<status>: n` per URL status: the metadata labels every job uses for URL statuses."""
    return {f"status_{status}": n for status, n in sorted(statuses.items())}


def lock_owner(run) -> str:
    """The root run id: a re-execution of a failed run (same root) keeps the token's lock."""
    return run.root_run_id or run.run_id


def hold_lock(locks: TokenLocks, address: str, owner: str) -> None:
    """Make sure `owner` holds the token lock before touching the token.

    Steps of one run may run in other processes and may wait (pool slots) longer than the TTL:
    extend if still ours, take it back if it expired, fail if another worker took it meanwhile.
    """
    if locks.extend(address, owner) or locks.try_acquire(address, owner):
        return
    raise LockNotHeld(f"the lock of {address} was taken by another worker")


#: Faults of the infrastructure that a later attempt can outlive: Mongo or Redis unreachable or
#: slow, a network hiccup. URL-level failures never raise (they become the URL's status).
TRANSIENT_ERRORS: tuple[type[BaseException], ...] = (
    pymongo.errors.ConnectionFailure,  # AutoReconnect, NetworkTimeout, ServerSelectionTimeoutError
    pymongo.errors.ExecutionTimeout,
    pymongo.errors.WTimeoutError,
    redis.exceptions.ConnectionError,
    redis.exceptions.TimeoutError,
    ConnectionError,
    TimeoutError,
)


#: The retry policy of every op that talks to Mongo, Redis or an API; paired with `transient_only`.
TRANSIENT_RETRY = dg.RetryPolicy(max_retries=3, delay=2, backoff=dg.Backoff.EXPONENTIAL, jitter=dg.Jitter.PLUS_MINUS)


@contextlib.contextmanager
def transient_only() -> Iterator[None]:
    """Let an op's `RetryPolicy` retry transient faults only.

    Anything else (a code bug, a malformed setting) fails the step at once with a `Failure` that
    forbids retries, instead of failing the same way three more times after growing delays.
    A `Failure` raised inside keeps its own `allow_retries`.
    """
    try:
        yield
    except (dg.Failure, *TRANSIENT_ERRORS):
        raise
    except SettingError as exc:  # the message names the variable; the chain would only add frames
        raise dg.Failure(description=str(exc), allow_retries=False) from None
    except Exception as exc:
        raise dg.Failure(description=f"{type(exc).__name__}: {exc}", allow_retries=False) from exc
