"""Reconcile (SPEC §7, token axis): record the tokens of an upstream `lastTransferAt` window we
never saw on the stream.

No progress collection: progress IS the existence of the `tokens` marker, so a recorded token
simply drops out of the next run's difference. One `find_existing_addresses` per page; the rest go
through the stream's own `TokenRecorder` path (the upstream token is already in hand, so no
`get_token`). The run stops only between tokens: a token cut in half would leave URLs written
without a marker and pay their external calls again next time. The deadline is checked before each
token and before each upstream page request (including the first), so a window whose tokens
already exist stops paging once the deadline has passed.

In the code location a window is two parts. `run_window(defer_paid=True)` (a step outside the paid
pool) records every token that needs no paid call and lists the others in `deferred`, unrecorded
and unlocked (`TokenRecorder.record_upstream_token`). `record_deferred` records one of them, whole,
in a step of the paid pool: the same counting, lock and all, so a token another run recorded
meanwhile is `present` and one whose lock is held elsewhere is `skipped_locked`. `merged` adds the
parts up into the window's counts.
"""

from __future__ import annotations

import logging
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

import redis
from pymongo.errors import ConnectionFailure

from socialrec_pipeline.recording.processor import RecordOutcome, TokenRecorder
from socialrec_pipeline.recording.provider_stops import StoppedCredential
from socialrec_pipeline.recording.settings import RecordingSettings
from socialrec_pipeline.recording.soltracker import UpstreamToken, UpstreamTokens
from socialrec_pipeline.store.store import Store

log = logging.getLogger(__name__)


@dataclass
class ReconcileResult:
    """Counts of one window (run metadata). `stopped_by` is None when the window was finished.

    A deadline that passes while the last page is worked on reads as `"deadline"`: whether another
    page exists is only known by requesting it, which the deadline forbids. The result is then not
    `converged` (the safe side); the next run re-reads the window and finds those tokens present.
    """

    candidates: int = 0
    present: int = 0
    recorded: int = 0
    skipped_locked: int = 0
    failed: int = 0
    unknown: int = 0
    below_threshold: int = 0
    pages: int = 0
    existence_queries: int = 0
    stopped_by: str | None = None
    url_statuses: Counter[str] = field(default_factory=Counter)
    #: Credentials a provider refused while recording (setting → `StoppedCredential`).
    stopped_credentials: dict[str, StoppedCredential] = field(default_factory=dict)
    #: Tokens this pass left to steps of the paid pool (`record_deferred`), not counted here.
    deferred: list[UpstreamToken] = field(default_factory=list)

    @property
    def converged(self) -> bool:
        return self.stopped_by is None and self.failed == 0 and self.skipped_locked == 0

    def merged(self, others: Iterable[ReconcileResult]) -> ReconcileResult:
        """The window's counts: this pass with the deferred tokens' results added (the first
        `stopped_by` stands)."""
        total = ReconcileResult(
            candidates=self.candidates, below_threshold=self.below_threshold, pages=self.pages,
            existence_queries=self.existence_queries, stopped_by=self.stopped_by, deferred=list(self.deferred),
        )
        for part in (self, *others):
            total.present += part.present
            total.recorded += part.recorded
            total.skipped_locked += part.skipped_locked
            total.failed += part.failed
            total.unknown += part.unknown
            total.stopped_by = total.stopped_by or part.stopped_by
            total.url_statuses.update(part.url_statuses)
            for setting, stopped in part.stopped_credentials.items():
                total.stopped_credentials.setdefault(setting, stopped)
        return total


class ReconcileService:
    """Pages the upstream for one window and records the missing candidates."""

    def __init__(
        self,
        store: Store,
        upstream: UpstreamTokens,
        recorder: TokenRecorder,
        settings: RecordingSettings | None = None,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        self.store = store
        self.upstream = upstream
        self.recorder = recorder
        self.settings = settings or recorder.settings
        self.clock = clock or (lambda: datetime.now(UTC))

    def run_window(
        self,
        from_: datetime,
        to: datetime,
        af_group_ids: Sequence[str],
        deadline: datetime | None = None,
        *,
        owner: str | None = None,
        on_token: Callable[[str], None] | None = None,
        defer_paid: bool = False,
    ) -> ReconcileResult:
        """Reconcile `[from_, to)`. Upstream errors and infrastructure errors raise.

        `on_token(address)` is called for each token this run records, once its lock is held and
        before anything is written (the run tag of the token's history). With `defer_paid` a token
        whose recording makes a paid call goes to `deferred` instead (see the module docstring)."""
        owner = owner or f"reconcile-{uuid.uuid4().hex}"
        result = ReconcileResult()
        pages = iter(self.upstream.iter_token_pages(from_, to, af_group_ids, self.settings.reconcile_page_limit))
        while True:
            # The deadline is checked before every upstream request too, not only before a token:
            # a window whose tokens all exist would otherwise page on long after it.
            if self._past(deadline):
                result.stopped_by = "deadline"
                return result
            page = next(pages, None)
            if page is None:
                return result
            result.pages += 1
            candidates = []
            for token in page:
                if token.total_invested_alpha_finders >= self.settings.af_threshold:
                    candidates.append(token)
                else:
                    result.below_threshold += 1
            candidates = list({t.address: t for t in candidates}.values())  # a page may repeat one
            result.candidates += len(candidates)
            if not candidates:
                continue
            existing = self.store.tokens.find_existing_addresses(t.address for t in candidates)
            result.existence_queries += 1
            result.present += len(existing)
            for token in candidates:
                if token.address in existing:
                    continue
                if self._past(deadline):
                    result.stopped_by = "deadline"
                    return result
                self._record(token, owner, result, on_token, defer_paid=defer_paid)

    def record_deferred(
        self,
        token: UpstreamToken,
        deadline: datetime | None = None,
        *,
        owner: str | None = None,
        on_token: Callable[[str], None] | None = None,
    ) -> ReconcileResult:
        """Record one token `run_window(defer_paid=True)` deferred, paid calls included: its counts
        alone (`merged` adds them to the window's). Past the window's deadline nothing is recorded
        and the result says `stopped_by="deadline"`, as the free pass would have."""
        result = ReconcileResult()
        if self._past(deadline):
            result.stopped_by = "deadline"
            return result
        self._record(token, owner or f"reconcile-{uuid.uuid4().hex}", result, on_token)
        return result

    def _past(self, deadline: datetime | None) -> bool:
        return deadline is not None and self.clock() >= deadline

    def _record(
        self,
        token: UpstreamToken,
        owner: str,
        result: ReconcileResult,
        on_token: Callable[[str], None] | None,
        *,
        defer_paid: bool = False,
    ) -> None:
        if any(t.address == token.address for t in result.deferred):
            result.present += 1  # listed again by a later page: deferred once, recorded by this run
            return
        try:
            outcome = self.recorder.record_upstream_token(token, owner, on_locked=on_token, defer_paid=defer_paid)
        except (redis.RedisError, ConnectionFailure):
            raise  # infrastructure down: fail the run loudly
        except Exception:
            log.exception("reconcile: recording %s failed", token.address)
            result.failed += 1
            return
        if outcome.outcome is RecordOutcome.RECORDED:
            result.recorded += 1
            result.url_statuses.update(outcome.statuses)
            for url in outcome.urls:
                if url.stopped_credential is not None:
                    result.stopped_credentials.setdefault(url.stopped_credential.setting, url.stopped_credential)
        elif outcome.outcome is RecordOutcome.LOCKED:
            result.skipped_locked += 1
        elif outcome.outcome is RecordOutcome.ALREADY_RECORDED:
            result.present += 1  # recorded by the stream between our query and our lock
        elif outcome.outcome is RecordOutcome.UNKNOWN_TOKEN:
            result.unknown += 1
        elif outcome.outcome is RecordOutcome.DEFERRED_PAID:
            result.deferred.append(token)
        else:
            result.failed += 1
