"""Locks, negative cache, credit flag, settings and the SolTracker client on their own."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import pydantic
import pytest
import redis as redis_lib

from socialrec_pipeline.recording.locks import (
    InMemoryCreditGuard,
    LockNotHeld,
    PaidCreditGuard,
    TokenLocks,
    UnknownTokenCache,
)
from socialrec_pipeline.recording.settings import RecordingSettings
from socialrec_pipeline.recording.soltracker import (
    SolTrackerClient,
    UpstreamConfigError,
    UpstreamShapeError,
    UpstreamUnavailable,
)
from socialrec_pipeline.sandbox.fixture_server import FixtureServer, Reply
from socialrec_pipeline.sandbox.soltracker import SolTrackerFixture, upstream_token

from .conftest import make_address


@pytest.fixture
def locks(redis_client, unique_suffix):
    return TokenLocks(redis_client, ttl_s=0.6, prefix=f"t-{unique_suffix}:social-record:")


def test_lock_is_owned_by_its_token(locks):
    assert locks.try_acquire("A", "one") and not locks.try_acquire("A", "two")
    assert not locks.extend("A", "two") and not locks.release("A", "two")
    assert locks.extend("A", "one") and locks.release("A", "one")
    assert locks.try_acquire("A", "two")


def test_default_key_is_social_record_address(redis_client):
    assert TokenLocks(redis_client).key("Mint") == "social-record:Mint"


def test_keep_alive_outlives_the_ttl_and_works_from_another_client(locks, redis_url):
    assert locks.try_acquire("B", "job-7")
    other = TokenLocks(redis_lib.Redis.from_url(redis_url), ttl_s=locks.ttl_s, prefix=locks.prefix)
    with other.held("B", "job-7") as keeper:
        time.sleep(1.5)  # 2.5 TTLs
        assert locks.owner_of("B") == "job-7" and keeper.extensions >= 3
    time.sleep(0.8)
    assert locks.owner_of("B") is None  # no longer extended once the block ended
    with pytest.raises(LockNotHeld), other.held("B", "job-7"):
        pass


def test_a_redis_error_met_by_the_keep_alive_is_raised_not_swallowed(locks):
    assert locks.try_acquire("F", "me")
    real_extend, calls = locks.extend, []

    def failing_after_entry(address, owner):
        calls.append(address)
        if len(calls) > 1:
            raise redis_lib.ConnectionError("redis went away")
        return real_extend(address, owner)

    locks.extend = failing_after_entry
    with pytest.raises(redis_lib.ConnectionError), locks.held("F", "me"):
        time.sleep(0.5)
    assert len(calls) == 2


def test_acquired_raises_when_the_lock_was_taken_while_the_work_ran(locks):
    with pytest.raises(LockNotHeld), locks.acquired("G", "me") as got:
        assert got
        locks.redis.set(locks.key("G"), "thief", px=60_000)
        time.sleep(0.5)
    assert locks.owner_of("G") == "thief"  # the release never touches another owner's lock


def test_acquired_releases_and_reports_contention(locks):
    with locks.acquired("C", "x") as got:
        assert got
        with locks.acquired("C", "y") as second:
            assert not second
    assert locks.owner_of("C") is None


def test_any_redis_error_raises():
    dead = TokenLocks(redis_lib.Redis(host="127.0.0.1", port=1, socket_connect_timeout=0.3))
    with pytest.raises(redis_lib.ConnectionError):
        dead.try_acquire("D", "x")
    with pytest.raises(redis_lib.ConnectionError):
        UnknownTokenCache(dead.redis).is_known_unknown("D")


def test_unknown_cache_and_credit_flags(redis_client, unique_suffix):
    cache = UnknownTokenCache(redis_client, ttl_s=0.3, prefix=f"t-{unique_suffix}:u:")
    cache.remember("E")
    assert cache.is_known_unknown("E")
    time.sleep(0.4)
    assert not cache.is_known_unknown("E")
    a = PaidCreditGuard(redis_client, f"run-{unique_suffix}")
    b = PaidCreditGuard(redis_client, f"run-{unique_suffix}")
    assert not b.is_exhausted()
    a.mark_exhausted()
    assert b.is_exhausted() and not PaidCreditGuard(redis_client, "other-" + unique_suffix).is_exhausted()
    a.clear()
    local = InMemoryCreditGuard()
    local.mark_exhausted()
    assert local.is_exhausted()


def test_settings_fail_closed():
    s = RecordingSettings()
    assert (s.af_threshold, s.enable_paid, s.max_attempts, s.lock_ttl_s) == (5, False, 5, 120)
    assert s.gate_settings().enable_paid is False
    with pytest.raises(ValueError):
        RecordingSettings(af_threshold=3)
    with pytest.raises(ValueError):
        RecordingSettings(af_threshold="6")
    with pytest.raises(ValueError):
        RecordingSettings(enable_paid="yes")
    with pytest.raises(ValueError):
        RecordingSettings(paid_platforms=set())
    with pytest.raises(ValueError):
        RecordingSettings.from_env({"SOCIALREC_ENABLE_PAID": "maybe"})
    with pytest.raises(ValueError):
        RecordingSettings.from_env({"SOCIALREC_AF_THRESHOLD": "five"})
    assert RecordingSettings.from_env(
        {"SOCIALREC_ENABLE_PAID": "", "SOCIALREC_MAX_ATTEMPTS": "7"}
    ) == RecordingSettings(max_attempts=7)
    with pytest.raises(pydantic.ValidationError, match="frozen"):
        s.enable_paid = True  # type: ignore[misc]


@pytest.fixture
def upstream():
    server = FixtureServer().start()
    fixture = SolTrackerFixture(api_key="s3cr3t-key")
    fixture.install(server)
    yield server, fixture
    server.stop()


def test_client_sends_key_and_user_agent_and_reads_a_token(upstream):
    server, fixture = upstream
    address = make_address(1)
    fixture.put(upstream_token(address, twitter="https://x.com/p"))
    with SolTrackerClient(server.url, "s3cr3t-key") as client:
        token = client.get_token(address)
        assert token.twitter == "https://x.com/p" and token.total_invested_alpha_finders == 6
        assert client.get_token(make_address(2)) is None
    request = server.calls()[0]
    assert request.headers["x-api-key"] == "s3cr3t-key" and "socialrec" in request.headers["user-agent"]


def test_client_errors_are_typed_and_never_carry_the_key(upstream):
    server, fixture = upstream
    address = make_address(3)
    fixture.put(upstream_token(address))
    with SolTrackerClient(server.url, "wrong-key") as client:
        with pytest.raises(UpstreamConfigError) as info:
            client.get_token(address)
        assert "SOL_TRACKER_API_KEY" in str(info.value) and "wrong-key" not in str(info.value)
    with SolTrackerClient(server.url, "s3cr3t-key") as client:
        for reply, error in [
            (Reply.json({}, status=503), UpstreamUnavailable),
            (Reply.html("<p>hi</p>"), UpstreamShapeError),
            (Reply.json({"address": address, "totalInvestedAlphaFinders": 6, "twitter": 5}), UpstreamShapeError),
            (Reply.json({"address": address}), UpstreamShapeError),
        ]:
            fixture.fail_with(reply)
            with pytest.raises(error) as info:
                client.get_token(address)
            assert "s3cr3t-key" not in str(info.value)


def test_iter_tokens_follows_the_cursor_within_the_window(upstream):
    server, fixture = upstream
    start = datetime(2026, 11, 30, 2, tzinfo=UTC)
    inside = [make_address(10 + i) for i in range(5)]
    for i, address in enumerate(inside):
        fixture.put(upstream_token(address, last_transfer=(start + timedelta(minutes=i)).isoformat()))
    fixture.put(
        upstream_token(make_address(99), last_transfer=(start + timedelta(hours=1)).isoformat())
    )  # `to` is exclusive
    with SolTrackerClient(server.url, "s3cr3t-key") as client:
        got = [t.address for t in client.iter_tokens(start, start + timedelta(hours=1), ["g-main"], limit=2)]
        assert sorted(got) == sorted(inside) and client.calls == 3
        fixture.fail_with(Reply.json({"items": [], "nextCursor": 5}))
        with pytest.raises(UpstreamShapeError):
            list(client.iter_tokens(start, start + timedelta(hours=1), []))
    assert server.calls()[0].param("afGroupIds") == "g-main"


def test_soltracker_bodies_are_size_bounded_while_downloading(upstream):
    """Issue 9: like the platform clients', a body over the bound is refused, not read whole."""
    server, fixture = upstream
    address = make_address(4)
    fixture.put(upstream_token(address))
    padded = {**upstream_token(address), "name": "x" * 5000}
    fixture.fail_with(Reply.json(padded))
    with SolTrackerClient(server.url, "s3cr3t-key", max_body_bytes=4096) as client:
        with pytest.raises(UpstreamShapeError, match="over 4096 bytes"):
            client.get_token(address)
        assert client.get_token(address).address == address  # a normal answer fits


def test_consecutive_unknown_answers_are_counted_and_a_known_token_resets_them(redis_client, unique_suffix):
    cache = UnknownTokenCache(redis_client, ttl_s=5, prefix=f"t-{unique_suffix}:", streak_scope="http://a")
    other = UnknownTokenCache(redis_client, ttl_s=5, prefix=f"t-{unique_suffix}:", streak_scope="http://b")
    assert [cache.remember(make_address(i)) for i in range(3)] == [1, 2, 3]
    assert other.unknown_streak() == 0  # another upstream base URL has its own streak
    cache.note_known()
    assert cache.unknown_streak() == 0 and cache.remember(make_address(9)) == 1
    redis_client.delete(cache.streak_key, *[f"t-{unique_suffix}:{make_address(i)}" for i in (0, 1, 2, 9)])
