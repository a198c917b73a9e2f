"""Recording one planned URL of a prepared token (SPEC §6 step 2): gate → delete the URL's old
links → generate → write, and `fetch`, the one place every job calls a provider through.

`UrlRecorder` is the part of `TokenRecorder` (`processor.py`) that the fan-out runs per URL, in
any process; the retry and metric-refresh paths call its `fetch` too.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from socialrec_pipeline.domain.enums import FetchStatus, ObjectKind, Platform
from socialrec_pipeline.domain.errors import AccountSuspended, OutOfCredit, ProviderError, ProviderStop, status_of_error
from socialrec_pipeline.providers.base import GenerateOptions, Generator, GeneratorRegistry, TargetResolver
from socialrec_pipeline.recording.infra import is_infrastructure_fault
from socialrec_pipeline.recording.locks import CreditGuard
from socialrec_pipeline.recording.outcomes import Fetched, PlannedUrl, PreparedToken, UrlResult
from socialrec_pipeline.recording.paid import PaidCallDeferred, PaidSlots, PaidSlotUnavailable, credit_message
from socialrec_pipeline.recording.profiles import flag_unavailable, profile_is_fresh
from socialrec_pipeline.recording.provider_stops import ProviderStops, StoppedCredential
from socialrec_pipeline.recording.settings import RecordingSettings
from socialrec_pipeline.recording.writer import GraphWriter
from socialrec_pipeline.routing.types import RoutedUrl
from socialrec_pipeline.store.store import Store

if TYPE_CHECKING:
    from socialrec_pipeline.routing.gate import GateDecision, GateSettings, Supported

log = logging.getLogger(__name__)

Clock = Callable[[], datetime]
#: The routing gate's signature (`routing.gate.gate`): may this URL be fetched now?
GateFn = Callable[["RoutedUrl", "GateSettings", "Supported"], "GateDecision"]


def default_gate(routed: RoutedUrl, settings: GateSettings, supported: Supported) -> GateDecision:
    from socialrec_pipeline.routing.gate import gate

    return gate(routed, settings, supported)


class UrlRecorder:
    """Step 2 of recording a token, and the provider call every job goes through. The state is
    set up by `TokenRecorder.__init__`."""

    store: Store
    registry: GeneratorRegistry
    settings: RecordingSettings
    clock: Clock
    writer: GraphWriter
    _gate: GateFn
    _gate_settings: GateSettings | None
    credit_guard: CreditGuard
    paid_slots: PaidSlots
    provider_stops: ProviderStops

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
                deferred=fetched.held_back == "deferred_paid",
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
        target, resolved = routed, False
        if isinstance(generator, TargetResolver):
            resolution = self._resolve(routed, generator)
            if isinstance(resolution, Fetched):
                return resolution
            target, resolved = resolution, True
        stopped = stops.stopped(target.platform)
        if stopped is not None:
            return Fetched.not_called(target, stopped, external_call=resolved)
        paid = self.is_paid(target)
        call = generator.generate_target if resolved and isinstance(generator, TargetResolver) else generator.generate
        makes_calls = resolved or generator.makes_external_calls
        if paid and guard.is_exhausted():
            return _credit_exhausted(target, guard)
        try:
            with slots.slot(target.canonical_url) if paid else contextlib.nullcontext():
                if paid and guard.is_exhausted():  # tripped while this call waited for its slot
                    return _credit_exhausted(target, guard)
                graph = call(target, self.generate_options(), observed_at)
        except PaidCallDeferred as exc:  # a pooled step makes this call: nothing decided here
            return Fetched.deferred(target, str(exc), external_call=resolved)
        except PaidSlotUnavailable as exc:  # no attempt: a step that may not pay never exhausts a URL
            return Fetched(target, status=FetchStatus.ERROR, error=str(exc), paid=True, held_back="no_slot")
        except OutOfCredit as exc:
            return _out_of_credit(target, guard, exc)
        except Exception as exc:  # every generator failure becomes a status; our Redis or MongoDB failing raises
            if is_infrastructure_fault(exc):
                raise
            external = bool(getattr(exc, "external_call_made", makes_calls)) or resolved
            return self._failed(target, exc, observed_at, stops, external=external, paid=paid)
        # A generator whose calls are optional (urlscan enrichment) says per graph whether it called.
        reported = getattr(graph, "external_call_made", None)
        external = (makes_calls if reported is None else bool(reported)) or resolved
        return Fetched(target, graph=graph, external_call=external, paid=paid)

    def _resolve(self, routed: RoutedUrl, generator: TargetResolver) -> RoutedUrl | Fetched:
        """A short link's target, or the short link's own status (resolution failed, or the
        gate refuses the target — never an attempt)."""
        try:
            target = generator.resolve_target(routed)
        except Exception as exc:  # resolution failed: the short link's own status
            if is_infrastructure_fault(exc):
                raise
            external = bool(getattr(exc, "external_call_made", True))
            return Fetched(
                routed, status=status_of_error(exc), external_call=external, error=f"{type(exc).__name__}: {exc}"
            )
        decision = self._gate(target, self.gate_settings, generator.target_supported())
        if not decision.allowed:  # a gate refusal is never an attempt
            return Fetched(
                target,
                status=decision.status or FetchStatus.UNSUPPORTED,
                error=f"resolves to {target.canonical_url}: {decision.reason}",
            )
        return target

    def _failed(
        self,
        target: RoutedUrl,
        exc: Exception,
        observed_at: datetime,
        stops: ProviderStops,
        *,
        external: bool,
        paid: bool,
    ) -> Fetched:
        """A generator failure as the URL's status; a suspended account is flagged, a refused
        credential stopped for the rest of the scope."""
        if isinstance(exc, AccountSuspended):
            self.note_unavailable(target, observed_at, exc.platform_key)
        stop = None
        if isinstance(exc, ProviderStop):
            stops.stop(exc)
            stop = StoppedCredential.of(exc)
        return Fetched(
            target,
            status=status_of_error(exc),
            external_call=external,
            error=f"{type(exc).__name__}: {exc}",
            paid=paid,
            judged_target=not isinstance(exc, ProviderError) or exc.judges_target,
            stopped_credential=stop,
        )

    # -- accounts and venues (SPEC §5) -------------------------------------------------------------
    def generate_options(self) -> GenerateOptions:
        """Options for every generator call (recording, retry, metric refresh): the community
        switch, and the stored-profile check that spares a fresh profile a second fetch."""
        return GenerateOptions(enable_community=self.settings.enable_community, profile_is_fresh=self.profile_is_fresh)

    def profile_is_fresh(self, kind: ObjectKind, platform: Platform, platform_key: str) -> bool:
        """True when the stored row holds a full profile younger than `profile_max_age_hours`
        (`profiles.profile_is_fresh`)."""
        return profile_is_fresh(self.store, self.clock, self.profile_max_age, kind, platform, platform_key)

    @property
    def profile_max_age(self) -> timedelta:
        return timedelta(hours=self.settings.profile_max_age_hours)

    def note_unavailable(self, routed: RoutedUrl, at: datetime, platform_key: str | None = None) -> int:
        """A profile URL answered "suspended or deleted": flag the stored account it names
        (`profiles.flag_unavailable`). Never creates a row; never raises."""
        return flag_unavailable(self.store, routed, at, platform_key)

    def gate(self, routed: RoutedUrl) -> GateDecision:
        """May this URL be fetched now (paid / community / a generator exists)?"""
        return self._gate(routed, self.gate_settings, self.registry.supported)

    @property
    def gate_settings(self) -> GateSettings:
        if self._gate_settings is None:
            self._gate_settings = self.settings.gate_settings()
        return self._gate_settings


def _credit_exhausted(target: RoutedUrl, guard: CreditGuard) -> Fetched:
    """A paid call held back because the credit guard is tripped: `skipped_paid`, no attempt."""
    return Fetched.skipped_paid(target, credit_message(guard.state()), held_back="credit_exhausted")


def _out_of_credit(target: RoutedUrl, guard: CreditGuard, exc: OutOfCredit) -> Fetched:
    """This call found the paid provider out of credit: trip the guard for every step, run and job."""
    guard.mark_exhausted(f"{target.canonical_url}: {exc}"[:300])
    log.warning(
        "paid provider out of credit at %s: every paid call stops (%s)",
        target.canonical_url,
        credit_message(guard.state()),
    )
    return Fetched.skipped_paid(target, f"{type(exc).__name__}: {exc}", held_back="out_of_credit")
