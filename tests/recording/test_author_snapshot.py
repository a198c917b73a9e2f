"""`contents.author{}` keeps the author as known at the observation (seed 000 §1.3: "followers at
that moment"), also when the owner's fresh profile is rightly not fetched again: the snapshot then
takes `followers`, `display_name` and `account_created_at` from the stored account row.

GitHub and Reddit generators against their sandbox stand-ins over HTTP, real Redis and Mongo."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from socialrec_pipeline.domain.enums import FetchStatus
from socialrec_pipeline.domain.events import TokenFlowEvent
from socialrec_pipeline.providers.github import GitHubClient, GitHubGenerator
from socialrec_pipeline.providers.reddit import RedditClient, RedditGenerator
from socialrec_pipeline.recording.settings import RecordingSettings
from socialrec_pipeline.sandbox.fixture_server import Reply
from socialrec_pipeline.sandbox.platforms import github as ghfix
from socialrec_pipeline.sandbox.platforms import reddit as rdfix
from socialrec_pipeline.sandbox.soltracker import upstream_token

from . import harness
from .conftest import make_address

GH_CREATED = datetime(2021, 3, 4, 5, 6, 7, tzinfo=UTC)
RD_CREATED = datetime.fromtimestamp(1700000000, UTC)


def build_world(store, redis_client, clock, settings=None):
    h = harness.build(store, redis_client, clock=clock, generators=[], settings=settings)
    gh = ghfix.GitHubFixtures().register(h.server)
    for i, name in enumerate(("pump-sdk", "pump-ui", "pump-cli")):
        gh.repos[f"pumpdev/{name}"] = ghfix.repo(f"pumpdev/{name}", 700_001 + i)
    gh.gists["aa5a315d61ae9438b18d"] = ghfix.gist()
    gh.users["pumpdev"] = ghfix.user(followers=77)
    rdfix.register_reddit(h.server)
    second = rdfix.post_listing(id="2fghij", name="t3_2fghij", permalink="/r/solana/comments/2fghij/second/",
                                url="https://www.reddit.com/r/solana/comments/2fghij/second/")
    h.server.route("GET", "/comments/2fghij.json", Reply.json(second))
    clients = [GitHubClient(h.server.url, timeout=2.0), RedditClient(h.server.url, timeout=2.0)]
    h.recorder.registry.register(GitHubGenerator(clients[0]))
    h.recorder.registry.register(RedditGenerator(clients[1]))
    return h, gh, clients


@pytest.fixture
def world(store, redis_client, clock):
    h, gh, clients = build_world(store, redis_client, clock)
    yield h, gh
    for c in clients:
        c.close()
    h.server.stop()


_seeds = iter(range(100, 10_000))


def record(h, url: str) -> None:
    address = make_address(next(_seeds))
    h.upstream.put(upstream_token(address, website=url))
    event = TokenFlowEvent.model_validate({"tokenAddress": address, "totalInvestedAlphaFinders": 6})
    result = h.recorder.record_token(event, owner="test")
    assert result.outcome == "recorded" and result.urls[0].status == FetchStatus.OK, result


def author(store, platform_key: str) -> dict:
    return store.db.contents.find_one({"platform_key": platform_key})["author"]


def test_second_repo_and_gist_of_an_owner_carry_the_stored_profile(world, store, clock):
    h, gh = world
    record(h, "https://github.com/pumpdev/pump-sdk")
    first = author(store, "pumpdev/pump-sdk")
    assert (first["followers"], first["display_name"], first["account_created_at"]) == (77, "Pump Dev", GH_CREATED)

    clock.now += timedelta(days=2)
    gh.users["pumpdev"] = ghfix.user(followers=500)  # not fetched: the stored profile is fresh
    record(h, "https://github.com/pumpdev/pump-ui")
    record(h, "https://gist.github.com/pumpdev/aa5a315d61ae9438b18d")
    assert len(h.server.calls("/users/pumpdev")) == 1
    for key in ("pumpdev/pump-ui", "aa5a315d61ae9438b18d"):
        snapshot = author(store, key)
        assert snapshot["account_id"] == first["account_id"] and snapshot["handle"] == "pumpdev"
        assert (snapshot["followers"], snapshot["display_name"], snapshot["account_created_at"]) == (
            77, "Pump Dev", GH_CREATED,
        )

    # Aged out: the profile is fetched again and the next content carries the new count; the
    # snapshots already written keep theirs (the followers at that moment).
    clock.now += timedelta(days=6)
    record(h, "https://github.com/pumpdev/pump-cli")
    assert len(h.server.calls("/users/pumpdev")) == 2
    assert author(store, "pumpdev/pump-cli")["followers"] == 500
    assert author(store, "pumpdev/pump-ui")["followers"] == 77


def test_a_stale_profile_is_not_borrowed(world, store, clock):
    h, gh = world
    record(h, "https://github.com/pumpdev/pump-sdk")
    clock.now += timedelta(days=8)
    del gh.users["pumpdev"]  # the profile fetch fails (404): the owner is the thin copy only
    record(h, "https://github.com/pumpdev/pump-ui")
    snapshot = author(store, "pumpdev/pump-ui")
    assert snapshot["handle"] == "pumpdev"
    assert not {"followers", "display_name", "account_created_at"} & set(snapshot)


def test_no_borrowing_when_profiles_are_always_fetched(store, redis_client, clock):
    h, gh, clients = build_world(store, redis_client, clock, RecordingSettings(profile_max_age_hours=0))
    try:
        record(h, "https://github.com/pumpdev/pump-sdk")
        del gh.users["pumpdev"]
        record(h, "https://github.com/pumpdev/pump-ui")
        assert not {"followers", "display_name", "account_created_at"} & set(author(store, "pumpdev/pump-ui"))
    finally:
        for c in clients:
            c.close()
        h.server.stop()


def test_second_post_of_a_reddit_author_carries_the_stored_profile(world, store, clock):
    h, _gh = world
    record(h, "https://www.reddit.com/r/solana/comments/1abcde")
    first = author(store, "1abcde")
    assert (first["display_name"], first["account_created_at"]) == ("Moon Dev", RD_CREATED)

    clock.now += timedelta(hours=3)
    record(h, "https://www.reddit.com/r/solana/comments/2fghij")
    assert len(h.server.calls("/user/moon_dev/about.json")) == 1  # fresh: not fetched again
    second = author(store, "2fghij")
    assert second["account_id"] == first["account_id"] and second["handle"] == "moon_dev"
    assert (second["display_name"], second["account_created_at"]) == ("Moon Dev", RD_CREATED)
