"""Metric refresh appends points for recently linked objects, within budget, never paid while off."""

from __future__ import annotations

from datetime import timedelta

from socialrec_pipeline.domain.enums import Platform
from socialrec_pipeline.domain.errors import OutOfCredit
from socialrec_pipeline.domain.events import TokenFlowEvent
from socialrec_pipeline.domain.graph import AccountDraft, GraphGroup, SocialObjectGraph
from socialrec_pipeline.recording.locks import InMemoryCreditGuard
from socialrec_pipeline.recording.metric_refresh import MetricRefreshService
from socialrec_pipeline.recording.settings import RecordingSettings
from socialrec_pipeline.routing.source_types import SourceType
from socialrec_pipeline.sandbox.soltracker import upstream_token

from . import harness
from .conftest import make_address
from .graphs import FixedGenerator


def test_refresh_appends_points_within_budget_and_skips_paid(store, redis_client, clock):
    tiktok = FixedGenerator({SourceType.TIKTOK_PROFILE}, graph=None)
    tweets = FixedGenerator({SourceType.X_TWEET}, build=harness.tweet_graph)
    env = harness.build(store, redis_client, clock, generators=[tweets, tiktok])
    try:
        for i in range(3):
            address = make_address(50 + i)
            env.upstream.put(upstream_token(address, twitter=f"https://x.com/a/status/{i + 1}",
                                            website="https://tiktok.com/@paid"))
            env.recorder.record_token(TokenFlowEvent.model_validate(
                {"tokenAddress": address, "totalInvestedAlphaFinders": 6}), owner="w")
        clock.now += timedelta(hours=1)
        service = MetricRefreshService(store, env.recorder, clock=clock)
        result = service.run(timedelta(days=1), budget=2)
        assert result.generator_calls == 2 and result.budget_exhausted and result.points_appended == 4
        assert result.urls_considered == 2  # the third URL was never looked at
        assert tiktok.calls == []
        series = list(store.db.metric_series.find({"object": "contents"}))
        assert sorted(len(s["points"]) for s in series) == [1, 2, 2]
    finally:
        env.server.stop()


class _PaidProfiles:
    """A paid profile generator: answers with an account until `out_of_credit` is set, then raises."""

    def __init__(self, source_type: SourceType, platform: Platform, metric: str) -> None:
        self.source_types = frozenset({source_type})
        self.makes_external_calls = True
        self.platform, self.metric = platform, metric
        self.out_of_credit = False
        self.calls: list[str] = []

    def generate(self, routed, options, observed_at):
        self.calls.append(routed.canonical_url)
        if self.out_of_credit:
            raise OutOfCredit("usage hard limit exceeded")
        account = AccountDraft(platform=self.platform, platform_key=routed.source_key, handle=routed.source_key,
                               metrics={self.metric: 10})
        return SocialObjectGraph.single(GraphGroup(ref="a", creator=account))


def test_out_of_credit_stops_paid_calls_for_the_rest_of_the_run(store, redis_client, clock):
    tiktok = _PaidProfiles(SourceType.TIKTOK_PROFILE, Platform.TIKTOK, "fans")
    instagram = _PaidProfiles(SourceType.INSTAGRAM_PROFILE, Platform.INSTAGRAM, "followersCount")
    tweets = FixedGenerator({SourceType.X_TWEET}, build=harness.tweet_graph)
    env = harness.build(store, redis_client, clock, generators=[tiktok, instagram, tweets],
                        settings=RecordingSettings(enable_paid=True))
    try:
        for i in range(3):
            address = make_address(70 + i)
            env.upstream.put(upstream_token(address, website=f"https://tiktok.com/@paid{i}",
                                            twitter=f"https://instagram.com/paid{i}",
                                            telegram=f"https://x.com/a/status/{i + 1}"))
            env.recorder.record_token(TokenFlowEvent.model_validate(
                {"tokenAddress": address, "totalInvestedAlphaFinders": 6}), owner="w")
            clock.now += timedelta(minutes=1)
        assert len(tiktok.calls) == len(instagram.calls) == 3
        tiktok.calls.clear()
        instagram.calls.clear()
        tiktok.out_of_credit = instagram.out_of_credit = True
        clock.now += timedelta(hours=1)

        result = MetricRefreshService(store, env.recorder, clock=clock).run(timedelta(days=1), budget=100)
        # One paid call met out-of-credit; no paid provider was called again in this run.
        assert len(tiktok.calls) + len(instagram.calls) == 1
        assert result.credit_exhausted
        assert result.skipped["credit_exhausted"] == 5 and result.skipped["skipped_paid"] == 1
        # Free platforms are still refreshed.
        assert result.points_appended == 6  # three tweets and their three authors
        assert result.generator_calls == 4 and result.urls_considered == 9
    finally:
        env.server.stop()


def test_an_exhausted_guard_from_elsewhere_skips_paid_urls_without_calls(store, redis_client, clock):
    tiktok = _PaidProfiles(SourceType.TIKTOK_PROFILE, Platform.TIKTOK, "fans")
    env = harness.build(store, redis_client, clock, generators=[tiktok], settings=RecordingSettings(enable_paid=True))
    try:
        env.upstream.put(upstream_token(make_address(80), website="https://tiktok.com/@paid"))
        env.recorder.record_token(TokenFlowEvent.model_validate(
            {"tokenAddress": make_address(80), "totalInvestedAlphaFinders": 6}), owner="w")
        tiktok.calls.clear()
        guard = InMemoryCreditGuard()
        guard.mark_exhausted()
        result = MetricRefreshService(store, env.recorder, clock=clock).run(timedelta(days=1), budget=10,
                                                                            credit_guard=guard)
        assert tiktok.calls == [] and result.generator_calls == 0
        assert result.skipped["credit_exhausted"] == 1
    finally:
        env.server.stop()
