"""Metric refresh (SPEC §9): re-observe recently linked objects and append metric points.

Deliberately simple: generators are the only way to observe, so the refresh re-generates the graph
of each recent link's entry URL (`source_url`) and appends a point for every object in it whose
identity key matches an object that URL linked. Accounts and venues of the graph are completed and
refreshed like on any observation (`GraphWriter.refresh_identities`, SPEC §5); contents rows are not. Bounded by a per-run budget of generator calls; paid platforms are skipped
while paid fetching is off; series stay capped by `append_point`'s `$slice`.

Paid calls go through `TokenRecorder.fetch`, like recording and retry: a short link is judged by
its resolved target, a paid call takes a slot of the paid pool (the recorder's `paid_slots`) and
checks the credit guard right before it. The guard is the recorder's (in the code location the
deployment-wide Redis flag): once any paid call anywhere met out-of-credit, later URLs on paid
platforms are counted as `skipped["credit_exhausted"]` and cost no call; the URL that met it counts
as `skipped["skipped_paid"]`.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

from socialrec_pipeline.domain.enums import ObjectKind, Platform
from socialrec_pipeline.domain.models import MetricPoint
from socialrec_pipeline.recording.locks import CreditGuard
from socialrec_pipeline.recording.processor import TokenRecorder
from socialrec_pipeline.recording.writer import validate_graph

log = logging.getLogger(__name__)


@dataclass
class MetricRefreshResult:
    urls_considered: int = 0
    generator_calls: int = 0
    points_appended: int = 0
    skipped: Counter = field(default_factory=Counter)
    budget_exhausted: bool = False
    credit_exhausted: bool = False


class MetricRefreshService:
    """Appends metric points for objects linked within a lookback window."""

    def __init__(self, store, recorder: TokenRecorder, clock: Callable[[], datetime] | None = None) -> None:
        self.store = store
        self.recorder = recorder
        self.settings = recorder.settings
        self.clock = clock or (lambda: datetime.now(timezone.utc))

    def run(
        self,
        lookback: timedelta,
        budget: int,
        *,
        link_scan_limit: int = 5000,
        credit_guard: CreditGuard | None = None,
    ) -> MetricRefreshResult:
        result = MetricRefreshResult()
        guard = credit_guard or self.recorder.credit_guard  # shared with every other paid path
        platforms = [p for p in Platform if self.settings.enable_paid or p not in self.settings.paid_platforms]
        links = self.store.links.find_linked_since(self.clock() - lookback, platforms, link_scan_limit)
        linked: dict[str, set] = {}
        for link in links:  # newest first: the freshest URLs are refreshed first
            linked.setdefault(link.source_url, set()).add((link.object, link.object_id))
        refreshed: set = set()
        for url, objects in linked.items():
            if result.generator_calls >= budget:
                result.budget_exhausted = True
                break
            result.urls_considered += 1
            routed = self.recorder.route_text(url)
            if routed is None:
                result.skipped["unroutable"] += 1
                continue
            decision = self.recorder.gate(routed)
            generator = self.recorder.registry.for_source_type(routed.source_type)
            if not decision.allowed or generator is None:
                result.skipped[str(decision.status or "unsupported")] += 1
                continue
            if self.recorder.is_paid(routed) and guard.is_exhausted():
                result.skipped["credit_exhausted"] += 1
                continue
            observed = self.clock()
            result.generator_calls += 1
            # The same call path as recording: a short link is judged by its target, and a paid
            # call waits for a slot of the paid pool and checks the credit guard right before it.
            fetched = self.recorder.fetch(routed, generator, observed, guard)
            if fetched.status is not None:
                if fetched.held_back == "credit_exhausted":
                    result.skipped["credit_exhausted"] += 1
                elif fetched.held_back == "out_of_credit":
                    log.info("metric refresh of %s: out of credit; paid URLs skipped from here", url)
                    result.skipped["skipped_paid"] += 1
                else:
                    log.info("metric refresh of %s: %s (%s)", url, fetched.status, fetched.error)
                    result.skipped[str(fetched.status)] += 1
                continue
            graph = fetched.graph
            try:
                validate_graph(graph, url)
                self.recorder.writer.refresh_identities(graph, url, observed)  # SPEC §5: rows too
            except Exception as exc:  # one URL never stops the run
                log.info("metric refresh of %s failed: %s", url, exc)
                result.skipped["error"] += 1
                continue
            for kind, object_id, platform, metrics in self._observed(graph, url, routed.canonical_url):
                if (kind, object_id) not in objects or (kind, object_id) in refreshed:
                    continue
                point = MetricPoint.of(platform, kind, metrics, observed)
                if point.metrics:
                    self.store.metrics.append_point(kind, object_id, platform, point)
                    refreshed.add((kind, object_id))
                    result.points_appended += 1
        result.credit_exhausted = guard.is_exhausted()
        return result

    def _observed(self, graph, url: str, canonical: str):
        """(kind, stored id, platform, metrics) for every object of the graph that exists."""
        for group in graph.groups:
            if group.creator is not None:
                row = self.store.accounts.find_by_platform_key(group.creator.platform, group.creator.platform_key)
                if row is not None:
                    yield ObjectKind.ACCOUNTS, row.id, Platform(group.creator.platform), group.creator.metrics
            if group.venue is not None:
                row = self.store.venues.find_by_platform_key(group.venue.platform, group.venue.platform_key)
                if row is not None:
                    yield ObjectKind.VENUES, row.id, Platform(group.venue.platform), group.venue.metrics
            content = group.content
            if content is not None:
                row = None
                if content.platform_key:
                    row = self.store.contents.find_by_platform_key(content.platform, content.subtype, content.platform_key)
                if row is None:
                    own = content.url if group.ref != graph.root_ref else canonical
                    row = self.store.contents.find_by_source_url(own) if own else None
                if row is not None:
                    yield ObjectKind.CONTENTS, row.id, Platform(content.platform), content.metrics
