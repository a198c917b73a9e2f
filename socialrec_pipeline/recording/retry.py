"""Retry (SPEC §8, URL axis): reopen URLs whose status can still change.

Per URL: token lock (skip on contention) → route the URL AGAIN (classifier fixes must reach old
URLs) → gate → delete the URL's links → generate and write → update only that `social_urls[]`
element.
`attempts` grows only when an external call judged the target; an `error` reaching `max_attempts`
becomes `exhausted`. Upstream calls: zero — everything needed is in the `tokens` document.

Each URL is retried from the token as it is now: the document is read again under the token lock
before every URL, never reused from the selection or from an earlier URL of the same run.

Only the retried URL's own links are ever deleted. A URL whose new canonical form is already held
by a sibling element of the same token is the same target as that sibling: it is merged into the
sibling (its element and its own old-spelling links go) without a fetch, and the sibling — its
status, its links — stays untouched. So two old spellings of one target cost one call in a run.
A credential refused in this run (rejected key, spent quota) is not called again in it.

In the code location the run is two parts: `run` with `DeferPaidCalls` retries every URL whose
call is free and lists each paid one in `deferred` (not written, not counted); `retry_deferred`
retries one of them in a step of the paid pool, under the token lock taken again and with the
token read again (skipped when another run holds the lock or retried it meanwhile).
"""

from __future__ import annotations

import logging
import uuid
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from socialrec_pipeline.domain.enums import RETRY_PARTITIONS, RETRYABLE, FetchStatus
from socialrec_pipeline.domain.models import SocialUrlRecord, Token
from socialrec_pipeline.recording.locks import CreditGuard
from socialrec_pipeline.recording.processor import PlannedUrl, PreparedToken, TokenRecorder
from socialrec_pipeline.recording.provider_stops import InMemoryProviderStops, ProviderStops, StoppedCredential
from socialrec_pipeline.recording.settings import RecordingSettings
from socialrec_pipeline.store.store import Store

log = logging.getLogger(__name__)


@dataclass
class RetryResult:
    """What one retry run did (run metadata)."""

    tokens_selected: int = 0
    urls_attempted: int = 0
    skipped_locked: int = 0
    external_calls: int = 0
    exhausted: int = 0
    rerouted: int = 0
    #: Re-routed URLs that turned out to be a sibling's URL: merged into it, nothing fetched.
    same_as_sibling: int = 0
    #: Markers whose retry queue field was missing, derived before selecting (an upgraded database).
    queue_backfilled: int = 0
    statuses: Counter[str] = field(default_factory=Counter)
    credit_exhausted: bool = False
    #: Credentials refused during the run (setting → why): the operator's fix list.
    stopped_credentials: dict[str, StoppedCredential] = field(default_factory=dict)
    #: Paid calls this pass left to steps of the paid pool (`retry_deferred`): (token, url).
    deferred: list[tuple[str, str]] = field(default_factory=list)

    def merged(self, others: Iterable[RetryResult]) -> RetryResult:
        """This pass's result with the deferred paid retries' results added."""
        total = RetryResult(
            tokens_selected=self.tokens_selected, queue_backfilled=self.queue_backfilled,
            rerouted=self.rerouted, same_as_sibling=self.same_as_sibling, deferred=list(self.deferred),
        )
        for part in (self, *others):
            total.urls_attempted += part.urls_attempted
            total.skipped_locked += part.skipped_locked
            total.external_calls += part.external_calls
            total.exhausted += part.exhausted
            total.statuses.update(part.statuses)
            total.credit_exhausted |= part.credit_exhausted
            for setting, stopped in part.stopped_credentials.items():
                total.stopped_credentials.setdefault(setting, stopped)
        return total


class RetryService:
    """Selects tokens by URL status (index-backed `$in`) and re-records the due URLs."""

    def __init__(
        self,
        store: Store,
        recorder: TokenRecorder,
        settings: RecordingSettings | None = None,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        self.store = store
        self.recorder = recorder
        self.settings = settings or recorder.settings
        self.clock = clock or (lambda: datetime.now(UTC))

    def run(
        self,
        statuses: Iterable[FetchStatus | str] | None = None,
        limit: int | None = None,
        *,
        credit_guard: CreditGuard | None = None,
        owner: str | None = None,
        provider_stops: ProviderStops | None = None,
        on_token: Callable[[str], None] | None = None,
    ) -> RetryResult:
        """Retry up to `limit` URLs (default `retry_limit`) in `statuses` (default: the retryable
        set; `invalid` / `exhausted` only when named explicitly).

        `on_token(address)` is called before each URL of a token is retried, under the token's
        lock (the run tag of the token's history; the caller keeps it to one write per token)."""
        wanted = {FetchStatus(s) for s in (statuses if statuses is not None else RETRYABLE)}
        not_retryable = wanted - set(RETRY_PARTITIONS)
        if not_retryable:
            raise ValueError(f"statuses {sorted(not_retryable)} are final and cannot be retried")
        budget = limit if limit is not None else self.settings.retry_limit
        # The recorder's guard (deployment-wide in the code location): out-of-credit met anywhere
        # stops this run's paid URLs too.
        guard = credit_guard or self.recorder.credit_guard
        # One scope for the run: a refused key or a spent quota is not called again in it.
        stops = provider_stops or InMemoryProviderStops()
        owner = owner or f"retry-{uuid.uuid4().hex}"
        cutoff = self.clock() - timedelta(minutes=self.settings.retry_min_interval_minutes)
        # Markers written before the queue existed join it first (an empty index range each when
        # the database is up to date): no upgrade step for an operator to forget.
        backfilled = self.store.tokens.backfill_oldest_attempt()
        if backfilled:
            log.info("retry: derived the retry queue of %d marker(s) written before it existed", backfilled)
        # The `budget` URLs waiting longest, whatever their token (fair: SPEC §8 "oldest first").
        selected = self.store.tokens.find_due_urls(wanted, cutoff, budget)
        result = RetryResult(tokens_selected=len(selected), queue_backfilled=backfilled)
        for chosen, records in selected:
            with self.recorder.locks.acquired(chosen.address, owner) as got:
                if not got:
                    result.skipped_locked += len(records)
                    continue
                for url in [r.url for r in records]:
                    # Read again under the lock, before every URL: another worker may have retried
                    # it since the selection (and must not be paid for twice), and an earlier URL
                    # of this run may have changed the token (a re-routed URL now holds the
                    # canonical form this one routes to: merged, not fetched again).
                    token = self.store.tokens.find_by_address(chosen.address)
                    if token is None:
                        break
                    for record in _due(token, wanted, cutoff, {url}):
                        if on_token is not None:
                            on_token(token.address)
                        self._retry_url(token, record, owner, guard, stops, result)
        result.credit_exhausted = guard.is_exhausted()
        return result

    def retry_deferred(
        self,
        address: str,
        url: str,
        statuses: Iterable[FetchStatus | str],
        *,
        owner: str,
        credit_guard: CreditGuard | None = None,
        provider_stops: ProviderStops | None = None,
        on_token: Callable[[str], None] | None = None,
    ) -> RetryResult:
        """Retry one URL `run` deferred (its call is paid): under the token lock, from the token as
        it is now; nothing when the lock is held elsewhere or the URL is no longer due."""
        guard = credit_guard or self.recorder.credit_guard
        cutoff = self.clock() - timedelta(minutes=self.settings.retry_min_interval_minutes)
        result = RetryResult()
        with self.recorder.locks.acquired(address, owner) as got:
            if not got:
                result.skipped_locked += 1
                return result
            token = self.store.tokens.find_by_address(address)
            due = _due(token, {FetchStatus(s) for s in statuses}, cutoff, {url}) if token is not None else []
            for record in due:
                assert token is not None
                if on_token is not None:
                    on_token(address)
                self._retry_url(token, record, owner, guard, provider_stops or InMemoryProviderStops(), result)
        result.credit_exhausted = guard.is_exhausted()
        return result

    def _retry_url(
        self,
        token: Token,
        record: SocialUrlRecord,
        owner: str,
        guard: CreditGuard,
        stops: ProviderStops,
        result: RetryResult,
    ) -> None:
        raw = record.raw_url or record.url
        routed = self.recorder.route_text(raw)
        new_url = routed.canonical_url if routed else record.url
        sibling = token.social_url(new_url) if new_url != record.url else None
        if routed is not None and (routed.source_type.value != record.source_type or new_url != record.url):
            result.rerouted += 1
        if sibling is not None:  # only a re-routed URL can find one: `token` is current (read under the lock)
            self._merge_into_sibling(token, record, sibling, result)
            return
        planned = PlannedUrl(url=new_url, raw_url=raw, source_field=record.source_field, routed=routed)
        prepared = PreparedToken(
            address=token.address, owner=owner, symbol=token.symbol,
            first_transfer_at=token.first_transfer_at, planned=(planned,),
        )
        outcome = self.recorder.record_one_url(prepared, planned, guard, stops)
        if outcome.deferred:  # a paid call: a step of the paid pool retries this URL
            result.deferred.append((token.address, record.url))
            return
        if new_url != record.url:  # the element leaves the old spelling: so do its links
            self.store.links.delete_by_token_and_source_url(token.address, record.url)
        if outcome.stopped_credential is not None:
            result.stopped_credentials.setdefault(outcome.stopped_credential.setting, outcome.stopped_credential)
        attempts = record.attempts + (1 if outcome.counts_as_attempt else 0)
        status = outcome.status
        if status is FetchStatus.ERROR and attempts >= self.settings.max_attempts:
            status = FetchStatus.EXHAUSTED
            result.exhausted += 1
        outcome.status = status
        self._write_element(token, record, outcome.to_record(attempts=attempts))
        result.urls_attempted += 1
        result.external_calls += int(outcome.external_call)
        result.statuses[str(status)] += 1

    def _merge_into_sibling(
        self, token: Token, record: SocialUrlRecord, sibling: SocialUrlRecord, result: RetryResult
    ) -> None:
        """The URL now routes to a URL another element of the token already holds: the same target.

        No fetch and no attempt: the sibling's outcome is this target's outcome, and the token
        keeps one element per target (SPEC §3), the sibling's. Only links recorded under the
        merged element's own url go — the sibling's links, and their `linked_at`, are never touched.
        """
        self.store.links.delete_by_token_and_source_url(token.address, record.url)
        if not self.store.tokens.merge_social_url(token.address, record.url, into=sibling.url):
            log.warning("retry: %s lost its element %s while we worked", token.address, record.url)
        result.urls_attempted += 1
        result.same_as_sibling += 1
        result.statuses[str(sibling.status)] += 1

    def _write_element(self, token: Token, record: SocialUrlRecord, new_record: SocialUrlRecord) -> None:
        # Fields first under the old url, then the url itself: an update that rewrites the field
        # its own arrayFilter matches on is applied unevenly by some servers (seen on the embedded one).
        updated = self.store.tokens.record_social_url_result(
            token.address, record.url, new_record.model_copy(update={"url": record.url})
        )
        if updated and new_record.url != record.url:
            updated = self.store.tokens.record_social_url_result(token.address, record.url, new_record)
        if not updated:
            log.warning("retry: %s lost its element %s while we worked", token.address, record.url)


def _due(token: Token, statuses: set[FetchStatus], cutoff: datetime, urls: set[str]) -> list[SocialUrlRecord]:
    """Of the selected `urls`, those still in `statuses` and last attempted before `cutoff`."""
    return [r for r in token.social_urls if r.url in urls and r.status in statuses and r.attempted_at < cutoff]
