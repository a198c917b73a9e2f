"""Recording one token (SPEC §6): lock → idempotency → upstream → route → per URL → marker LAST.

The marker (`tokens` document) is written last on purpose: a crash before it leaves no marker, so
the token is recorded again (the sensor's relaunch, the next event, reconcile). Only infrastructure
failures (MongoDB or Redis failing, `recording/infra.py`) raise out of `record_token`; everything
the target makes a URL run into becomes its status (SPEC §4.1).

Split for fan-out: `prepare` (lock, idempotency, upstream, routing) → `record_one_url` per planned
URL (gate, generate, write; may run in other processes) → `finish` (marker, unlock).
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import TYPE_CHECKING

from pymongo.errors import PyMongoError

from socialrec_pipeline.domain.enums import FetchStatus, ObjectKind, Platform
from socialrec_pipeline.domain.errors import AccountSuspended, OutOfCredit, ProviderError, ProviderStop, status_of_error
from socialrec_pipeline.domain.events import TokenFlowEvent, clean_symbol
from socialrec_pipeline.domain.graph import SocialObjectGraph
from socialrec_pipeline.domain.models import SocialUrlRecord, Token, subtype_of
from socialrec_pipeline.domain.models.identities import has_fresh_profile
from socialrec_pipeline.providers.base import GenerateOptions, Generator, GeneratorRegistry, TargetResolver
from socialrec_pipeline.recording.infra import is_infrastructure_fault
from socialrec_pipeline.recording.locks import CreditGuard, InMemoryCreditGuard, TokenLocks, UnknownTokenCache
from socialrec_pipeline.recording.paid import PaidSlots, PaidSlotUnavailable, UnboundedPaidSlots, credit_message
from socialrec_pipeline.recording.provider_stops import InMemoryProviderStops, ProviderStops, StoppedCredential
from socialrec_pipeline.recording.settings import RecordingSettings
from socialrec_pipeline.recording.soltracker import UpstreamError, UpstreamToken, UpstreamTokens, UpstreamUnavailable
from socialrec_pipeline.recording.writer import GraphWriter, WriteResult
from socialrec_pipeline.routing.apex import domain_fingerprint
from socialrec_pipeline.routing.source_types import SourceType
from socialrec_pipeline.routing.types import RoutedUrl
from socialrec_pipeline.store.store import Store

if TYPE_CHECKING:
    from socialrec_pipeline.routing.gate import GateDecision, GateSettings, Supported

log = logging.getLogger(__name__)

Clock = Callable[[], datetime]
#: The routing gate's signature (`routing.gate.gate`): may this URL be fetched now?
GateFn = Callable[["RoutedUrl", "GateSettings", "Supported"], "GateDecision"]


class RecordOutcome(StrEnum):
    RECORDED = "recorded"
    BELOW_THRESHOLD = "below_threshold"
    LOCKED = "locked"
    ALREADY_RECORDED = "already_recorded"
    UNKNOWN_TOKEN = "unknown_token"
    UPSTREAM_FAILED = "upstream_failed"


@dataclass(frozen=True)
class PlannedUrl:
    """One distinct URL of a token, routed (or not: junk text gets `routed=None`)."""

    #: The dedup key and `social_urls[].url`: canonical URL, or — when unroutable — the raw text
    #: stripped, with inner whitespace collapsed to single spaces.
    url: str
    raw_url: str
    source_field: str | None
    routed: RoutedUrl | None


@dataclass(frozen=True)
class PreparedToken:
    """A locked, not-yet-recorded, known token with its planned URLs."""

    address: str
    owner: str
    symbol: str | None
    first_transfer_at: datetime | None
    planned: tuple[PlannedUrl, ...]
    upstream_calls: int = 0
    prepare_s: float = 0.0
    #: The upstream's alpha-finder count (None when not checked).
    alpha_finders: int | None = None
    #: Recorded below the AF threshold because the run asked for it explicitly.
    forced_below_threshold: bool = False


#: This many upstream "unknown token" answers in a row are reported as a warning: a wrong base URL
#: answers 404 for every token, exactly like an unknown one.
UPSTREAM_404_STREAK_WARNING = 10


@dataclass(frozen=True)
class SkippedToken:
    address: str
    outcome: RecordOutcome
    reason: str = ""
    upstream_calls: int = 0
    #: False when another attempt of this run cannot help (the upstream refused our key, answered
    #: out of contract or for another address): the op fails without retries.
    retryable: bool = True
    #: Consecutive upstream "unknown" answers, this one included (0 when not asked).
    upstream_404_streak: int = 0

    @property
    def upstream_404_suspicious(self) -> bool:
        return self.upstream_404_streak >= UPSTREAM_404_STREAK_WARNING


#: Statuses that never judged the target, so they never count an attempt (SPEC §4.1).
_NO_ATTEMPT_STATUSES = frozenset({FetchStatus.UNSUPPORTED, FetchStatus.SKIPPED_PAID})


@dataclass
class UrlResult:
    """What happened to one planned URL; `counts_as_attempt` drives `attempts`."""

    planned: PlannedUrl
    status: FetchStatus
    #: A request left this process (run metadata `external_calls`).
    external_call: bool = False
    error: str | None = None
    write: WriteResult | None = None
    attempted_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    duration_s: float = 0.0
    #: False when the answer said nothing about the target (our key, quota or credit).
    judged_target: bool = True
    #: Set when a rejected key or a spent quota decided this URL: which variable, and why.
    stopped_credential: StoppedCredential | None = None

    @property
    def counts_as_attempt(self) -> bool:
        """An attempt is an external call that judged the target (SPEC §8: attempts count
        external calls only; `unsupported` / `skipped_paid` never judged it)."""
        return self.external_call and self.judged_target and self.status not in _NO_ATTEMPT_STATUSES

    def to_record(self, attempts: int | None = None) -> SocialUrlRecord:
        routed = self.planned.routed
        return SocialUrlRecord(
            url=self.planned.url,
            raw_url=self.planned.raw_url,
            source_field=self.planned.source_field,
            source_type=str(routed.source_type) if routed else None,
            source_key=routed.source_key if routed else None,
            platform=routed.platform if routed else None,
            subtype=subtype_of(routed.subtype) if routed else None,
            status=self.status,
            attempted_at=self.attempted_at,
            attempts=(1 if self.counts_as_attempt else 0) if attempts is None else attempts,
        )


@dataclass
class Fetched:
    """What `TokenRecorder.fetch` got for one URL: a graph (`status` None), or the status and why."""

    #: The URL the provider was (or would have been) called for: the resolved target of a short link.
    target: RoutedUrl
    graph: SocialObjectGraph | None = None
    status: FetchStatus | None = None
    error: str | None = None
    external_call: bool = False
    paid: bool = False
    #: Why a paid call was not made: "credit_exhausted" (the guard was tripped), "out_of_credit"
    #: (this call tripped it), "no_slot" (no pool slot in time); empty otherwise.
    held_back: str = ""
    #: False when the answer said nothing about the target (our key, quota or credit).
    judged_target: bool = True
    #: A rejected key or a spent quota decided this URL (now, or earlier in the same scope).
    stopped_credential: StoppedCredential | None = None


@dataclass
class TokenRecordResult:
    """Outcome, per-URL results and timings of one token (run metadata)."""

    address: str
    outcome: RecordOutcome
    reason: str = ""
    urls: list[UrlResult] = field(default_factory=list)
    upstream_calls: int = 0
    marker_created: bool = False
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def statuses(self) -> dict[str, int]:
        return dict(Counter(str(u.status) for u in self.urls))

    @property
    def links_appended(self) -> int:
        return sum(u.write.links_appended for u in self.urls if u.write)


def _default_route(text: str) -> RoutedUrl | None:
    from socialrec_pipeline.routing import route

    return route(text)


def _default_gate(routed: RoutedUrl, settings: GateSettings, supported: Supported) -> GateDecision:
    from socialrec_pipeline.routing.gate import gate

    return gate(routed, settings, supported)


def token_fingerprints(planned: Iterable[PlannedUrl]) -> list[str]:
    """`domain:{apex}` of each of the token's websites (SPEC §4): tokens sharing a
    domain meet on `idx_tokens_fingerprints`. Only URLs that route as a website count: a social
    profile in the website field (`x.com/...`) says nothing about a shared site."""
    found = (
        domain_fingerprint(p.routed.canonical_url)
        for p in planned
        if p.routed is not None and p.routed.source_type == SourceType.WEBSITE
    )
    return list(dict.fromkeys(f for f in found if f))


class TokenRecorder:
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
        self._gate: GateFn = gate_fn or _default_gate
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

    def record_upstream_token(self, token: UpstreamToken, owner: str) -> TokenRecordResult:
        """Reconcile path: the upstream token is already in hand, so no `get_token` call."""
        prepared = self.prepare(token.address, token.first_flow_timestamp, token.symbol, owner, upstream_token=token)
        return self.record_prepared(prepared)

    def record_prepared(self, prepared: PreparedToken | SkippedToken) -> TokenRecordResult:
        if isinstance(prepared, SkippedToken):
            return TokenRecordResult(
                prepared.address, prepared.outcome, prepared.reason, upstream_calls=prepared.upstream_calls
            )
        started = time.perf_counter()
        guard = self.credit_guard
        stops = InMemoryProviderStops()  # one token: a refused credential is not called again for it
        try:
            with self.keep_alive(prepared):
                results = [self.record_one_url(prepared, planned, guard, stops) for planned in prepared.planned]
        except BaseException:
            self._release(prepared)
            raise
        urls_s = time.perf_counter() - started
        result = self.finish(prepared, results)
        result.timings.update(prepare_s=prepared.prepare_s, urls_s=urls_s)
        return result

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
        calls = 0
        try:
            if self.store.tokens.exists(address):
                self.locks.release(address, owner)
                return SkippedToken(address, RecordOutcome.ALREADY_RECORDED)
            token = upstream_token
            if token is None:
                if self.unknown_tokens.is_known_unknown(address):
                    self.locks.release(address, owner)
                    return SkippedToken(address, RecordOutcome.UNKNOWN_TOKEN, "recently unknown upstream (cached)")
                calls = 1
                try:
                    token = self.upstream.get_token(address)
                except UpstreamError as exc:
                    log.warning("upstream lookup failed for %s: %s", address, exc)
                    self.locks.release(address, owner)
                    return SkippedToken(
                        address, RecordOutcome.UPSTREAM_FAILED, f"{type(exc).__name__}: {exc}", calls,
                        retryable=isinstance(exc, UpstreamUnavailable),
                    )
                if token is None:
                    streak = self.unknown_tokens.remember(address)
                    self.locks.release(address, owner)
                    return SkippedToken(
                        address, RecordOutcome.UNKNOWN_TOKEN, "unknown upstream", calls, upstream_404_streak=streak
                    )
                self.unknown_tokens.note_known()
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

    # -- step 2 ----------------------------------------------------------------------------------
    def record_one_url(
        self,
        prepared: PreparedToken,
        planned: PlannedUrl,
        credit_guard: CreditGuard | None = None,
        provider_stops: ProviderStops | None = None,
    ) -> UrlResult:
        """Gate → delete the URL's links → generate → write. Never raises for anything the URL
        runs into.

        The URL's earlier links for this token go once the gate lets it through, before the
        generator runs (SPEC §8): with the token lock held they can only come from an attempt that
        died before its marker or, on the retry path, from an earlier attempt. Re-running never
        duplicates links, and a failed attempt leaves none of the old ones behind.

        A credential stopped earlier in the same scope (rejected key, spent quota) is not called
        again: the URL gets the stop's status without an attempt.
        """
        started = time.perf_counter()
        result = self._record_one_url(
            prepared, planned, credit_guard or self.credit_guard, provider_stops or self.provider_stops
        )
        result.duration_s = time.perf_counter() - started
        return result

    def _record_one_url(
        self, prepared: PreparedToken, planned: PlannedUrl, guard: CreditGuard, stops: ProviderStops
    ) -> UrlResult:
        attempted_at = self.clock()
        routed = planned.routed
        if routed is None:
            return UrlResult(
                planned, FetchStatus.UNSUPPORTED, attempted_at=attempted_at, error="not a URL we can route"
            )
        decision = self.gate(routed)
        if not decision.allowed:  # a refusal names its status (skipped_paid or unsupported)
            status = decision.status or FetchStatus.UNSUPPORTED
            return UrlResult(planned, status, attempted_at=attempted_at, error=decision.reason)
        if self.is_paid(routed) and guard.is_exhausted():
            return UrlResult(
                planned, FetchStatus.SKIPPED_PAID, attempted_at=attempted_at, error=credit_message(guard.state())
            )
        generator = self.registry.for_source_type(routed.source_type)
        if generator is None:
            return UrlResult(planned, FetchStatus.UNSUPPORTED, attempted_at=attempted_at, error="no generator")
        # A database failure here (or anywhere below) is ours, never the URL's status: it raises.
        self.store.links.delete_by_token_and_source_url(prepared.address, routed.canonical_url)
        fetched = self.fetch(routed, generator, attempted_at, guard, provider_stops=stops)
        if fetched.status is not None:
            return UrlResult(
                planned,
                fetched.status,
                external_call=fetched.external_call,
                error=fetched.error,
                attempted_at=attempted_at,
                judged_target=fetched.judged_target,
                stopped_credential=fetched.stopped_credential,
            )
        try:
            written = self.writer.write(
                fetched.graph,
                entry_url=routed.canonical_url,
                token_address=prepared.address,
                observed_at=attempted_at,
            )
        except Exception as exc:  # contract breach → invalid; a graph the database refuses → error
            if is_infrastructure_fault(exc):  # MongoDB failing is never the URL's status (SPEC §4.1)
                raise
            log.warning("writing %s failed: %s", routed.canonical_url, exc)
            return UrlResult(
                planned,
                status_of_error(exc),
                external_call=fetched.external_call,
                error=f"{type(exc).__name__}: {exc}",
                attempted_at=attempted_at,
            )
        return UrlResult(
            planned,
            FetchStatus.OK,
            external_call=fetched.external_call,
            write=written,
            attempted_at=attempted_at,
        )

    def is_paid(self, routed: RoutedUrl) -> bool:
        """Whether calling this URL's platform costs money (whatever `enable_paid` says)."""
        return routed.platform in self.settings.paid_platforms

    def fetch(
        self,
        routed: RoutedUrl,
        generator: Generator,
        observed_at: datetime,
        credit_guard: CreditGuard | None = None,
        paid_slots: PaidSlots | None = None,
        *,
        provider_stops: ProviderStops | None = None,
    ) -> Fetched:
        """Call the provider for one gated URL: the one place every job's paid calls go through.

        A short link is resolved first (a free request to the short-link host) and everything
        after is decided by its **target**: the gate (a paid target while paid is off is
        `skipped_paid`, no attempt), paid-ness, the credit guard and the pool slot. A paid call
        runs only inside a slot of the paid pool, and only while the credit guard is clear —
        checked again once the slot is held, right before the call. An out-of-credit answer trips
        the guard for every step, run and job, and the URL is `skipped_paid` with no attempt.
        A credential refused earlier in the scope of `provider_stops` (a rejected key, a spent
        quota) is not called: the URL gets that stop's status, no attempt. A `ProviderStop` answer
        stops the credential for the rest of the scope. Never raises for anything the URL runs into.
        """
        guard = credit_guard or self.credit_guard
        slots = paid_slots or self.paid_slots
        stops = provider_stops or self.provider_stops
        options = self.generate_options()
        target, resolved = routed, False
        if isinstance(generator, TargetResolver):
            try:
                target = generator.resolve_target(routed)
            except Exception as exc:  # resolution failed: the short link's own status
                if is_infrastructure_fault(exc):
                    raise
                external = bool(getattr(exc, "external_call_made", True))
                return Fetched(
                    routed, status=status_of_error(exc), external_call=external, error=f"{type(exc).__name__}: {exc}"
                )
            resolved = True
            decision = self._gate(target, self.gate_settings, generator.target_supported())
            if not decision.allowed:  # a gate refusal is never an attempt
                return Fetched(
                    target,
                    status=decision.status or FetchStatus.UNSUPPORTED,
                    error=f"resolves to {target.canonical_url}: {decision.reason}",
                )
        stopped = stops.stopped(target.platform)
        if stopped is not None:
            return Fetched(
                target,
                status=stopped.status,
                judged_target=False,
                stopped_credential=stopped,
                external_call=resolved,
                error=f"not called: {stopped.setting} was refused earlier in this run ({stopped.reason})",
            )
        paid = self.is_paid(target)
        call = generator.generate_target if resolved and isinstance(generator, TargetResolver) else generator.generate
        makes_calls = resolved or generator.makes_external_calls
        if paid and guard.is_exhausted():
            return Fetched(
                target,
                status=FetchStatus.SKIPPED_PAID,
                error=credit_message(guard.state()),
                paid=True,
                held_back="credit_exhausted",
            )
        try:
            with slots.slot(target.canonical_url) if paid else contextlib.nullcontext():
                if paid and guard.is_exhausted():  # tripped while this call waited for its slot
                    return Fetched(
                        target,
                        status=FetchStatus.SKIPPED_PAID,
                        error=credit_message(guard.state()),
                        paid=True,
                        held_back="credit_exhausted",
                    )
                graph = call(target, options, observed_at)
        except PaidSlotUnavailable as exc:  # no attempt: a busy pool must never exhaust a URL
            return Fetched(target, status=FetchStatus.ERROR, error=str(exc), paid=True, held_back="no_slot")
        except OutOfCredit as exc:
            guard.mark_exhausted(f"{target.canonical_url}: {exc}"[:300])
            log.warning(
                "paid provider out of credit at %s: every paid call stops (%s)",
                target.canonical_url,
                credit_message(guard.state()),
            )
            return Fetched(
                target,
                status=FetchStatus.SKIPPED_PAID,
                external_call=False,
                error=f"{type(exc).__name__}: {exc}",
                paid=True,
                held_back="out_of_credit",
            )
        except Exception as exc:  # every generator failure becomes a status; our Redis or MongoDB failing raises
            if is_infrastructure_fault(exc):
                raise
            if isinstance(exc, AccountSuspended):
                self.note_unavailable(target, observed_at, exc.platform_key)
            stop = None
            if isinstance(exc, ProviderStop):
                stops.stop(exc)
                stop = StoppedCredential.of(exc)
            external = bool(getattr(exc, "external_call_made", makes_calls)) or resolved
            return Fetched(
                target,
                status=status_of_error(exc),
                external_call=external,
                error=f"{type(exc).__name__}: {exc}",
                paid=paid,
                judged_target=not isinstance(exc, ProviderError) or exc.judges_target,
                stopped_credential=stop,
            )
        # A generator whose calls are optional (urlscan enrichment) says per graph whether it called.
        reported = getattr(graph, "external_call_made", None)
        external = (makes_calls if reported is None else bool(reported)) or resolved
        return Fetched(target, graph=graph, external_call=external, paid=paid)

    # -- accounts and venues (SPEC §5) -------------------------------------------------------------
    def generate_options(self) -> GenerateOptions:
        """Options for every generator call (recording, retry, metric refresh): the community
        switch, and the stored-profile check that spares a fresh profile a second fetch."""
        return GenerateOptions(enable_community=self.settings.enable_community, profile_is_fresh=self.profile_is_fresh)

    def profile_is_fresh(self, kind: ObjectKind, platform: Platform, platform_key: str) -> bool:
        """True when the stored row holds a full profile younger than `profile_max_age_hours`.
        An account flagged unavailable is never fresh: every sighting re-checks it."""
        max_age = self.profile_max_age
        if not max_age:
            return False
        repository = self.store.accounts if kind == ObjectKind.ACCOUNTS else self.store.venues
        try:
            row = repository.find_by_platform_key(platform, platform_key)
        except PyMongoError as exc:  # cannot tell: fetch (the write will meet the same outage)
            log.info("profile freshness of %s %s/%s unknown: %s", kind, platform, platform_key, exc)
            return False
        return row is not None and has_fresh_profile(row, self.clock(), max_age)

    @property
    def profile_max_age(self) -> timedelta:
        return timedelta(hours=self.settings.profile_max_age_hours)

    def note_unavailable(self, routed: RoutedUrl, at: datetime, platform_key: str | None = None) -> int:
        """A profile URL answered "suspended or deleted": flag the stored account it names
        (`moderation.unavailable`, with the time). By the key the answer gave when it gave one;
        else by the URL's key, as the account key (platforms keyed by name) or as the latest
        handle of stored accounts (X, TikTok, ...). Never creates a row; never raises."""
        platform = routed.platform
        key = (routed.source_key or "").strip().strip("/").lstrip("@")
        if platform is None or routed.object != "accounts" or not (key or platform_key):
            return 0
        try:
            if platform_key and self.store.accounts.mark_unavailable(Platform(platform), platform_key, at):
                return 1
            marked = 0
            for row in self.store.accounts.find_current_holders(Platform(platform), key) if key else []:
                marked += self.store.accounts.mark_unavailable(row.platform, row.platform_key, at)
            if not marked and key:
                marked += self.store.accounts.mark_unavailable(Platform(platform), key, at)
            return marked
        except PyMongoError as exc:
            log.warning("could not flag %s unavailable: %s", routed.canonical_url, exc)
            return 0

    def gate(self, routed: RoutedUrl) -> GateDecision:
        """May this URL be fetched now (paid / community / a generator exists)?"""
        return self._gate(routed, self.gate_settings, self.registry.supported)

    @property
    def gate_settings(self) -> GateSettings:
        if self._gate_settings is None:
            self._gate_settings = self.settings.gate_settings()
        return self._gate_settings

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
