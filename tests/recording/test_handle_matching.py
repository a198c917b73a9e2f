"""The suspended path matches handles the way each platform does.

A "suspended" answer carries no id: the account it names is found by the URL's handle, which the
router lower-cases, while the stored handle keeps the platform's spelling. Per platform through
`TokenRecorder.note_unavailable` with the real router, and end to end through the X generator."""

from __future__ import annotations

from datetime import timedelta

import pytest

from socialrec_pipeline.domain.enums import FetchStatus, Platform
from socialrec_pipeline.domain.events import TokenFlowEvent
from socialrec_pipeline.domain.models import Account
from socialrec_pipeline.providers.x import TwitterApiClient, XGenerator
from socialrec_pipeline.routing.route import route
from socialrec_pipeline.sandbox.platforms import x as xfix
from socialrec_pipeline.sandbox.soltracker import upstream_token

from . import harness
from .conftest import make_address

#: A profile URL per platform whose "suspended or deleted" answer names no account id.
PROFILE_URLS = {
    Platform.X: "https://x.com/{}",
    Platform.GITHUB: "https://github.com/{}",
    Platform.REDDIT: "https://www.reddit.com/user/{}",
    Platform.TIKTOK: "https://www.tiktok.com/@{}",
    Platform.INSTAGRAM: "https://www.instagram.com/{}",
    Platform.YOUTUBE: "https://www.youtube.com/@{}",
}


@pytest.fixture
def env(store, redis_client, clock):
    h = harness.build(store, redis_client, clock=clock, generators=[])
    yield h
    h.server.stop()


@pytest.mark.parametrize("platform", sorted(PROFILE_URLS))
def test_a_suspended_answer_marks_the_holder_whatever_the_case(env, store, clock, platform):
    spelled = "KolMixed1"
    holder = Account.of(platform=platform, platform_key="id-holder", observed_at=clock.now, handle=spelled)
    bystander = Account.of(platform=platform, platform_key="id-other", observed_at=clock.now, handle="someone_else")
    store.accounts.upsert_many([holder, bystander])
    routed = route(PROFILE_URLS[platform].format(spelled))
    assert routed is not None and routed.source_key.lstrip("@") == "kolmixed1"  # the router lower-cases

    at = clock.now + timedelta(hours=1)
    assert env.recorder.note_unavailable(routed, at) == 1
    assert store.accounts.find_by_platform_key(platform, "id-holder").moderation.unavailable is True
    assert store.accounts.find_by_platform_key(platform, "id-other").moderation.unavailable is None
    # The stored spelling is untouched, and no row keyed by the URL's handle was created.
    assert store.accounts.find_by_platform_key(platform, "id-holder").current_handle() == spelled
    assert store.accounts.find_by_platform_key(platform, "kolmixed1") is None


def test_a_former_holder_is_not_marked(env, store, clock):
    """The handle moved on (a case-insensitive rename away): only its current holder is flagged."""
    old = Account.of(platform=Platform.X, platform_key="id-old", observed_at=clock.now, handle="KolMixed_2")
    old.add_handle_observation("renamed_2", clock.now + timedelta(minutes=5))
    new = Account.of(platform=Platform.X, platform_key="id-new", observed_at=clock.now + timedelta(minutes=6),
                     handle="kolmixed_2")
    store.accounts.upsert_many([old, new])
    assert env.recorder.note_unavailable(route("https://x.com/KOLMIXED_2"), clock.now + timedelta(hours=1)) == 1
    assert store.accounts.find_by_platform_key(Platform.X, "id-new").moderation.unavailable is True
    assert store.accounts.find_by_platform_key(Platform.X, "id-old").moderation.unavailable is None


def test_x_suspended_profile_end_to_end(store, redis_client, clock):
    """A tweet stores its author as X spells it (`KolMixed`); later `x.com/KolMixed` answers
    "suspended" without an id: the author's row is flagged, and nothing else is created."""
    h = harness.build(store, redis_client, clock=clock, generators=[])
    fixtures = xfix.XFixtures().register(h.server)
    author = xfix.user("9001", "KolMixed", name="Kol Mixed")
    t = xfix.tweet("1866000000000000777", author, quoted=None)
    fixtures.tweets[t["id"]] = t
    client = TwitterApiClient(h.server.url, "k", timeout=2.0)
    h.recorder.registry.register(XGenerator(client))
    try:
        for seed, url in ((21, "https://x.com/KolMixed/status/1866000000000000777"), (22, "https://x.com/KolMixed")):
            if seed == 22:
                clock.now += timedelta(hours=1)
                fixtures.users["kolmixed"] = xfix.suspended_user("KolMixed")
            address = make_address(seed)
            h.upstream.put(upstream_token(address, twitter=url))
            event = TokenFlowEvent.model_validate({"tokenAddress": address, "totalInvestedAlphaFinders": 6})
            result = h.recorder.record_token(event, owner="test")
            assert result.outcome == "recorded", result
        assert result.urls[0].status == FetchStatus.SUSPENDED
        row = store.accounts.find_by_platform_key(Platform.X, "9001")
        assert row.current_handle() == "KolMixed"
        assert (row.moderation.unavailable, row.moderation.changed_at) == (True, clock.now)
        assert store.db.accounts.count_documents({"platform": "x"}) == 1
    finally:
        client.close()
        h.server.stop()
