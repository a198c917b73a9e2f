"""One sensor tick without Dagster: drain the queue into the inbox, then plan which runs to launch.

Drain: a prefetching consumer (a `basic_get` loop is ~10x slower here), bounded by message count and
wall time. A queue empty at the start is not consumed at all, unless the tick listens
(`first_message_wait_s`): then one wait takes the first message to arrive. The drain ends without an
idle wait once every message ready at the start has been handled and nothing more is ready. A valid
message below the threshold is recognised without building the event (`classify`); every other one
is validated in full. Messages are handled in chunks; per chunk the qualifying tokens are written to
the inbox, invalid ones are republished to the DLQ with their reason, and only then is the whole
chunk acknowledged with one `multiple=True` ack. A crash anywhere before that ack leaves the chunk
unacknowledged, so RabbitMQ redelivers it; the inbox write is idempotent.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from itertools import chain
from typing import Any

import pika

from socialrec_pipeline.domain.events import (
    InvalidEvent,
    TokenFlowEvent,
    clearly_below_threshold,
    decode_body,
    validate_payload,
)
from socialrec_pipeline.stream.broker import (
    EXCHANGE,
    REASON_HEADER,
    dead_letter_queue,
    declare_topology,
    open_connection,
)
from socialrec_pipeline.stream.inbox import (
    IDLE,
    LAUNCHED,
    PENDING,
    RETRYING,
    STUCK,
    InboxEntry,
    RecordInbox,
    rejects_content,
    run_key,
)
from socialrec_pipeline.stream.limits import (  # noqa: F401  (re-exported: the sensor's limits live there)
    BACKOFF_VARIABLE,
    DEFAULT_BACKOFF_MINUTES,
    TickLimits,
    relaunch_backoff,
    tick_limits_from_env,
)

#: The limits when a caller names none (frozen: one instance serves every default).
DEFAULT_LIMITS = TickLimits()

@dataclass
class DrainCounts:
    consumed: int = 0
    invalid: int = 0
    below_threshold: int = 0
    queued: int = 0
    invalid_reasons: Counter = field(default_factory=Counter)

    def as_dict(self) -> dict[str, int]:
        return {
            "consumed": self.consumed,
            "invalid": self.invalid,
            "below_threshold": self.below_threshold,
            "queued": self.queued,
        }


def classify(body: bytes, below: int | None = None) -> tuple[TokenFlowEvent | None, str]:
    """The event, or None and the reason it is dead-lettered; with `below` (the threshold), also
    `(None, "")` for a valid event below it, recognised without building the event
    (`clearly_below_threshold`: most of the stream, and the model is most of the cost).

    Anything the parser raises is a property of the body, not of the poller: a body that makes
    `json.loads` itself fail (30,000 nested brackets → RecursionError, a 5,000-digit number →
    ValueError) would otherwise escape the tick unacknowledged and be redelivered forever.
    """
    try:
        payload = decode_body(body)
        if below is not None and clearly_below_threshold(payload, below):
            return None, ""
        return validate_payload(payload), ""
    except InvalidEvent as exc:
        return None, exc.reason
    except Exception as exc:  # noqa: BLE001 - see the docstring
        return None, f"unparseable body: {type(exc).__name__}"


class TokenFlowDrain:
    """Moves messages from our queue into the inbox (qualifying), the DLQ (invalid) or nowhere."""

    def __init__(
        self,
        rabbitmq_url: str,
        queue: str,
        inbox: RecordInbox,
        threshold: int,
        limits: TickLimits = DEFAULT_LIMITS,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        exchange: str = EXCHANGE,
    ) -> None:
        if not isinstance(threshold, int) or isinstance(threshold, bool) or threshold < 1:
            raise ValueError(f"AF threshold must be a positive integer, got {threshold!r}")
        self._url = rabbitmq_url
        self._queue = queue
        self._dlq = dead_letter_queue(queue)
        self._inbox = inbox
        self._threshold = threshold
        self._limits = limits
        self._clock = clock
        self._exchange = exchange

    def run(self) -> DrainCounts:
        counts = DrainCounts()
        connection = open_connection(self._url)
        try:
            channel = declare_topology(connection, self._queue, self._exchange)
            self._consume(connection, channel, counts)
        finally:
            # Closing requeues whatever was delivered but not acknowledged (crash-safe by design).
            if connection.is_open:
                connection.close()
        return counts

    def _consume(self, connection, channel, counts: DrainCounts) -> None:
        limits, threshold = self._limits, self._threshold
        depth_at_start = self._ready_count(channel)
        deliveries: Iterator[tuple[Any, Any, Any]] = iter(())
        if not depth_at_start:
            if not limits.first_message_wait_s:
                return  # an empty queue is not waited on: what is published now is the next tick's
            first = self._listen(channel)
            if first is None:
                return
            deliveries, depth_at_start = iter((first,)), 1  # the one that ended the wait
        channel.basic_qos(prefetch_count=limits.prefetch)
        deadline = time.monotonic() + limits.max_seconds
        qualifying: list[tuple[bytes, TokenFlowEvent]] = []
        invalid: list[tuple[bytes, str]] = []
        last_tag: int | None = None
        consumed = unacked = below = idle_checks = 0
        self._dlq_channel: Any = None  # a pika channel once opened (pika ships no type information)
        for method, _props, body in chain(
            deliveries, channel.consume(self._queue, auto_ack=False, inactivity_timeout=limits.idle_timeout_s)
        ):
            if method is None:
                idle_checks += 1
                done = self._drained(channel, consumed, depth_at_start, idle_checks)
            else:
                idle_checks = 0
                consumed += 1
                unacked += 1
                last_tag = method.delivery_tag
                event, reason = classify(body, threshold)
                if event is not None and event.qualifies(threshold):
                    qualifying.append((body, event))
                elif reason:
                    invalid.append((body, reason))
                else:
                    below += 1
                # Every message ready at the start is here: end now if nothing more is ready
                # (`_drained` without the idle wait), else go on as on any later delivery.
                done = consumed >= limits.max_messages or (
                    consumed == depth_at_start and self._ready_count(channel) == 0
                )
            done = done or time.monotonic() >= deadline
            if unacked and (done or unacked >= limits.ack_every):
                self._settle(connection, channel, last_tag, qualifying, invalid, counts)
                qualifying, invalid, unacked = [], [], 0
            if done:
                break
        counts.consumed, counts.below_threshold = consumed, below
        channel.cancel()  # requeues prefetched messages this tick did not look at

    def _listen(self, channel) -> tuple[Any, Any, Any] | None:
        """The first message to arrive within `first_message_wait_s`, or None: one wait in the broker
        (no wake-up every `idle_timeout_s` while the queue stays empty). With a prefetch of one,
        nothing else is delivered meanwhile, so ending this consumer leaves no message pending; the
        one taken stays unacknowledged on the channel until the drain settles it with the rest."""
        channel.basic_qos(prefetch_count=1)
        first = next(
            channel.consume(self._queue, auto_ack=False, inactivity_timeout=self._limits.first_message_wait_s)
        )
        channel.cancel()
        return first if first[0] is not None else None

    def _ready_count(self, channel) -> int:
        return channel.queue_declare(self._queue, passive=True).method.message_count

    def _drained(self, channel, consumed: int, depth_at_start: int, idle_checks: int) -> bool:
        """An idle wait alone does not prove the queue is empty: on a busy machine the next
        delivery can take longer than the wait, and messages already on their way to us are not
        counted as ready. End when nothing is ready and either every message that was ready when
        the tick began has arrived, or a few waits in a row stayed empty (another consumer took
        them)."""
        if self._ready_count(channel) > 0:
            return False
        return consumed >= depth_at_start or idle_checks >= 3

    def _settle(self, connection, channel, last_tag, qualifying, invalid, counts: DrainCounts) -> None:
        # Order is the guarantee: inbox and DLQ first, acknowledgement last.
        counts.queued += self._store(qualifying, invalid)
        if invalid and self._dlq_channel is None:
            self._dlq_channel = connection.channel()
            self._dlq_channel.confirm_delivery()
        dlq_channel = self._dlq_channel
        for body, reason in invalid:
            dlq_channel.basic_publish(
                exchange="",
                routing_key=self._dlq,
                body=body,
                # The time lets operators tell new dead letters from reviewed ones (`socialrec dlq`).
                properties=pika.BasicProperties(
                    delivery_mode=2, headers={REASON_HEADER: reason}, timestamp=int(time.time())
                ),
            )
            counts.invalid += 1
            counts.invalid_reasons[reason] += 1
        self._acknowledge(channel, last_tag)

    def _store(self, qualifying: list[tuple[bytes, TokenFlowEvent]], invalid: list[tuple[bytes, str]]) -> int:
        """Write the chunk's qualifying events to the inbox; returns the distinct tokens stored.

        When the chunk's write fails because of some document's content, each message is written
        alone and the ones that still fail join `invalid` (dead-lettered with the reason), so one
        message never stalls the queue. Any other failure propagates: the tick fails and nothing
        unsettled is acknowledged. The inbox write is idempotent, so repeating part of a chunk that
        had been written before the failure is harmless.
        """
        now = self._clock()
        try:
            return self._inbox.accept([event for _, event in qualifying], now)
        except Exception as exc:
            if not rejects_content(exc):
                raise
        stored: set[str] = set()
        for body, event in qualifying:
            try:
                self._inbox.accept([event], now)
            except Exception as exc:
                if not rejects_content(exc):
                    raise
                invalid.append((body, f"cannot be stored: {type(exc).__name__}"))
            else:
                stored.add(event.token_address)
        return len(stored)

    def _acknowledge(self, channel, delivery_tag: int) -> None:
        channel.basic_ack(delivery_tag=delivery_tag, multiple=True)


@dataclass(frozen=True)
class Launch:
    token_address: str
    entry_id: str
    generation: int
    symbol: str | None
    first_flow_timestamp: datetime | None

    @property
    def run_key(self) -> str:
        return run_key(self.token_address, self.entry_id, self.generation)


@dataclass(frozen=True)
class EndedRun:
    """What the orchestrator knows about the run a launch key started (once it is no longer active)."""

    run_id: str
    #: "SUCCESS", "FAILURE" or "CANCELED".
    status: str
    #: The run's `socialrec/outcome` tag, when it set one (recorded, locked, unknown_token, ...).
    outcome: str | None = None

    @property
    def claims_marker(self) -> bool:
        """A green run that says the token has its marker (it wrote it, or found it)."""
        return self.status == "SUCCESS" and self.outcome in ("recorded", "already_recorded")


def wants_retry(ended: EndedRun | None) -> bool:
    """Should a run that ended without a marker be followed by an automatic relaunch?

    Yes when a later run can fix it: a red run (Redis, MongoDB or SolTracker down, a crash), a
    request that never became a run, a green run that found the token lock held elsewhere (the
    holder may die), and a green run that reported the token recorded (or already recorded) although
    no marker can be read back now (the database lost it): only a marker read back ends an entry.
    No for a run an operator cancelled, or a green run whose token the upstream does not know (the
    next event or the reconcile of its hour covers it).
    """
    if ended is None:
        return True
    if ended.status == "CANCELED":
        return False
    if ended.status == "SUCCESS":
        return ended.outcome != "unknown_token"
    return True


@dataclass
class LaunchPlan:
    #: Every request to yield: new launches and `rerequested` ones.
    launches: list[Launch] = field(default_factory=list)
    done: int = 0
    waiting: int = 0
    idled: int = 0
    #: Launches repeated with the run key of an earlier tick (within the grace): Dagster starts no
    #: second run for a key it already has, so these are not new runs.
    rerequested: int = 0
    #: New launches that are automatic relaunches after a failed run (backoff), not events.
    relaunched: int = 0
    #: Entries that entered backoff this tick, and entries that gave up this tick.
    backed_off: int = 0
    gave_up: int = 0
    #: Entries removed without a marker (idle past the retention).
    expired: int = 0

    @property
    def new_launches(self) -> int:
        return len(self.launches) - self.rerequested


def plan_launches(
    inbox: RecordInbox,
    existing_addresses: Callable[[Sequence[str]], Collection[str]],
    active_tokens: Collection[str],
    now: datetime,
    limits: TickLimits = DEFAULT_LIMITS,
    ended_runs: Callable[[Sequence[str]], Mapping[str, EndedRun]] = lambda keys: {},
    lower_first_transfer: Callable[[Mapping[str, datetime]], object] = lambda earliest: None,
) -> LaunchPlan:
    """Decide, for every open or due inbox entry, whether it is done, needs a run, or waits.

    `existing_addresses` is one `$in` query on the markers; `active_tokens` are tokens with a
    queued or running `record_token_job` run; `ended_runs` maps run keys to the runs they started
    (absent: no such run). At most one run per token is ever active: an entry never launches
    while its token has an active run. A done entry hands its earliest `firstFlowTimestamp` to
    `lower_first_transfer` before it is removed (a duplicate that arrived after the marker was
    written may carry an earlier time).
    """
    plan = LaunchPlan()
    entries = inbox.open_entries(limit=limits.max_launches * 2)
    due = inbox.due_entries(now, limit=limits.max_launches * 2)
    seen = {e.token_address for e in entries}
    entries += [e for e in due if e.token_address not in seen]
    if not entries:
        return plan

    def finish_done(candidates: list[InboxEntry]) -> list[InboxEntry]:
        """Remove the entries whose marker reads back (after lowering its time); return the rest."""
        recorded = set(existing_addresses([e.token_address for e in candidates]))
        done = [e for e in candidates if e.token_address in recorded]
        if done:
            lower_first_transfer(
                {e.token_address: e.first_flow_timestamp for e in done if e.first_flow_timestamp is not None}
            )
            plan.done += inbox.remove([e.token_address for e in done])
        return [e for e in candidates if e.token_address not in recorded]

    rest = finish_done(entries)
    # Runs of launched entries that are no longer active: how did they end? Asked within the grace
    # too, so a run that has ended is followed by its backoff step at once (the grace only covers a
    # request that has not become a run yet, never every step of the backoff).
    ended_keys = [
        e.run_key for e in rest if e.state == LAUNCHED and e.token_address not in active_tokens and not e.relaunch
    ]
    ended = ended_runs(ended_keys) if ended_keys else {}
    # A run that said "recorded" may have written its marker after the read above: read those again
    # (one more query), so only a marker that truly is not there sends an entry to the backoff.
    claimed = [e for e in rest if (run := ended.get(e.run_key)) is not None and run.claims_marker]
    if claimed:
        gone = {e.token_address for e in claimed} - {e.token_address for e in finish_done(claimed)}
        rest = [e for e in rest if e.token_address not in gone]
    _step_entries(inbox, rest, active_tokens, ended, now, limits, plan)
    return plan


#: `_entry_update`'s answer for an idle entry past the retention: remove it.
_EXPIRE = "expire"


def _step_entries(
    inbox: RecordInbox,
    entries: list[InboxEntry],
    active_tokens: Collection[str],
    ended: Mapping[str, EndedRun],
    now: datetime,
    limits: TickLimits,
    plan: LaunchPlan,
) -> None:
    """Move every entry one step (up to `max_launches` launches); one write for all of them."""
    transitions: list[tuple[InboxEntry, dict]] = []
    expired: list[str] = []
    for entry in entries:
        if len(plan.launches) >= limits.max_launches:
            break
        update = _entry_update(entry, entry.token_address in active_tokens, ended, now, limits, plan)
        if update == _EXPIRE:
            expired.append(entry.token_address)
        elif isinstance(update, dict):
            transitions.append((entry, update))
    inbox.apply(transitions)
    if expired:
        plan.expired = inbox.remove(expired)


def _entry_update(
    entry: InboxEntry,
    active: bool,
    ended: Mapping[str, EndedRun],
    now: datetime,
    limits: TickLimits,
    plan: LaunchPlan,
) -> dict | str | None:
    """The update of one entry (None: unchanged; `_EXPIRE`: remove it), counting in `plan`."""
    launched = {"state": LAUNCHED, "launched_at": now, "relaunch": False}
    if entry.state == PENDING:
        if active:
            plan.waiting += 1
            return None
        plan.launches.append(_launch(entry, entry.generation))
        return {"$set": launched}
    if entry.state == LAUNCHED:
        return _launched_update(entry, active, ended, now, limits, plan)
    if entry.state == RETRYING:
        if active:  # someone else launched it (by hand): look again after its run
            plan.waiting += 1
            return {"$set": {"check_at": now + limits.backoff[0]}}
        plan.launches.append(_launch(entry, entry.generation + 1))
        plan.relaunched += 1
        return {"$set": launched, "$inc": {"generation": 1}, "$unset": {"check_at": ""}}
    if entry.state == IDLE and entry.last_event_at is not None and now - entry.last_event_at > limits.idle_retention:
        return _EXPIRE
    # idle or stuck, no marker yet: look again later
    return {"$set": {"check_at": now + limits.sweep_interval}}


def _launched_update(
    entry: InboxEntry,
    active: bool,
    ended: Mapping[str, EndedRun],
    now: datetime,
    limits: TickLimits,
    plan: LaunchPlan,
) -> dict | None:
    """The update of an entry whose run was requested."""
    if active:
        plan.waiting += 1
        return {"$set": {"relaunch": False}} if entry.relaunch else None  # the active run answers that event
    if not entry.relaunch and entry.run_key in ended:  # ended without a marker: backoff now
        return _after_run(entry, ended[entry.run_key], now, limits, plan)
    if _within_grace(entry, now, limits):
        # Same key: a no-op if the run exists, a rescue if the request was lost. An event's
        # relaunch after a run that ended without a marker waits for the grace (a hot token
        # whose run keeps failing or whose upstream does not know it costs one run per grace
        # period).
        plan.launches.append(_launch(entry, entry.generation))
        plan.rerequested += 1
        return None
    if entry.relaunch:  # its run ended without a marker and an event asked again
        plan.launches.append(_launch(entry, entry.generation + 1))
        return {"$set": {"state": LAUNCHED, "launched_at": now, "relaunch": False}, "$inc": {"generation": 1}}
    # past the grace and still no run: the request was lost
    return _after_run(entry, None, now, limits, plan)


def _within_grace(entry: InboxEntry, now: datetime, limits: TickLimits) -> bool:
    return entry.launched_at is not None and now - entry.launched_at < limits.relaunch_grace


def _after_run(entry: InboxEntry, ended: EndedRun | None, now: datetime, limits: TickLimits, plan: LaunchPlan) -> dict:
    """The update for a launched entry whose run ended without a marker (and no event asked again)."""
    if not wants_retry(ended):
        plan.idled += 1
        return {"$set": {"state": IDLE, "check_at": now + limits.sweep_interval}}
    failures = entry.failures + 1
    failed = {"failures": failures, "last_failed_at": now}
    if ended is not None:
        failed["last_failed_run_id"] = ended.run_id
    if failures > len(limits.backoff):
        plan.gave_up += 1
        return {"$set": {"state": STUCK, "check_at": now + limits.sweep_interval, **failed}}
    plan.backed_off += 1
    return {"$set": {"state": RETRYING, "check_at": now + limits.backoff[failures - 1], **failed}}


def _launch(entry: InboxEntry, generation: int) -> Launch:
    return Launch(entry.token_address, entry.entry_id, generation, entry.symbol, entry.first_flow_timestamp)
