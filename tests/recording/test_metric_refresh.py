"""Metric refresh appends points for recently linked objects, within budget, never paid while off."""

from __future__ import annotations

from datetime import timedelta

from socialrec_pipeline.domain.events import TokenFlowEvent
from socialrec_pipeline.recording.metric_refresh import MetricRefreshService
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
