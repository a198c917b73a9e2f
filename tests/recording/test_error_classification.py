"""Issue 9 items 8 and 9: attempts count external calls that judged the target; errors are
classified by what can fix them (our key, our quota, the target)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from socialrec_pipeline.domain.enums import FetchStatus
from socialrec_pipeline.domain.models import SocialUrlRecord, Token
from socialrec_pipeline.providers.shortlinks import TargetGated
from socialrec_pipeline.providers.web import UrlscanClient, WebGenerator
from socialrec_pipeline.providers.x import TwitterApiClient, XGenerator
from socialrec_pipeline.providers.youtube import YouTubeClient, YouTubeGenerator
from socialrec_pipeline.recording.processor import PlannedUrl, PreparedToken
from socialrec_pipeline.recording.retry import RetryService
from socialrec_pipeline.recording.settings import RecordingSettings
from socialrec_pipeline.routing import route
from socialrec_pipeline.routing.source_types import SourceType
from socialrec_pipeline.sandbox.fixture_server import FixtureServer, Reply
from socialrec_pipeline.sandbox.platforms import youtube as ytfix

from . import harness
from .conftest import make_address
from .graphs import RaisingGenerator

OLD = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)


@pytest.fixture
def api():
    server = FixtureServer().start()
    yield server
    server.stop()


def element(url, status="error", attempts=0, field="twitter"):
    routed = route(url)
    return SocialUrlRecord(url=routed.canonical_url, raw_url=url, source_field=field,
                           source_type=str(routed.source_type),
                           source_key=routed.source_key, platform=routed.platform, subtype=routed.subtype,
                           status=status, attempted_at=OLD, attempts=attempts)


def seed(store, address, *records):
    store.tokens.write_marker(Token.of(address=address, discovered_at=OLD, symbol="S", social_urls=list(records)))


def statuses(store, address):
    return {r.url: (str(r.status), r.attempts) for r in store.tokens.find_by_address(address).social_urls}


def prepared_for(address, url):
    routed = route(url)
    planned = PlannedUrl(url=routed.canonical_url, raw_url=url, source_field="website", routed=routed)
    return PreparedToken(address=address, owner="o", symbol=None, first_transfer_at=None, planned=(planned,)), planned


# -- item 8 -------------------------------------------------------------------------------------


def test_a_website_urlscan_was_never_asked_about_counts_no_attempt(store, redis_client, clock, api):
    api.route("GET", "/api/v1/search/", Reply.json({"results": []}))
    web = WebGenerator(UrlscanClient(api.url, "k"))
    e = harness.build(store, redis_client, clock, generators=[web])
    try:
        prepared, planned = prepared_for(make_address(40), "http://127.0.0.1:8080/")  # IP literal: never queried
        result = e.recorder.record_one_url(prepared, planned)
        assert result.status == "ok" and api.calls("/api/") == []
        assert (result.external_call, result.counts_as_attempt, result.to_record().attempts) == (False, False, 0)
        prepared, planned = prepared_for(make_address(41), "https://someproject.xyz/")
        queried = e.recorder.record_one_url(prepared, planned)
        assert len(api.calls("/api/")) == 1 and queried.counts_as_attempt
    finally:
        e.server.stop()


def test_a_skipped_paid_result_never_counts_an_attempt_even_after_a_request(store, redis_client, clock):
    """A short link whose target is paid: the resolver made a request, but the target was never judged."""
    gated = RaisingGenerator({SourceType.X_TWEET}, TargetGated("paid target", FetchStatus.SKIPPED_PAID))
    e = harness.build(store, redis_client, clock, generators=[gated])
    try:
        address = make_address(42)
        seed(store, address, element("https://x.com/a/status/1", "skipped_paid", attempts=1))
        result = RetryService(store, e.recorder, clock=clock).run(["skipped_paid"])
        assert len(gated.calls) == 1 and result.external_calls == 1
        assert statuses(store, address) == {"https://x.com/a/status/1": ("skipped_paid", 1)}
    finally:
        e.server.stop()


# -- item 9: our key ----------------------------------------------------------------------------


def test_a_rejected_x_key_is_unsupported_without_attempts_and_stops_x_for_the_run(store, redis_client, clock, api):
    api.route("GET", "/twitter/tweets", Reply.json({"error": "Unauthorized"}, status=401))
    x = XGenerator(TwitterApiClient(api.url, "bad-key"))
    e = harness.build(store, redis_client, clock, generators=[x], settings=RecordingSettings(max_attempts=3))
    try:
        address = make_address(43)
        urls = [f"https://x.com/a/status/{i}" for i in (1, 2, 3)]
        seed(store, address, *[element(u, "error", attempts=2, field=f"f{i}") for i, u in enumerate(urls)])
        service = RetryService(store, e.recorder, clock=clock)
        for _hour in range(6):  # hours of hourly retries never exhaust a platform whose key is wrong
            result = service.run(None)
            assert result.urls_attempted == 3
            assert set(result.stopped_credentials) == {"TWITTERAPI_API_KEY"}
            clock.now += timedelta(hours=1, minutes=1)
        assert len(api.calls("/twitter/")) == 6  # one call per run: the first refusal stops X
        assert statuses(store, address) == {u: ("unsupported", 2) for u in urls}
        # Once the key is fixed the URLs are retried like any unsupported URL.
        api.route("GET", "/twitter/tweets", Reply.json({"tweets": [], "status": "success"}))
        service.run(["unsupported"])
        assert statuses(store, address) == {u: ("not_found", 3) for u in urls}
    finally:
        e.server.stop()


# -- item 9: our quota --------------------------------------------------------------------------


def test_youtube_quota_stops_youtube_for_the_run_and_the_urls_stay_retryable(store, redis_client, clock, api):
    api.route("GET", "/videos", ytfix.quota_exceeded())
    api.route("GET", "/twitter/tweets", Reply.json({"tweets": [], "status": "success"}))
    yt = YouTubeGenerator(YouTubeClient(api.url, "k"))
    x = XGenerator(TwitterApiClient(api.url, "k"))
    e = harness.build(store, redis_client, clock, generators=[yt, x], settings=RecordingSettings(max_attempts=1))
    try:
        address = make_address(44)
        videos = ["https://youtube.com/watch?v=aaaaaaaaaaa", "https://youtube.com/watch?v=bbbbbbbbbbb"]
        seed(store, address, *[element(v, "error", field=f"v{i}") for i, v in enumerate(videos)],
             element("https://x.com/a/status/9", "error", field="twitter"))
        result = RetryService(store, e.recorder, clock=clock).run(["error"])
        assert len(api.calls("/videos")) == 1  # the second video is not called
        assert len(api.calls("/twitter/")) == 1  # other providers go on
        after = statuses(store, address)
        # error without an attempt: even at max_attempts=1 nothing became exhausted
        assert [after[v] for v in videos] == [("error", 0), ("error", 0)]
        assert after["https://x.com/a/status/9"] == ("not_found", 1)
        assert set(result.stopped_credentials) == {"YOUTUBE_API_KEY"} and result.exhausted == 0
    finally:
        e.server.stop()


def test_a_stop_seen_by_one_step_is_seen_by_the_next_through_redis(store, redis_client, clock, api, unique_suffix):
    """record_token_job runs one step per URL: the stop is shared through Redis, scoped to the token."""
    from socialrec_pipeline.recording.provider_stops import RedisProviderStops

    api.route("GET", "/twitter/tweets", Reply.json({"error": "Forbidden"}, status=403))
    x = XGenerator(TwitterApiClient(api.url, "bad-key"))
    e = harness.build(store, redis_client, clock, generators=[x])
    stops = RedisProviderStops(redis_client, f"test-{unique_suffix}", ttl_s=30)
    try:
        address = make_address(45)
        results = []
        for tweet in ("https://x.com/a/status/1", "https://x.com/a/status/2"):
            prepared, planned = prepared_for(address, tweet)
            step_stops = RedisProviderStops(redis_client, f"test-{unique_suffix}")  # each step opens its own
            results.append(e.recorder.record_one_url(prepared, planned, None, step_stops))
        assert len(api.calls("/twitter/")) == 1
        assert [(str(r.status), r.counts_as_attempt) for r in results] == [("unsupported", False)] * 2
        assert all(r.stopped_credential.setting == "TWITTERAPI_API_KEY" for r in results)
    finally:
        stops.clear()
        e.server.stop()


def test_reconcile_reports_a_refused_key_once_and_records_the_urls_unsupported(store, redis_client, clock, api):
    from socialrec_pipeline.recording.reconcile import ReconcileService

    from .test_reconcile import FROM, TO, _at, harness_token

    api.route("GET", "/twitter/tweets", Reply.json({"error": "Unauthorized"}, status=401))
    x = XGenerator(TwitterApiClient(api.url, "bad-key"))
    e = harness.build(store, redis_client, clock, generators=[x])
    try:
        for i in range(2):
            e.upstream.put(harness_token(make_address(60 + i), _at(i), twitter=f"https://x.com/a/status/{i + 1}"))
        result = ReconcileService(store, e.client, e.recorder, clock=clock).run_window(FROM, TO, [])
        assert result.recorded == 2 and result.url_statuses == {"unsupported": 2}
        assert set(result.stopped_credentials) == {"TWITTERAPI_API_KEY"}
    finally:
        e.server.stop()
