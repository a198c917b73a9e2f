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
from socialrec_pipeline.defs.tags import INFRA_FAILED, OUTCOME_TAG, WARNING_TAG
from socialrec_pipeline.recording.locks import LockNotHeld, TokenLocks, UnknownTokenCache
from socialrec_pipeline.recording.processor import TokenRecorder


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
        unknown_tokens=UnknownTokenCache(
            client, ttl_s=settings.unknown_token_ttl_s, streak_scope=soltracker.base_url if soltracker is not None else ""
        ),
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


def infra_service(exc: BaseException) -> tuple[str, str]:
    """(service, variable to check) of an infrastructure fault."""
    if isinstance(exc, pymongo.errors.PyMongoError):
        return "MongoDB", "MONGODB_URI"
    if isinstance(exc, redis.exceptions.RedisError):
        return "Redis", "REDIS_URL"
    return "the network", "MONGODB_URI / REDIS_URL"


def infra_failure_message(exc: BaseException) -> str:
    service, variable = infra_service(exc)
    cause = str(exc).splitlines()[0][:300] if str(exc) else "no message"
    return (
        f"{service} unavailable: {type(exc).__name__}: {cause}. Check that {service} is up and "
        f"reachable ({variable}); nothing half-done is kept as done, so launching the run again is safe."
    )


@contextlib.contextmanager
def transient_only(context: dg.OpExecutionContext | None = None) -> Iterator[None]:
    """Let an op's `RetryPolicy` retry transient faults only.

    Anything else (a code bug, a malformed setting) fails the step at once with a `Failure` that
    forbids retries, instead of failing the same way three more times after growing delays.
    A `Failure` raised inside keeps its own `allow_retries`.

    With `context`, a Redis or MongoDB fault is re-raised as a `Failure` whose description names
    the service and the cause, and the op's last attempt tags the run `socialrec/outcome:
    infra_failed` (earlier attempts are retried and may still succeed).
    """
    try:
        yield
    except dg.Failure:
        raise
    except TRANSIENT_ERRORS as exc:
        if context is None:
            raise
        message = infra_failure_message(exc)
        last = is_last_attempt(context)
        if last:
            context.instance.add_run_tags(context.run_id, {OUTCOME_TAG: INFRA_FAILED})
        context.log.error(message + ("" if last else f" (attempt {context.retry_number + 1}; the step is retried)"))
        raise dg.Failure(description=message, allow_retries=not last) from exc
    except Exception as exc:
        raise dg.Failure(description=f"{type(exc).__name__}: {exc}", allow_retries=False) from exc


def is_last_attempt(context: dg.OpExecutionContext) -> bool:
    policy = getattr(context.op_def, "retry_policy", None)
    return context.retry_number >= (policy.max_retries if policy is not None else 0)


def warn_run(context: dg.OpExecutionContext, message: str, code: str) -> None:
    """A run-level warning: the step's log at WARNING and the run tag `socialrec/warning` (codes,
    comma-separated), which the Runs page shows and filters on."""
    context.log.warning(message)
    run = context.instance.get_run_by_id(context.run_id)
    current = (run.tags if run is not None else context.run.tags).get(WARNING_TAG, "")
    codes = sorted({c for c in current.split(",") if c} | {code})
    context.instance.add_run_tags(context.run_id, {WARNING_TAG: ",".join(codes)})


def warn_stopped_credentials(context: dg.OpExecutionContext, stopped) -> None:
    """One run warning per credential a provider refused in this step."""
    for credential in stopped:
        warn_run(context, credential.advice(), credential.warning_code)
