"""Retry (SPEC §8, URL axis): reopen URLs whose status can still change.

Per URL: token lock (skip on contention) → route the URL AGAIN (classifier fixes must reach old
URLs) → gate → delete the URL's links → generate and write → update only that `social_urls[]`
element.
`attempts` grows only when an external call was made; an `error` reaching `max_attempts` becomes
`exhausted`. Upstream calls: zero — everything needed is in the `tokens` document.
"""

from __future__ import annotations

import logging
import uuid
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

from socialrec_pipeline.domain.enums import RETRY_PARTITIONS, RETRYABLE, FetchStatus
from socialrec_pipeline.domain.models import SocialUrlRecord, Token
from socialrec_pipeline.recording.locks import CreditGuard
from socialrec_pipeline.recording.processor import PlannedUrl, PreparedToken, TokenRecorder
from socialrec_pipeline.recording.settings import RecordingSettings

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
    statuses: Counter = field(default_factory=Counter)
    credit_exhausted: bool = False


class RetryService:
    """Selects tokens by URL status (index-backed `$in`) and re-records the due URLs."""

    def __init__(
        self,
        store,
        recorder: TokenRecorder,
        settings: RecordingSettings | None = None,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        self.store = store
        self.recorder = recorder
        self.settings = settings or recorder.settings
        self.clock = clock or (lambda: datetime.now(timezone.utc))

    def run(
        self,
        statuses: Iterable[FetchStatus | str] | None = None,
        limit: int | None = None,
        *,
        credit_guard: CreditGuard | None = None,
        owner: str | None = None,
    ) -> RetryResult:
        """Retry up to `limit` URLs (default `retry_limit`) in `statuses` (default: the retryable
        set; `invalid` / `exhausted` only when named explicitly)."""
        wanted = {FetchStatus(s) for s in (statuses if statuses is not None else RETRYABLE)}
        not_retryable = wanted - set(RETRY_PARTITIONS)
        if not_retryable:
            raise ValueError(f"statuses {sorted(not_retryable)} are final and cannot be retried")
        budget = limit if limit is not None else self.settings.retry_limit
        # The recorder's guard (deployment-wide in the code location): out-of-credit met anywhere
        # stops this run's paid URLs too.
        guard = credit_guard or self.recorder.credit_guard
        owner = owner or f"retry-{uuid.uuid4().hex}"
        cutoff = self.clock() - timedelta(minutes=self.settings.retry_min_interval_minutes)
        tokens = self.store.tokens.find_by_url_statuses(wanted, cutoff, budget)
        result = RetryResult(tokens_selected=len(tokens))
        for selected in tokens:
            if budget <= 0:
                break
            due = _due(selected, wanted, cutoff, budget)
            if not due:
                continue
            with self.recorder.locks.acquired(selected.address, owner) as got:
                if not got:
                    result.skipped_locked += len(due)
                    continue
                # Read again under the lock: another worker may have retried these URLs between
                # the selection and now, and must not be paid for twice.
                token = self.store.tokens.find_by_address(selected.address)
                for record in _due(token, wanted, cutoff, budget) if token else []:
                    self._retry_url(token, record, owner, guard, result)
                    budget -= 1
        result.credit_exhausted = guard.is_exhausted()
        return result

    def _retry_url(self, token: Token, record: SocialUrlRecord, owner, guard, result: RetryResult) -> None:
        raw = record.raw_url or record.url
        routed = self.recorder.route_text(raw)
        new_url = routed.canonical_url if routed else record.url
        if new_url != record.url and token.social_url(new_url) is not None:
            new_url = record.url  # another element already holds that URL: keep this one's identity
        if routed is not None and (routed.source_type.value != record.source_type or new_url != record.url):
            result.rerouted += 1
        planned = PlannedUrl(url=new_url, raw_url=raw, source_field=record.source_field, routed=routed)
        prepared = PreparedToken(
            address=token.address, owner=owner, symbol=token.symbol,
            first_transfer_at=token.first_transfer_at, planned=(planned,),
        )
        outcome = self.recorder.record_one_url(prepared, planned, guard)
        if new_url != record.url:  # the element leaves the old spelling: so do its links
            self.store.links.delete_by_token_and_source_url(token.address, record.url)
        attempts = record.attempts + (1 if outcome.external_call else 0)
        status = outcome.status
        if status is FetchStatus.ERROR and attempts >= self.settings.max_attempts:
            status = FetchStatus.EXHAUSTED
            result.exhausted += 1
        outcome.status = status
        new_record = outcome.to_record(attempts=attempts)
        # Fields first under the old url, then the url itself: an update that rewrites the field
        # its own arrayFilter matches on is applied unevenly by some servers (seen on the embedded one).
        updated = self.store.tokens.record_social_url_result(
            token.address, record.url, new_record.model_copy(update={"url": record.url})
        )
        if updated and new_record.url != record.url:
            updated = self.store.tokens.record_social_url_result(token.address, record.url, new_record)
        if not updated:
            log.warning("retry: %s lost its element %s while we worked", token.address, record.url)
        result.urls_attempted += 1
        result.external_calls += int(outcome.external_call)
        result.statuses[str(status)] += 1


def _due(token: Token, statuses: set[FetchStatus], cutoff: datetime, limit: int) -> list[SocialUrlRecord]:
    """The token's URLs in `statuses` last attempted before `cutoff`, at most `limit`."""
    return [r for r in token.social_urls if r.status in statuses and r.attempted_at < cutoff][:limit]
