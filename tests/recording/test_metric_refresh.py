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
        clock.now += timedelta(hours=1)  # due again (minimum interval between points)
        guard = InMemoryCreditGuard()
        guard.mark_exhausted()
        result = MetricRefreshService(store, env.recorder, clock=clock).run(timedelta(days=1), budget=10,
                                                                            credit_guard=guard)
        assert tiktok.calls == [] and result.generator_calls == 0
        assert result.skipped["credit_exhausted"] == 1
    finally:
        env.server.stop()


# -- issue 9 item 10: points that make a usable series --------------------------------------------


class _Views:
    """Tweets whose view count grows by 100 on every observation (so each point differs)."""

    def __init__(self) -> None:
        self.source_types = frozenset({SourceType.X_TWEET})
        self.makes_external_calls = True
        self.calls: list[str] = []
        self.fail: set[str] = set()

    def generate(self, routed, options, observed_at):
        from socialrec_pipeline.domain.errors import TransientProviderError

        from .graphs import tweet, x_account

        self.calls.append(routed.canonical_url)
        if routed.canonical_url in self.fail:
            raise TransientProviderError("HTTP 503 from the stand-in")
        key = routed.source_key
        return SocialObjectGraph.single(GraphGroup(
            ref="t", creator=x_account(f"author-{key}"), content=tweet(key, views=100 * len(self.calls))))


def _record(env, clock, i: int, **socials) -> str:
    address = make_address(900 + i)
    env.upstream.put(upstream_token(address, **socials))
    event = TokenFlowEvent.model_validate({"tokenAddress": address, "totalInvestedAlphaFinders": 6})
    env.recorder.record_token(event, owner="w")
    return address


def _points(store, url_key: str) -> int:
    content = store.db.contents.find_one({"platform_key": url_key})
    return len(store.db.metric_series.find_one({"object": "contents", "object_id": content["_id"]})["points"])


def test_back_to_back_runs_respect_the_minimum_interval_between_points(store, redis_client, clock):
    views = _Views()
    env = harness.build(
        store, redis_client, clock, generators=[views], settings=RecordingSettings(metric_min_interval_minutes=60)
    )
    try:
        _record(env, clock, 1, twitter="https://x.com/a/status/1")
        service = MetricRefreshService(store, env.recorder, clock=clock)
        clock.now += timedelta(hours=1)
        assert service.run(timedelta(days=1), budget=10).points_appended == 2  # the tweet and its author
        clock.now += timedelta(minutes=5)
        again = service.run(timedelta(days=1), budget=10)
        assert (again.generator_calls, again.points_appended) == (0, 0)  # not seconds apart
        clock.now += timedelta(minutes=55)
        assert service.run(timedelta(days=1), budget=10).points_appended == 2
        assert _points(store, "1") == 3
    finally:
        env.server.stop()


def test_only_objects_with_metrics_are_candidates(store, redis_client, clock):
    """A website row (URL-only, no metrics) never uses up the budget."""
    views = _Views()
    sites = FixedGenerator({SourceType.WEBSITE}, build=harness.site_graph, external=False)
    env = harness.build(store, redis_client, clock, generators=[views, sites])
    try:
        for i in range(3):
            _record(env, clock, 10 + i, website=f"https://site{i}.example/")
        _record(env, clock, 20, twitter="https://x.com/a/status/20")
        sites.calls.clear()
        clock.now += timedelta(hours=2)
        result = MetricRefreshService(store, env.recorder, clock=clock).run(timedelta(days=1), budget=1)
        assert sites.calls == [] and result.generator_calls == 1 and result.points_appended == 2
    finally:
        env.server.stop()


def test_the_objects_whose_last_point_is_oldest_come_first(store, redis_client, clock):
    views = _Views()
    env = harness.build(store, redis_client, clock, generators=[views])
    try:
        for i in range(4):  # recorded an hour apart: tweet 0 has the oldest point
            _record(env, clock, 30 + i, twitter=f"https://x.com/a/status/{30 + i}")
            clock.now += timedelta(hours=1)
        views.calls.clear()
        clock.now += timedelta(hours=1)
        service = MetricRefreshService(store, env.recorder, clock=clock)
        for expected in (30, 31, 32, 33, 30):  # then round again, the refreshed ones to the back
            service.run(timedelta(days=1), budget=1)
            assert views.calls[-1] == f"https://x.com/a/status/{expected}"
            clock.now += timedelta(hours=1)
    finally:
        env.server.stop()


def test_metrics_latest_moves_with_the_series_and_never_regresses(store, redis_client, clock):
    views = _Views()
    env = harness.build(store, redis_client, clock, generators=[views])
    try:
        _record(env, clock, 40, twitter="https://x.com/a/status/40")
        clock.now += timedelta(hours=2)
        result = MetricRefreshService(store, env.recorder, clock=clock).run(timedelta(days=1), budget=5)
        assert result.metrics_latest_updated == 1
        content = store.db.contents.find_one({"platform_key": "40"})
        series = store.db.metric_series.find_one({"object": "contents", "object_id": content["_id"]})
        assert content["metrics_latest"] == series["points"][-1]["metrics"] == {"viewCount": 200}
        assert content["observed_at"] == series["points"][-1]["at"] == clock()
        # A late, older observation never moves it back.
        assert not store.contents.update_metrics_latest(content["_id"], {"viewCount": 1}, clock() - timedelta(hours=1))
        assert store.db.contents.find_one({"_id": content["_id"]})["metrics_latest"] == {"viewCount": 200}
    finally:
        env.server.stop()


def test_failures_are_warnings_counted_and_go_to_the_back_of_the_queue(store, redis_client, clock, caplog):
    views = _Views()
    env = harness.build(store, redis_client, clock, generators=[views])
    try:
        _record(env, clock, 50, twitter="https://x.com/a/status/50")
        clock.now += timedelta(minutes=10)
        _record(env, clock, 51, twitter="https://x.com/a/status/51")
        views.fail.add("https://x.com/a/status/50")
        views.calls.clear()
        clock.now += timedelta(hours=2)
        service = MetricRefreshService(store, env.recorder, clock=clock)
        with caplog.at_level("WARNING", logger="socialrec_pipeline.recording.metric_refresh"):
            failed = service.run(timedelta(days=1), budget=1)
        assert (failed.failed, failed.points_appended) == (1, 0)
        assert failed.failures[0][0] == "https://x.com/a/status/50" and "503" in failed.failures[0][1]
        assert any(r.levelname == "WARNING" and "status/50" in r.getMessage() for r in caplog.records)
        nxt = service.run(timedelta(days=1), budget=1)  # the failing URL does not take the budget again
        assert views.calls[-1] == "https://x.com/a/status/51" and nxt.points_appended == 2
    finally:
        env.server.stop()


def test_objects_linked_before_the_window_leave_the_queue(store, redis_client, clock):
    views = _Views()
    env = harness.build(store, redis_client, clock, generators=[views])
    try:
        _record(env, clock, 60, twitter="https://x.com/a/status/60")
        views.calls.clear()
        clock.now += timedelta(days=5)
        service = MetricRefreshService(store, env.recorder, clock=clock)
        result = service.run(timedelta(days=3), budget=10)
        assert views.calls == [] and result.left_window == 2  # the tweet and its author
        assert store.db.metric_series.count_documents({"refresh_at": {"$exists": True}}) == 0
        _record(env, clock, 61, twitter="https://x.com/a/status/60")  # linked again by another token
        clock.now += timedelta(hours=1)
        assert service.run(timedelta(days=3), budget=10).points_appended == 2
    finally:
        env.server.stop()
