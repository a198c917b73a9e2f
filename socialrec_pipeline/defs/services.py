"""Builds the recording services from resources, so ops stay a few lines each."""

from __future__ import annotations

import contextlib
import math
import os
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime

import dagster as dg
import pymongo.errors
import redis.exceptions

from socialrec_pipeline.defs.resources import (
    GeneratorsResource,
    MongoResource,
    RecordingSettingsParam,
    RedisResource,
    SolTrackerResource,
)
from socialrec_pipeline.defs.tags import INFRA_FAILED, OUTCOME_TAG, WARNING_TAG
from socialrec_pipeline.recording.locks import LockNotHeld, PaidCreditGuard, TokenLocks, UnknownTokenCache
from socialrec_pipeline.recording.paid import NoPaidSlot, PaidSlots
from socialrec_pipeline.recording.processor import TokenRecorder
from socialrec_pipeline.recording.settings import SettingError
from socialrec_pipeline.recording.soltracker import UpstreamToken


class NoUpstream:
    """The upstream of a step that has no SolTracker resource (URL steps, retry, metric refresh):
    such a step never looks a token up, so a lookup is a bug and says so."""

    def get_token(self, address: str) -> UpstreamToken | None:
        raise RuntimeError(f"this step has no SolTracker resource and must not look up {address}")

    def iter_token_pages(
        self, from_: datetime, to: datetime, af_group_ids: Sequence[str], limit: int = 100
    ) -> Iterator[list[UpstreamToken]]:
        raise RuntimeError("this step has no SolTracker resource and must not list tokens")


def token_recorder(
    mongo: MongoResource,
    redis: RedisResource,
    soltracker: SolTrackerResource | None,
    recording: RecordingSettingsParam,
    generators: GeneratorsResource,
    paid_slots: PaidSlots | None = None,
) -> TokenRecorder:
    """The recorder every op uses. Its credit guard is the deployment-wide Redis flag of the paid
    account; `paid_slots` says where the op's paid calls may run (the paid pool)."""
    settings = recording.settings()
    client = redis.client()
    return TokenRecorder(
        store=mongo.store(),
        upstream=soltracker.client() if soltracker is not None else NoUpstream(),
        locks=TokenLocks(client, ttl_s=settings.lock_ttl_s),
        unknown_tokens=UnknownTokenCache(
            client,
            ttl_s=settings.unknown_token_ttl_s,
            streak_scope=soltracker.base_url if soltracker is not None else "",
        ),
        registry=generators.registry(settings.gate_settings()),
        settings=settings,
        credit_guard=credit_guard(client, generators),
        paid_slots=paid_slots or NoPaidSlot(),
    )


def credit_guard(client, generators: GeneratorsResource) -> PaidCreditGuard:
    return PaidCreditGuard(client, scope=generators.apify.credit_scope())


def credit_guard_metadata(context: dg.OpExecutionContext, guard) -> dict[str, str]:
    """`credit_guard` output metadata, and a warning in the run's log while it is tripped."""
    state = guard.state()
    if state is None:
        return {"credit_guard": "clear"}
    line = f"paid credit guard {state.describe()}: no paid call runs until then. {CREDIT_GUARD_RESET_HINT}"
    context.log.warning(line)
    return {"credit_guard": f"{state.describe()}"}


CREDIT_GUARD_RESET_HINT = (
    "It clears by itself one hour after the out-of-credit answer (the next paid call then probes the provider); "
    "after topping up the account, clear it at once with `socialrec paid-credit reset`."
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


#: Base delay, in seconds, of `TRANSIENT_RETRY`. A retry policy is part of an op's definition, so it is
#: read when the code location loads, not per run. Production keeps the default; the tests set 0,
#: so the retries still happen, back to back.
STEP_RETRY_DELAY_ENV = "SOCIALREC_STEP_RETRY_DELAY_S"
DEFAULT_STEP_RETRY_DELAY_S = 2.0


def step_retry_delay_s(environ: Mapping[str, str] = os.environ) -> float:
    raw = environ.get(STEP_RETRY_DELAY_ENV, "").strip()
    if not raw:
        return DEFAULT_STEP_RETRY_DELAY_S
    try:
        delay = float(raw)
    except ValueError:
        delay = math.nan
    if not (math.isfinite(delay) and 0 <= delay <= 600):
        raise ValueError(f"{STEP_RETRY_DELAY_ENV} must be a number of seconds from 0 to 600, got {raw!r}")
    return delay


def transient_retry_policy(delay_s: float) -> dg.RetryPolicy:
    """3 retries after about 1x, 3x and 7x `delay_s` (2 s: ~2, 6, 14 s), each ± `delay_s` of jitter."""
    return dg.RetryPolicy(max_retries=3, delay=delay_s, backoff=dg.Backoff.EXPONENTIAL, jitter=dg.Jitter.PLUS_MINUS)


#: The retry policy of every op that talks to Mongo, Redis or an API; paired with `transient_only`.
TRANSIENT_RETRY = transient_retry_policy(step_retry_delay_s())


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
    infra_failed` (earlier attempts are retried and may still succeed); any other MongoDB or Redis
    error fails the step at once with the same tag.
    """
    try:
        yield
    except dg.Failure:
        raise
    except SettingError as exc:  # the message names the variable; the chain would only add frames
        raise dg.Failure(description=str(exc), allow_retries=False) from None
    except TRANSIENT_ERRORS as exc:
        if context is None:
            raise
        message = infra_failure_message(exc)
        last = is_last_attempt(context)
        if last:
            context.instance.add_run_tags(context.run_id, {OUTCOME_TAG: INFRA_FAILED})
        context.log.error(message + ("" if last else f" (attempt {context.retry_number + 1}; the step is retried)"))
        raise dg.Failure(description=message, allow_retries=not last) from exc
    except (pymongo.errors.PyMongoError, redis.exceptions.RedisError) as exc:
        # Our database refused the work for a reason waiting will not fix (a write concern, an
        # operation failure): still infrastructure, never a URL status (SPEC §4.1). Not retried.
        if context is not None:
            context.instance.add_run_tags(context.run_id, {OUTCOME_TAG: INFRA_FAILED})
            context.log.error(infra_failure_message(exc))
        raise dg.Failure(description=infra_failure_message(exc), allow_retries=False) from exc
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
