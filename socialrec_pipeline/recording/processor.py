"""Recording one token (SPEC §6): lock → idempotency → upstream → route → per URL → marker LAST.

The marker (`tokens` document) is written last on purpose: a crash before it leaves no marker, so
the token is recorded again (the sensor's relaunch, the next event, reconcile). Only infrastructure
failures (MongoDB or Redis failing, `recording/infra.py`) raise out of `record_token`; everything
the target makes a URL run into becomes its status (SPEC §4.1).

Split for fan-out: `prepare` (lock, idempotency, upstream, routing) → `record_one_url` per planned
URL (gate, generate, write; may run in other processes; `url_step.py`) → `finish` (marker, unlock).
The values these steps produce are in `outcomes.py`.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from socialrec_pipeline.domain.events import TokenFlowEvent, clean_symbol
from socialrec_pipeline.domain.models import Token
from socialrec_pipeline.providers.base import GeneratorRegistry, TargetResolver
from socialrec_pipeline.recording.locks import CreditGuard, InMemoryCreditGuard, TokenLocks, UnknownTokenCache
from socialrec_pipeline.recording.outcomes import (
    UPSTREAM_404_STREAK_WARNING,
    Fetched,
    PlannedUrl,
    PreparedToken,
    RecordOutcome,
    SkippedToken,
    TokenRecordResult,
    UrlResult,
    token_fingerprints,
)
from socialrec_pipeline.recording.paid import PaidSlots, UnboundedPaidSlots
from socialrec_pipeline.recording.provider_stops import InMemoryProviderStops, ProviderStops
from socialrec_pipeline.recording.settings import RecordingSettings
from socialrec_pipeline.recording.soltracker import UpstreamError, UpstreamToken, UpstreamTokens, UpstreamUnavailable
from socialrec_pipeline.recording.url_step import Clock, GateFn, UrlRecorder, default_gate
from socialrec_pipeline.recording.writer import GraphWriter
from socialrec_pipeline.routing.types import RoutedUrl
from socialrec_pipeline.store.store import Store

if TYPE_CHECKING:
    from socialrec_pipeline.routing.gate import GateSettings

log = logging.getLogger(__name__)


#: The values a recording produces live in `outcomes.py`; they are importable from here too.
__all__ = [
    "UPSTREAM_404_STREAK_WARNING",
    "Fetched",
    "PlannedUrl",
    "PreparedToken",
    "RecordOutcome",
    "SkippedToken",
    "TokenRecordResult",
    "TokenRecorder",
    "UrlResult",
    "token_fingerprints",
]


def _default_route(text: str) -> RoutedUrl | None:
    from socialrec_pipeline.routing import route

    return route(text)


class TokenRecorder(UrlRecorder):
    """Records the social footprint of one token; see the module docstring for the order."""

    def __init__(
        self,
        store: Store,
        upstream: UpstreamTokens,
        locks: TokenLocks,
        unknown_tokens: UnknownTokenCache,
        registry: GeneratorRegistry,
        settings: RecordingSettings | None = None,
        clock: Clock | None = None,
        *,
        route_fn: Callable[[str], RoutedUrl | None] | None = None,
        gate_fn: GateFn | None = None,
        credit_guard: CreditGuard | None = None,
        paid_slots: PaidSlots | None = None,
        provider_stops: ProviderStops | None = None,
    ) -> None:
        self.store = store
        self.upstream = upstream
        self.locks = locks
        self.unknown_tokens = unknown_tokens
        self.registry = registry
        self.settings = settings or RecordingSettings()
        self.clock: Clock = clock or (lambda: datetime.now(UTC))
        self.writer = GraphWriter(store, self.clock, profile_max_age=self.profile_max_age)
        self.route = route_fn or _default_route
        self._gate: GateFn = gate_fn or default_gate
        self._gate_settings: GateSettings | None = None
        #: Shared by every URL this recorder handles; in the code location a Redis flag shared by
        #: every step, run and job of the deployment (`PaidCreditGuard`).
        self.credit_guard: CreditGuard = credit_guard or InMemoryCreditGuard()
        #: Where a paid call may run (`recording/paid.py`); unbounded outside Dagster.
        self.paid_slots: PaidSlots = paid_slots or UnboundedPaidSlots()
        #: Credentials refused in this recorder's scope (a token, a run): not called again.
        self.provider_stops: ProviderStops = provider_stops or InMemoryProviderStops()

    # -- the composed path -----------------------------------------------------------------------
    def record_token(self, event: TokenFlowEvent, owner: str) -> TokenRecordResult:
        """The stream path: threshold, then `prepare` → `record_one_url`* → `finish`."""
        if not event.qualifies(self.settings.af_threshold):
            return TokenRecordResult(event.token_address, RecordOutcome.BELOW_THRESHOLD)
        prepared = self.prepare(event.token_address, event.first_flow_timestamp, event.symbol, owner)
        return self.record_prepared(prepared)

    def record_upstream_token(
        self,
        token: UpstreamToken,
        owner: str,
        on_locked: Callable[[str], None] | None = None,
        *,
        defer_paid: bool = False,
    ) -> TokenRecordResult:
        """Reconcile path: the upstream token is already in hand, so no `get_token` call.

        `on_locked(address)` is called once the token's lock is held and its URLs are about to be
        recorded (not for a skipped or deferred token).

        With `defer_paid` (a step outside the paid pool, whose `paid_slots` are `DeferPaidCalls`) a
        token whose recording would make a paid call is not recorded: the outcome is
        `DEFERRED_PAID`, the lock is released and no marker is written, for a step of the paid pool
        to record the whole token. A URL routed to a paid platform while paid fetching is on says
        so before anything is called; a short link says so once resolved, so the short links are
        recorded first (`_record_urls`) and a deferral costs one free request, nothing else."""
        prepared = self.prepare(token.address, token.first_flow_timestamp, token.symbol, owner, upstream_token=token)
        if defer_paid and isinstance(prepared, PreparedToken) and self.routes_to_paid(prepared):
            self._release(prepared)
            return _deferred(prepared, "a URL of a paid platform")
        if on_locked is not None and isinstance(prepared, PreparedToken):
            try:
                on_locked(prepared.address)
            except BaseException:
                self._release(prepared)
                raise
        return self.record_prepared(prepared, defer_paid=defer_paid)

    def record_prepared(self, prepared: PreparedToken | SkippedToken, *, defer_paid: bool = False) -> TokenRecordResult:
        if isinstance(prepared, SkippedToken):
            return TokenRecordResult(
                prepared.address, prepared.outcome, prepared.reason, upstream_calls=prepared.upstream_calls
            )
        started = time.perf_counter()
        stops = InMemoryProviderStops()  # one token: a refused credential is not called again for it
        try:
            with self.keep_alive(prepared):
                results = self._record_urls(prepared, stops, defer_paid=defer_paid)
        except BaseException:
            self._release(prepared)
            raise
        if results is None:  # a short link resolved to a paid target: nothing of the token is marked
            self._release(prepared)
            return _deferred(prepared, "a short link to a paid platform")
        urls_s = time.perf_counter() - started
        result = self.finish(prepared, results)
        result.timings.update(prepare_s=prepared.prepare_s, urls_s=urls_s)
        return result

    def _record_urls(
        self, prepared: PreparedToken, stops: ProviderStops, *, defer_paid: bool
    ) -> list[UrlResult] | None:
        """Every planned URL's result, in the token's order. With `defer_paid` the short links go
        first, and the first deferred result (a paid target) stops the token: None."""
        guard = self.credit_guard
        planned = prepared.planned
        if not defer_paid:
            return [self.record_one_url(prepared, p, guard, stops) for p in planned]
        results: dict[int, UrlResult] = {}
        for i in sorted(range(len(planned)), key=lambda i: not self.resolves_target(planned[i])):
            result = self.record_one_url(prepared, planned[i], guard, stops)
            if result.deferred:
                return None
            results[i] = result
        return [results[i] for i in range(len(planned))]

    def routes_to_paid(self, prepared: PreparedToken) -> bool:
        """A URL of the token is routed to a paid platform while paid fetching is on: recording
        the token makes a paid call (the rule `record_token_job` routes URLs to its pool by)."""
        gate = self.gate_settings
        return gate.enable_paid and any(
            p.routed is not None and gate.is_paid(p.routed.platform) for p in prepared.planned
        )

    def resolves_target(self, planned: PlannedUrl) -> bool:
        """A short link: its target (and whether calling it is paid) is known once it is resolved."""
        routed = planned.routed
        return routed is not None and isinstance(self.registry.for_source_type(routed.source_type), TargetResolver)

    @contextlib.contextmanager
    def keep_alive(self, prepared: PreparedToken) -> Iterator[None]:
        """Extend the token lock every ttl/3 while the block runs (works in any process)."""
        with self.locks.held(prepared.address, prepared.owner):
            yield

    # -- step 1 ----------------------------------------------------------------------------------
    def prepare(
        self,
        address: str,
        first_transfer_at: datetime | None,
        symbol: str | None,
        owner: str,
        *,
        upstream_token: UpstreamToken | None = None,
        check_threshold: bool = False,
        force_below_threshold: bool = False,
    ) -> PreparedToken | SkippedToken:
        """Lock, idempotency, upstream lookup, routing. On a skip the lock is already released.

        With `check_threshold` (every `record_token_job` run: it may have been launched by hand,
        without the sensor's threshold), a token whose upstream alpha-finder count is below the
        threshold is skipped as `below_threshold`, unless `force_below_threshold` says to record
        it anyway."""
        started = time.perf_counter()
        if not self.locks.try_acquire(address, owner):  # Redis errors raise: never "contention"
            return SkippedToken(address, RecordOutcome.LOCKED, "another worker holds the token lock")
        try:
            found = self._known_token(address, upstream_token)
            if isinstance(found, SkippedToken):
                self.locks.release(address, owner)
                return found
            token, calls = found
            alpha_finders = token.total_invested_alpha_finders
            below = alpha_finders < self.settings.af_threshold
            if check_threshold and below and not force_below_threshold:
                self.locks.release(address, owner)
                return SkippedToken(
                    address,
                    RecordOutcome.BELOW_THRESHOLD,
                    f"the upstream counts {alpha_finders} alpha finders, below the threshold of "
                    f"{self.settings.af_threshold}",
                    calls,
                )
            planned = tuple(self.plan_urls(token))
        except BaseException:
            self._release_quietly(address, owner)
            raise
        return PreparedToken(
            address=address,
            owner=owner,
            symbol=clean_symbol(symbol) or token.symbol,  # a manual launch's symbol obeys the rule too
            first_transfer_at=first_transfer_at or token.first_flow_timestamp,
            planned=planned,
            upstream_calls=calls,
            prepare_s=time.perf_counter() - started,
            alpha_finders=alpha_finders,
            forced_below_threshold=check_threshold and below,
        )

    def _known_token(
        self, address: str, upstream_token: UpstreamToken | None
    ) -> tuple[UpstreamToken, int] | SkippedToken:
        """Idempotency and the upstream lookup, with the lock held: the token and the upstream
        calls made, or why it is skipped (the caller releases the lock)."""
        if self.store.tokens.exists(address):
            return SkippedToken(address, RecordOutcome.ALREADY_RECORDED)
        if upstream_token is not None:
            return upstream_token, 0
        if self.unknown_tokens.is_known_unknown(address):
            return SkippedToken(address, RecordOutcome.UNKNOWN_TOKEN, "recently unknown upstream (cached)")
        calls = 1
        try:
            token = self.upstream.get_token(address)
        except UpstreamError as exc:
            log.warning("upstream lookup failed for %s: %s", address, exc)
            return SkippedToken(
                address, RecordOutcome.UPSTREAM_FAILED, f"{type(exc).__name__}: {exc}", calls,
                retryable=isinstance(exc, UpstreamUnavailable),
            )
        if token is None:
            streak = self.unknown_tokens.remember(address)
            return SkippedToken(
                address, RecordOutcome.UNKNOWN_TOKEN, "unknown upstream", calls, upstream_404_streak=streak
            )
        self.unknown_tokens.note_known()
        return token, calls

    def plan_urls(self, token: UpstreamToken) -> list[PlannedUrl]:
        """Route every social field; duplicates by canonical URL are dropped (first field wins)."""
        planned: dict[str, PlannedUrl] = {}
        for source_field, raw in token.socials():
            if raw is None or not raw.strip():
                continue
            routed = self.route_text(raw)
            # Unroutable text is its own key: stripped and with inner whitespace collapsed, so
            # " N/A" and "N/A" are one entry; `raw_url` keeps the text as written.
            url = routed.canonical_url if routed else " ".join(raw.split())
            planned.setdefault(url, PlannedUrl(url=url, raw_url=raw, source_field=source_field, routed=routed))
        return list(planned.values())

    def route_text(self, text: str) -> RoutedUrl | None:
        try:
            return self.route(text)
        except Exception:  # a router bug on odd input must not sink the token: record it unsupported
            log.exception("route() failed on %.80r", text)
            return None

    # -- step 3 ----------------------------------------------------------------------------------
    def finish(self, prepared: PreparedToken, results: list[UrlResult]) -> TokenRecordResult:
        """Write the marker (last), then release the lock (also when the marker write fails)."""
        started = time.perf_counter()
        try:
            marker = Token.of(
                address=prepared.address,
                discovered_at=self.clock(),
                symbol=prepared.symbol,
                first_transfer_at=prepared.first_transfer_at,
                social_urls=[r.to_record() for r in results],
                fingerprints=token_fingerprints(prepared.planned),
            )
            created = self.store.tokens.write_marker(marker)
        finally:
            self._release(prepared)
        return TokenRecordResult(
            prepared.address,
            RecordOutcome.RECORDED,
            urls=list(results),
            upstream_calls=prepared.upstream_calls,
            marker_created=created,
            timings={"finish_s": time.perf_counter() - started},
        )

    def _release(self, prepared: PreparedToken) -> None:
        self._release_quietly(prepared.address, prepared.owner)

    def _release_quietly(self, address: str, owner: str) -> None:
        try:
            self.locks.release(address, owner)
        except Exception:  # the TTL frees it anyway; the original error matters more
            log.exception("could not release the lock of %s", address)


def _deferred(prepared: PreparedToken, why: str) -> TokenRecordResult:
    return TokenRecordResult(
        prepared.address,
        RecordOutcome.DEFERRED_PAID,
        f"{why}: recorded in a step of the paid pool",
        upstream_calls=prepared.upstream_calls,
    )
