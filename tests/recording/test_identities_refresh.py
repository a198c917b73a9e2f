"""SPEC §5 end to end: tokens recorded through the real GitHub and Reddit generators (sandbox
stand-ins over HTTP), real Redis and Mongo; the accounts they meet are completed and refreshed."""

from __future__ import annotations

from datetime import timedelta

import pytest

from socialrec_pipeline.domain.enums import FetchStatus, Platform
from socialrec_pipeline.domain.events import TokenFlowEvent
from socialrec_pipeline.providers.github import GitHubClient, GitHubGenerator
from socialrec_pipeline.providers.reddit import RedditClient, RedditGenerator
from socialrec_pipeline.recording.metric_refresh import MetricRefreshService
from socialrec_pipeline.sandbox.fixture_server import Reply
from socialrec_pipeline.sandbox.platforms import github as ghfix
from socialrec_pipeline.sandbox.platforms import reddit as rdfix
from socialrec_pipeline.sandbox.soltracker import upstream_token

from . import harness
from .conftest import make_address

SOL = "7xKXtg2CW87d97TXJSDpbD5jBkheTqA83TZRuJosgAsU"


@pytest.fixture
def world(store, redis_client, clock):
    h = harness.build(store, redis_client, clock=clock, generators=[])
    gh = ghfix.GitHubFixtures().register(h.server)
    gh.repos["pumpdev/pump-sdk"] = ghfix.repo("pumpdev/pump-sdk")
    gh.repos["pumpdev/pump-ui"] = ghfix.repo("pumpdev/pump-ui", 700_010)
    rdfix.register_reddit(h.server)
    gh_client, rd_client = GitHubClient(h.server.url, timeout=2.0), RedditClient(h.server.url, timeout=2.0)
    for generator in (GitHubGenerator(gh_client), RedditGenerator(rd_client)):
        h.recorder.registry.register(generator)
    yield h, gh
    gh_client.close()
    rd_client.close()
    h.server.stop()


def record(h, *, website=None, twitter=None, seed=None) -> str:
    address = make_address(seed)
    h.upstream.put(upstream_token(address, website=website, twitter=twitter))
    event = TokenFlowEvent.model_validate({"tokenAddress": address, "totalInvestedAlphaFinders": 6})
    result = h.recorder.record_token(event, owner="test")
    assert result.outcome == "recorded", result
    return result


def test_a_stub_owner_is_completed_by_a_later_full_profile_field_by_field(world, store, clock):
    h, gh = world
    t0 = clock.now
    # Token 1: the repo answer embeds its owner; the profile endpoint has nothing yet (404).
    first = record(h, website="https://github.com/pumpdev/pump-sdk", seed=1)
    assert first.urls[0].status == FetchStatus.OK
    stub = store.db.accounts.find_one({"platform": "gh", "platform_key": "pumpdev"})
    assert stub["data"] == {"source_ref": "repo", "id": 700_002, "account_type": "User"}
    assert (
        "bio" not in stub and stub["known_wallets"] == [] and stub["metrics"] == {} and stub["declared_handles"] == []
    )
    repo = store.db.contents.find_one({"platform_key": "pumpdev/pump-sdk"})
    assert repo["creator_id"] == stub["_id"]

    # Token 2, an hour later: its graph holds the owner's full profile.
    clock.now = t0 + timedelta(hours=1)
    gh.users["pumpdev"] = ghfix.user(bio=f"building on solana | CA: {SOL}", followers=80)
    second = record(h, website="https://github.com/pumpdev", seed=2)
    assert second.urls[0].status == FetchStatus.OK

    rows = list(store.db.accounts.find({"platform": "gh", "platform_key": "pumpdev"}))
    assert len(rows) == 1
    row = rows[0]
    t1 = clock.now.replace(microsecond=clock.now.microsecond // 1000 * 1000)
    assert row["_id"] == stub["_id"] and row["created_at"] == stub["created_at"]
    assert row["handles"] == [{"value": "pumpdev", "key": "pumpdev", "first_seen": t0, "last_seen": t1}]
    assert row["display_name"] == "Pump Dev"
    assert row["bio"] == f"building on solana | CA: {SOL}"
    assert row["links"] == ["https://pump.example"]
    assert row["declared_handles"] == [{"platform": "x", "value": "pumpdev_x"}]
    assert row["known_wallets"] == [SOL]
    assert row["metrics"] == {"followers": 80}
    assert row["account_created_at"].isoformat() == "2021-03-04T05:06:07+00:00"
    assert row["moderation"] == {"unavailable": False}
    assert row["observed_at"] == t1
    assert row["data"] == {"id": 583231, "account_type": "User", "profile_observed_at": t1}  # source_ref gone
    assert [a.id for a in store.accounts.find_by_wallet(SOL)] == [row["_id"]]


def test_a_fresh_profile_is_not_fetched_again_until_it_ages(world, store, clock):
    h, gh = world
    gh.users["pumpdev"] = ghfix.user()
    record(h, website="https://github.com/pumpdev/pump-sdk", seed=3)
    assert len(h.server.calls("/users/pumpdev")) == 1  # fetched in the repo's step
    clock.now += timedelta(days=6)
    record(h, website="https://github.com/pumpdev/pump-ui", seed=4)
    assert len(h.server.calls("/users/pumpdev")) == 1  # younger than 7 days: skipped
    clock.now += timedelta(days=2)
    gh.users["pumpdev"] = ghfix.user(followers=120)
    record(h, website="https://github.com/pumpdev/pump-sdk", seed=5)
    assert len(h.server.calls("/users/pumpdev")) == 2
    assert store.accounts.find_by_platform_key(Platform.GITHUB, "pumpdev").metrics.followers == 120


def test_a_suspended_account_is_flagged_and_cleared_with_the_time(world, store, clock):
    h, _gh = world
    t0 = clock.now
    record(h, twitter="https://www.reddit.com/user/moon_dev", seed=6)
    assert store.accounts.find_by_platform_key(Platform.REDDIT, "moon_dev").moderation.unavailable is False

    clock.now = t0 + timedelta(hours=2)
    h.server.route("GET", "/user/moon_dev/about.json", Reply.json(rdfix.suspended_user("moon_dev")))
    result = record(h, twitter="https://www.reddit.com/user/moon_dev", seed=7)
    assert result.urls[0].status == FetchStatus.SUSPENDED
    row = store.accounts.find_by_platform_key(Platform.REDDIT, "moon_dev")
    assert (row.moderation.unavailable, row.moderation.changed_at) == (True, t0 + timedelta(hours=2))
    assert row.bio == "building $MOON"  # nothing else is lost

    clock.now = t0 + timedelta(hours=5)
    h.server.route("GET", "/user/moon_dev/about.json", Reply.json(rdfix.user_about()))
    record(h, twitter="https://www.reddit.com/r/solana/comments/1abcde", seed=8)  # seen alive via a post
    row = store.accounts.find_by_platform_key(Platform.REDDIT, "moon_dev")
    assert (row.moderation.unavailable, row.moderation.changed_at) == (False, t0 + timedelta(hours=5))
    sub = store.venues.find_by_platform_key(Platform.REDDIT, "solana")
    assert (sub.metrics.members, sub.description) == (250000, "The Solana subreddit")


def test_metric_refresh_refreshes_the_accounts_it_re_observes(world, store, clock):
    h, gh = world
    gh.users["pumpdev"] = ghfix.user(bio="gm", followers=77)
    record(h, website="https://github.com/pumpdev", seed=9)
    clock.now += timedelta(hours=3)
    gh.users["pumpdev"] = ghfix.user(bio=f"new CA {SOL}", followers=90)
    result = MetricRefreshService(store, h.recorder, clock).run(timedelta(days=1), budget=10)
    assert result.generator_calls == 1
    row = store.accounts.find_by_platform_key(Platform.GITHUB, "pumpdev")
    assert (row.bio, row.metrics.followers, row.known_wallets, row.observed_at) == (
        f"new CA {SOL}",
        90,
        [SOL],
        clock.now.replace(microsecond=clock.now.microsecond // 1000 * 1000),
    )


def test_suspension_flags_the_row_the_answer_names_whatever_the_url_case(world, store, clock):
    h, _gh = world
    # The post names its author "Moon_Dev" (the stored key keeps Reddit's spelling); the profile
    # URL is lower-cased by the router, and the suspended answer spells the name again.
    h.server.route("GET", "/comments/1abcde.json", Reply.json(rdfix.post_listing(author="Moon_Dev")))
    h.server.route("GET", "/user/Moon_Dev/about.json", Reply.json(rdfix.user_about(name="Moon_Dev")))
    record(h, twitter="https://www.reddit.com/r/solana/comments/1abcde", seed=10)
    assert store.accounts.find_by_platform_key(Platform.REDDIT, "Moon_Dev").moderation.unavailable is False
    clock.now += timedelta(hours=1)
    h.server.route("GET", "/user/moon_dev/about.json", Reply.json(rdfix.suspended_user("Moon_Dev")))
    result = record(h, twitter="https://www.reddit.com/user/Moon_Dev", seed=11)
    assert result.urls[0].status == FetchStatus.SUSPENDED
    row = store.accounts.find_by_platform_key(Platform.REDDIT, "Moon_Dev")
    assert (row.moderation.unavailable, row.moderation.changed_at) == (True, clock.now)
    assert store.accounts.find_by_platform_key(Platform.REDDIT, "moon_dev") is None  # no row created
