"""What recording a token produces: the prepared token, its planned URLs and their results.

Plain values shared by the recorder (`processor.py`), the retry and reconcile paths and the
record-token job; no IO.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum

from socialrec_pipeline.domain.enums import FetchStatus
from socialrec_pipeline.domain.graph import SocialObjectGraph
from socialrec_pipeline.domain.models import SocialUrlRecord, subtype_of
from socialrec_pipeline.recording.provider_stops import StoppedCredential
from socialrec_pipeline.recording.writer import WriteResult
from socialrec_pipeline.routing.apex import domain_fingerprint
from socialrec_pipeline.routing.source_types import SourceType
from socialrec_pipeline.routing.types import RoutedUrl


class RecordOutcome(StrEnum):
    RECORDED = "recorded"
    BELOW_THRESHOLD = "below_threshold"
    LOCKED = "locked"
    ALREADY_RECORDED = "already_recorded"
    UNKNOWN_TOKEN = "unknown_token"
    UPSTREAM_FAILED = "upstream_failed"
    #: Not recorded here: recording it makes a paid call, left to a step of the paid pool
    #: (`TokenRecorder.record_upstream_token(defer_paid=True)`); the lock is released, no marker.
    DEFERRED_PAID = "deferred_paid"


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
    #: Not decided here: a short link whose target is paid, handed to a step of the paid pool (no
    #: paid call, no attempt). That step's result replaces this one before the marker is written.
    deferred: bool = False

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
    #: (this call tripped it), "no_slot" (the step may make no paid call: `NoPaidSlot`),
    #: "deferred_paid" (left to a step of the paid pool); empty otherwise.
    held_back: str = ""
    #: False when the answer said nothing about the target (our key, quota or credit).
    judged_target: bool = True
    #: A rejected key or a spent quota decided this URL (now, or earlier in the same scope).
    stopped_credential: StoppedCredential | None = None

    @classmethod
    def not_called(cls, target: RoutedUrl, stopped: StoppedCredential, *, external_call: bool) -> Fetched:
        """The target's credential was refused earlier in the scope: its status, no attempt."""
        return cls(
            target,
            status=stopped.status,
            judged_target=False,
            stopped_credential=stopped,
            external_call=external_call,
            error=f"not called: {stopped.setting} was refused earlier in this run ({stopped.reason})",
        )

    @classmethod
    def deferred(cls, target: RoutedUrl, error: str, *, external_call: bool) -> Fetched:
        """A paid call left to a step of the paid pool: no call, nothing judged (an `error` with no
        attempt should it ever reach a marker)."""
        return cls(
            target,
            status=FetchStatus.ERROR,
            error=error,
            external_call=external_call,
            paid=True,
            held_back="deferred_paid",
            judged_target=False,
        )

    @classmethod
    def skipped_paid(cls, target: RoutedUrl, error: str, *, held_back: str) -> Fetched:
        """A paid call held back for credit: `skipped_paid`, no attempt."""
        return cls(target, status=FetchStatus.SKIPPED_PAID, error=error, paid=True, held_back=held_back)


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
