"""Metric refresh (SPEC §9): re-observe recently linked objects and append metric points.

Candidates come from the refresh queue kept on `metric_series` (see `store/metric_series.py`):
only objects with metrics have a series, so only they are candidates, and the objects whose last
point is oldest come first (`idx_series_refresh`, one range scan per platform that may be called).
An object gets a new point only when its last point is older than the minimum interval
(`SOCIALREC_METRIC_MIN_INTERVAL_MINUTES`, default 60), so back-to-back runs add nothing.

Per candidate: an object last linked before the lookback window leaves the queue (a new link brings
it back); otherwise the newest link's entry URL (`source_url`) is re-generated — generators are the
only way to observe — and every object of that graph that is stored, has metrics and is due gets a
point. For a content, `metrics_latest` moves together with the series and its `observed_at` never
regresses. Accounts and venues of the graph are completed and refreshed like on any observation
(`GraphWriter.refresh_identities`, SPEC §5); contents rows are otherwise not updated.

A candidate that yields no point goes to the back of the queue (`touch_refresh`): a URL that fails
every time cannot take every run's budget. A target gone for good (`not_found`, `suspended`)
leaves the queue. Failures are logged at WARNING and counted (`failed`, `failures`).

Cost: bounded by `budget` generator calls; paid platforms are not even read while paid is off.
Paid calls go through `TokenRecorder.fetch`, like recording and retry: a short link is judged by
its resolved target, a paid call takes a slot of the paid pool (the recorder's `paid_slots`) and
checks the credit guard right before it. The guard is the recorder's (in the code location the
deployment-wide Redis flag): once any paid call anywhere met out-of-credit, later paid candidates
count as `skipped["credit_exhausted"]` and cost no call; the one that met it counts as
`skipped["skipped_paid"]`. A refused key or a spent quota stops that credential for the run
(`ProviderStops`), counted as `skipped["credential_stopped"]`.

In the code location the pass runs in two parts: `run` with `DeferPaidCalls` makes every free call
and lists each paid one in `deferred` (counted against the budget, not made); `refresh_deferred`
makes one of them in a step of the paid pool, and `merged` adds those steps' results to the run's.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple

from bson import ObjectId

from socialrec_pipeline.domain.enums import FetchStatus, ObjectKind, Platform
from socialrec_pipeline.domain.graph import SocialObjectGraph
from socialrec_pipeline.domain.models import MetricPoint
from socialrec_pipeline.recording.locks import CreditGuard
from socialrec_pipeline.recording.outcomes import Fetched
from socialrec_pipeline.recording.processor import TokenRecorder
from socialrec_pipeline.recording.provider_stops import InMemoryProviderStops, ProviderStops, StoppedCredential
from socialrec_pipeline.recording.writer import validate_graph
from socialrec_pipeline.store.store import Store

log = logging.getLogger(__name__)

#: At most this many failures are kept with their reason (all are counted).
MAX_FAILURES_KEPT = 50


@dataclass
class MetricRefreshResult:
    #: Queue entries looked at (due, in order), including those that left the window.
    candidates: int = 0
    urls_considered: int = 0
    generator_calls: int = 0
    points_appended: int = 0
    metrics_latest_updated: int = 0
    #: Candidates whose last link is older than the lookback: they left the queue.
    left_window: int = 0
    failed: int = 0
    failures: list[tuple[str, str]] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)
    budget_exhausted: bool = False
    credit_exhausted: bool = False
    stopped_credentials: dict[str, StoppedCredential] = field(default_factory=dict)
    #: Paid calls not made by this pass, left to steps of the paid pool (`refresh_deferred`).
    deferred: list[PaidRefresh] = field(default_factory=list)

    def merged(self, others: Iterable[MetricRefreshResult]) -> MetricRefreshResult:
        """This free pass's result with the deferred paid calls' results added (their calls and
        URLs were counted here already)."""
        total = replace(self, failures=list(self.failures), skipped=Counter(self.skipped))
        total.stopped_credentials = dict(self.stopped_credentials)
        for other in others:
            total.points_appended += other.points_appended
            total.metrics_latest_updated += other.metrics_latest_updated
            total.failed += other.failed
            total.failures.extend(other.failures[: max(0, MAX_FAILURES_KEPT - len(total.failures))])
            total.skipped.update(other.skipped)
            total.credit_exhausted |= other.credit_exhausted
            for setting, stopped in other.stopped_credentials.items():
                total.stopped_credentials.setdefault(setting, stopped)
        return total


class PaidRefresh(NamedTuple):
    """A paid re-generation the free pass left to a step of the paid pool: the URL and the queue
    entry (`object`, `object_id`) it was chosen for."""

    url: str
    kind: str
    object_id: ObjectId


class ObservedObject(NamedTuple):
    """A stored object a re-generated graph observed, with the metrics of this observation."""

    kind: ObjectKind
    object_id: ObjectId
    platform: Platform
    metrics: dict[str, Any]


#: Statuses a short link's target is gated with (no call made): nothing failed.
_GATED_STATUSES = frozenset({FetchStatus.UNSUPPORTED, FetchStatus.SKIPPED_PAID, FetchStatus.BLOCKED})
#: Statuses that say the object is gone for good: it leaves the refresh queue.
_GONE_STATUSES = frozenset({FetchStatus.NOT_FOUND, FetchStatus.SUSPENDED})


@dataclass
class _Run:
    """The state of one `MetricRefreshService.run`."""

    now: datetime
    due_before: datetime
    window_start: datetime
    guard: CreditGuard
    stops: ProviderStops
    result: MetricRefreshResult = field(default_factory=MetricRefreshResult)
    #: Queue entries handled in this run.
    tried: set[tuple[str, ObjectId]] = field(default_factory=set)
    #: Objects that got a point in this run.
    pointed: set[tuple[str, ObjectId]] = field(default_factory=set)
    #: Entry URLs already re-generated in this run.
    fetched: set[str] = field(default_factory=set)


class MetricRefreshService:
    """Appends metric points to the objects waiting longest, within a budget of generator calls."""

    def __init__(self, store: Store, recorder: TokenRecorder, clock: Callable[[], datetime] | None = None) -> None:
        self.store = store
        self.recorder = recorder
        self.settings = recorder.settings
        self.clock = clock or (lambda: datetime.now(UTC))

    def run(
        self,
        lookback: timedelta,
        budget: int,
        *,
        min_interval: timedelta | None = None,
        credit_guard: CreditGuard | None = None,
        provider_stops: ProviderStops | None = None,
    ) -> MetricRefreshResult:
        guard = credit_guard or self.recorder.credit_guard  # shared with every other paid path
        interval = (
            min_interval if min_interval is not None else timedelta(minutes=self.settings.metric_min_interval_minutes)
        )
        now = self.clock()
        run = _Run(now, now - interval, now - lookback, guard, provider_stops or InMemoryProviderStops())
        platforms = [p for p in Platform if self.settings.enable_paid or p not in self.settings.paid_platforms]
        queue = self.store.metrics.iter_refresh_due(platforms, run.due_before)
        try:
            for entry in queue:
                key = (entry["object"], entry["object_id"])
                if key in run.tried or key in run.pointed:
                    continue
                if run.result.generator_calls >= budget:
                    run.result.budget_exhausted = True
                    break
                self._refresh_entry(entry, key, run)
        finally:
            queue.close()
        run.result.credit_exhausted = guard.is_exhausted()
        return run.result

    def refresh_deferred(
        self,
        paid: PaidRefresh,
        *,
        min_interval: timedelta | None = None,
        credit_guard: CreditGuard | None = None,
        provider_stops: ProviderStops | None = None,
    ) -> MetricRefreshResult:
        """Make one paid re-generation the free pass deferred (in a step of the paid pool) and
        append its due points. Its call and URL were counted by the free pass."""
        guard = credit_guard or self.recorder.credit_guard
        interval = (
            min_interval if min_interval is not None else timedelta(minutes=self.settings.metric_min_interval_minutes)
        )
        result = MetricRefreshResult()
        due_before = self.clock() - interval
        stops = provider_stops or InMemoryProviderStops()
        self._refresh_url(paid.url, (paid.kind, paid.object_id), due_before, guard, stops, set(), result)
        result.generator_calls = result.urls_considered = 0
        result.credit_exhausted = guard.is_exhausted()
        return result

    def _refresh_entry(self, entry: dict[str, Any], key: tuple[str, ObjectId], run: _Run) -> None:
        """One queue entry: leave the queue, wait for the next run, or re-generate its URL."""
        result = run.result
        result.candidates += 1
        run.tried.add(key)
        kind, object_id = ObjectKind(entry["object"]), entry["object_id"]
        linked_at = entry.get("linked_at") or entry.get("created_at")
        if linked_at is None or linked_at < run.window_start:
            self.store.metrics.leave_refresh_queue(kind, object_id)
            result.left_window += 1
            return
        links = self.store.links.find_by_object_as_of(object_id, run.now)
        if not links:  # linked by nothing any more (a retry replaced the links): not a candidate
            self.store.metrics.leave_refresh_queue(kind, object_id)
            result.skipped["no_link"] += 1
            return
        newest = links[-1]
        url = newest.source_url  # the newest link's entry URL
        if url in run.fetched:  # its graph was observed in this run: the object was not in it
            self.store.metrics.touch_refresh(kind, object_id, run.now)
            return
        run.fetched.add(url)
        if self._refresh_url(url, key, run.due_before, run.guard, run.stops, run.pointed, result):
            return
        # To the back of the queue, with every object that URL linked: one failing
        # URL costs one generator call per interval, not one per object.
        for link in self.store.links.find_by_token(newest.token_address):
            other = (str(link.object), link.object_id)
            if link.source_url == url and other not in run.pointed:
                self.store.metrics.touch_refresh(link.object, link.object_id, run.now)
                run.tried.add(other)

    def _refresh_url(
        self,
        url: str,
        wanted: tuple[ObjectKind | str, ObjectId],
        due_before: datetime,
        guard: CreditGuard,
        stops: ProviderStops,
        pointed: set[tuple[str, ObjectId]],
        result: MetricRefreshResult,
    ) -> bool:
        """Re-generate `url` and append points for its due objects; True when `wanted` (the
        candidate's `(object, object_id)`) got one."""
        result.urls_considered += 1
        routed = self.recorder.route_text(url)
        if routed is None:
            result.skipped["unroutable"] += 1
            return False
        decision = self.recorder.gate(routed)
        generator = self.recorder.registry.for_source_type(routed.source_type)
        if not decision.allowed or generator is None:
            result.skipped[str(decision.status or FetchStatus.UNSUPPORTED)] += 1
            return False
        if self.recorder.is_paid(routed) and guard.is_exhausted():
            result.skipped["credit_exhausted"] += 1
            return False
        if stops.stopped(routed.platform) is not None:
            result.skipped["credential_stopped"] += 1
            return False
        observed = self.clock()
        result.generator_calls += 1
        # The same call path as recording: a short link is judged by its target, and a paid call
        # waits for a slot of the paid pool and checks the credit guard right before it.
        fetched = self.recorder.fetch(routed, generator, observed, guard, provider_stops=stops)
        if fetched.status is not None:
            self._not_fetched(fetched, url, wanted, result)
            return False
        try:
            graph = validate_graph(fetched.graph, url).graph
            self.recorder.writer.refresh_identities(graph, url, observed)  # SPEC §5: rows too
        except Exception as exc:  # one URL never stops the run
            self._failed(result, url, f"{type(exc).__name__}: {exc}")
            return False
        observed_objects = list(self._observed(graph, url, routed.canonical_url))
        return self._append_points(observed_objects, wanted, due_before, observed, pointed, result)

    def _not_fetched(
        self, fetched: Fetched, url: str, wanted: tuple[ObjectKind | str, ObjectId], result: MetricRefreshResult
    ) -> None:
        """Count a URL the provider gave no graph for: deferred, held back, gated, or failed."""
        if fetched.held_back == "deferred_paid":  # a step of the paid pool makes this call
            result.deferred.append(PaidRefresh(url, str(wanted[0]), wanted[1]))
        elif fetched.held_back == "credit_exhausted":
            result.skipped["credit_exhausted"] += 1
        elif fetched.held_back == "out_of_credit":
            log.warning("metric refresh of %s: out of credit; paid URLs skipped from here", url)
            result.skipped[str(FetchStatus.SKIPPED_PAID)] += 1
        elif fetched.held_back:  # no slot of the paid pool in time: held back, not a failure
            result.skipped[str(fetched.status)] += 1
        elif fetched.stopped_credential is not None:
            result.stopped_credentials.setdefault(fetched.stopped_credential.setting, fetched.stopped_credential)
            self._failed(result, url, fetched.error or str(fetched.status))
        elif fetched.status in _GATED_STATUSES and not fetched.external_call:
            result.skipped[str(fetched.status)] += 1  # gated (a short link's target): nothing failed
        else:
            if fetched.status in _GONE_STATUSES:  # gone for good
                self.store.metrics.leave_refresh_queue(ObjectKind(wanted[0]), wanted[1])
            self._failed(result, url, fetched.error or str(fetched.status))

    def _append_points(
        self,
        observed_objects: list[ObservedObject],
        wanted: tuple[ObjectKind | str, ObjectId],
        due_before: datetime,
        observed: datetime,
        pointed: set[tuple[str, ObjectId]],
        result: MetricRefreshResult,
    ) -> bool:
        """Append a point for every observed object that is due; True when `wanted` got one."""
        last_points = self.store.metrics.find_last_point_times((o.kind, o.object_id) for o in observed_objects)
        appended_wanted = False
        for kind, object_id, platform, metrics in observed_objects:
            key = (str(kind), object_id)
            if key not in last_points or key in pointed:  # objects with metrics only (those have a series)
                continue
            last = last_points[key]
            if last is not None and last > due_before:  # the minimum interval between points
                continue
            point = MetricPoint.of(platform, kind, metrics, observed)
            if not point.metrics:
                continue
            self.store.metrics.append_point(kind, object_id, platform, point)
            if kind is ObjectKind.CONTENTS and self.store.contents.update_metrics_latest(
                object_id, point.metrics, observed
            ):
                result.metrics_latest_updated += 1
            pointed.add(key)
            result.points_appended += 1
            appended_wanted |= key == (str(wanted[0]), wanted[1])
        return appended_wanted

    @staticmethod
    def _failed(result: MetricRefreshResult, url: str, error: str) -> None:
        reason = error[:300]
        log.warning("metric refresh of %s failed: %s", url, reason)
        result.failed += 1
        if len(result.failures) < MAX_FAILURES_KEPT:
            result.failures.append((url, reason))

    def _observed(
        self, graph: SocialObjectGraph, url: str, canonical: str
    ) -> Iterator[ObservedObject]:
        """Every object of the graph that is stored (by key, else by URL for contents)."""
        for group in graph.groups:
            # The graph is validated: every account and venue has a platform_key.
            creator, venue, content = group.creator, group.venue, group.content
            if creator is not None and creator.platform_key:
                account = self.store.accounts.find_by_platform_key(creator.platform, creator.platform_key)
                if account is not None:
                    yield ObservedObject(ObjectKind.ACCOUNTS, account.id, Platform(creator.platform), creator.metrics)
            if venue is not None and venue.platform_key:
                venue_row = self.store.venues.find_by_platform_key(venue.platform, venue.platform_key)
                if venue_row is not None:
                    yield ObservedObject(ObjectKind.VENUES, venue_row.id, Platform(venue.platform), venue.metrics)
            if content is not None:
                row = None
                if content.platform_key:
                    row = self.store.contents.find_by_platform_key(
                        content.platform, content.subtype, content.platform_key
                    )
                if row is None:
                    own = content.url if group.ref != graph.root_ref else canonical
                    row = self.store.contents.find_by_source_url(own) if own else None
                if row is not None:
                    yield ObservedObject(ObjectKind.CONTENTS, row.id, Platform(content.platform), content.metrics)
