"""TokenRecorder end to end: fixture upstream over HTTP, real Redis, real Mongo."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from datetime import timedelta
from pathlib import Path

import pytest
import redis as redis_lib

from socialrec_pipeline.domain.enums import FetchStatus
from socialrec_pipeline.domain.errors import OutOfCredit, TargetNotFound, TransientProviderError
from socialrec_pipeline.domain.events import TokenFlowEvent
from socialrec_pipeline.domain.graph import GraphGroup, SocialObjectGraph
from socialrec_pipeline.recording.locks import LockNotHeld, TokenLocks
from socialrec_pipeline.recording.processor import RecordOutcome
from socialrec_pipeline.recording.settings import RecordingSettings
from socialrec_pipeline.routing.source_types import SourceType
from socialrec_pipeline.sandbox.fixture_server import Reply
from socialrec_pipeline.sandbox.soltracker import upstream_token

from . import harness
from .conftest import make_address
from .graphs import FixedGenerator, RaisingGenerator

ROOT = Path(__file__).resolve().parents[2]


def event(address: str, af: int = 6, first="2026-11-29T21:14:03.512Z", symbol=None) -> TokenFlowEvent:
    body = {"tokenAddress": address, "totalInvestedAlphaFinders": af, "firstFlowTimestamp": first}
    if symbol:
        body["symbol"] = symbol
    return TokenFlowEvent.model_validate(body)


@pytest.fixture
def h(store, redis_client, clock):
    env = harness.build(store, redis_client, clock)
    yield env
    env.server.stop()
    env.client.close()


def test_records_every_url_and_writes_the_marker(h, store, address):
    h.upstream.put(upstream_token(
        address, symbol="POP", website="https://popcat.example/",
        twitter="https://twitter.com/popcat/status/123?s=20", telegram="https://t.me/popcat_portal",
        discord="x.com/popcat/status/123",  # the same tweet again: dropped as a duplicate
    ))
    result = h.recorder.record_token(event(address), owner="w1")
    assert result.outcome is RecordOutcome.RECORDED and result.upstream_calls == 1
    token = store.tokens.find_by_address(address)
    by_field = {u.source_field: u for u in token.social_urls}
    assert set(by_field) == {"website", "twitter", "telegram"}
    tw = by_field["twitter"]
    assert (tw.url, tw.raw_url, tw.source_type, tw.source_key, tw.platform, tw.subtype, tw.status, tw.attempts) == (
        "https://x.com/popcat/status/123",
        "https://twitter.com/popcat/status/123?s=20",
        "x_tweet",
        "123",
        "x",
        "tweet",
        "ok",
        1,
    )
    assert by_field["website"].status == "ok" and by_field["website"].attempts == 0  # no external call
    assert by_field["telegram"].status == "unsupported" and by_field["telegram"].attempts == 0
    assert token.symbol == "POP"
    assert token.first_transfer_at.isoformat() == "2026-11-29T21:14:03.512000+00:00"
    assert token.discovered_at == h.recorder.clock()
    links = store.links.find_by_token(address)
    assert {link.source_url for link in links} == {"https://x.com/popcat/status/123", "https://popcat.example"}
    assert h.locks.owner_of(address) is None  # released
    # Idempotent: the next event finds the marker and asks nobody.
    again = h.recorder.record_token(event(address), owner="w2")
    assert again.outcome is RecordOutcome.ALREADY_RECORDED and h.soltracker_calls() == 1


def test_below_threshold_does_nothing(h, address):
    assert h.recorder.record_token(event(address, af=4), owner="w").outcome is RecordOutcome.BELOW_THRESHOLD
    assert h.soltracker_calls() == 0


def test_lock_contention_skips_quietly(h, store, address):
    h.upstream.put(upstream_token(address, twitter="https://x.com/a/status/1"))
    assert h.locks.try_acquire(address, "someone-else")
    result = h.recorder.record_token(event(address), owner="me")
    assert result.outcome is RecordOutcome.LOCKED
    assert h.soltracker_calls() == 0 and not store.tokens.exists(address)
    assert h.locks.owner_of(address) == "someone-else"


def test_redis_on_a_dead_port_raises_instead_of_skipping(store, address):
    dead = redis_lib.Redis(host="127.0.0.1", port=1, socket_connect_timeout=0.5, socket_timeout=0.5)
    env = harness.build(store, dead)
    try:
        env.upstream.put(upstream_token(address, twitter="https://x.com/a/status/1"))
        with pytest.raises(redis_lib.RedisError):
            env.recorder.record_token(event(address), owner="w")
        assert env.soltracker_calls() == 0 and not store.tokens.exists(address)
    finally:
        env.server.stop()


def test_unknown_token_twice_costs_one_upstream_call(h, store, address):
    first = h.recorder.record_token(event(address), owner="w")
    second = h.recorder.record_token(event(address), owner="w")
    assert first.outcome is second.outcome is RecordOutcome.UNKNOWN_TOKEN
    assert h.soltracker_calls() == 1 and not store.tokens.exists(address)
    assert h.locks.owner_of(address) is None


@pytest.mark.parametrize(
    "reply",
    [
        Reply.json({"error": "boom"}, status=500),
        Reply.html("<html>Bad gateway</html>", status=200),
        Reply.json({"address": "whatever", "totalInvestedAlphaFinders": "six"}),  # wrong type
        Reply.json({"symbol": "X"}),  # missing required fields
        Reply.json({"message": "no"}, status=401),
    ],
    ids=["500", "html", "wrong-type", "missing-field", "401"],
)
def test_upstream_failure_leaves_no_marker_and_does_not_raise(h, store, address, reply):
    h.upstream.put(upstream_token(address, twitter="https://x.com/a/status/1"))
    h.upstream.fail_with(reply)
    result = h.recorder.record_token(event(address), owner="w")
    assert result.outcome is RecordOutcome.UPSTREAM_FAILED
    assert "k-secret" not in result.reason
    assert not store.tokens.exists(address) and h.locks.owner_of(address) is None
    assert store.db.token_links.count_documents({}) == 0
    # Not cached as unknown: the next event asks again and records.
    assert h.recorder.record_token(event(address), owner="w").outcome is RecordOutcome.RECORDED


def test_upstream_timeout_is_upstream_failed(store, redis_client, address):
    env = harness.build(store, redis_client, timeout_s=0.3)
    try:

        def slow(request):
            time.sleep(1.0)
            return Reply.json({})

        env.server.route("GET", f"/api/v1/tokens/{address}", slow)
        result = env.recorder.record_token(event(address), owner="w")
        assert result.outcome is RecordOutcome.UPSTREAM_FAILED and "timed out" in result.reason
        assert not store.tokens.exists(address)
    finally:
        env.server.stop()


def test_junk_socials_each_get_a_status_and_the_token_its_marker(h, store, address):
    junk = "x" * 10_000
    h.upstream.put(upstream_token(address, website="N/A", twitter="popcat", telegram=junk, discord="   "))
    result = h.recorder.record_token(event(address), owner="w")
    assert result.outcome is RecordOutcome.RECORDED
    records = {u.source_field: u for u in store.tokens.find_by_address(address).social_urls}
    assert set(records) == {"website", "twitter", "telegram"}
    for record in records.values():
        assert record.status == "unsupported" and record.source_type is None and record.attempts == 0
    assert records["telegram"].url == junk and records["website"].url == "N/A"


def test_unroutable_text_is_stripped_before_it_becomes_the_dedup_key(h, store, address):
    # " N/A" and "N/A" are the same junk: one entry, stored stripped; raw_url keeps what was written.
    h.upstream.put(upstream_token(address, website=" N/A", twitter="N/A", telegram="\tcoming\n  soon  "))
    result = h.recorder.record_token(event(address), owner="w")
    assert result.outcome is RecordOutcome.RECORDED
    records = store.tokens.find_by_address(address).social_urls
    assert [(r.url, r.raw_url, r.source_field) for r in records] == [
        ("N/A", " N/A", "website"),
        ("coming soon", "\tcoming\n  soon  ", "telegram"),
    ]
    assert all(r.status == "unsupported" and r.attempts == 0 for r in records)


def test_one_failing_url_never_stops_the_others(store, redis_client, address):
    gens = [
        RaisingGenerator({SourceType.X_TWEET}, TargetNotFound("deleted tweet")),
        FixedGenerator(
            {SourceType.WEBSITE},
            graph=SocialObjectGraph(root_ref="missing", groups=[GraphGroup(ref="a")]),
            external=False,
        ),
        RaisingGenerator({SourceType.TELEGRAM_CHANNEL}, RuntimeError("generator bug")),
        RaisingGenerator({SourceType.GITHUB_REPO}, TransientProviderError("timeout", external_call_made=True)),
    ]
    env = harness.build(store, redis_client, generators=gens)
    try:
        env.upstream.put(
            upstream_token(
                address,
                website="https://site.example",
                twitter="https://x.com/a/status/9",
                telegram="https://t.me/chan",
                discord="https://github.com/o/r",
            )
        )
        result = env.recorder.record_token(event(address), owner="w")
        assert result.outcome is RecordOutcome.RECORDED
        records = {u.source_field: (u.status, u.attempts) for u in store.tokens.find_by_address(address).social_urls}
        assert records == {
            "twitter": ("not_found", 1),
            "website": ("invalid", 0),
            "telegram": ("error", 1),
            "discord": ("error", 1),
        }
        assert store.db.contents.count_documents({}) == 0
    finally:
        env.server.stop()


def test_paid_off_is_skipped_without_a_call(store, redis_client, address):
    tiktok = FixedGenerator({SourceType.TIKTOK_VIDEO, SourceType.TIKTOK_PROFILE}, graph=None)
    env = harness.build(store, redis_client, generators=[tiktok])
    try:
        env.upstream.put(upstream_token(address, twitter="https://www.tiktok.com/@someone"))
        env.recorder.record_token(event(address), owner="w")
        (record,) = store.tokens.find_by_address(address).social_urls
        assert (record.status, record.attempts, record.platform) == ("skipped_paid", 0, "tt")
        assert tiktok.calls == []
    finally:
        env.server.stop()


def test_out_of_credit_skips_the_remaining_paid_urls_of_the_token(store, redis_client, address):
    tiktok = RaisingGenerator({SourceType.TIKTOK_PROFILE}, OutOfCredit("credit spent"))
    instagram = FixedGenerator({SourceType.INSTAGRAM_PROFILE}, graph=None)
    env = harness.build(
        store,
        redis_client,
        generators=[tiktok, instagram, *harness.default_generators()],
        settings=RecordingSettings(enable_paid=True),
    )
    try:
        env.upstream.put(
            upstream_token(
                address,
                website="https://www.tiktok.com/@one",
                twitter="https://instagram.com/two",
                telegram="https://x.com/a/status/5",
            )
        )
        env.recorder.record_token(event(address), owner="w")
        records = {u.source_field: (u.status, u.attempts) for u in store.tokens.find_by_address(address).social_urls}
        assert records == {"website": ("skipped_paid", 0), "twitter": ("skipped_paid", 0), "telegram": ("ok", 1)}
        assert instagram.calls == []
    finally:
        env.server.stop()


def test_marker_is_written_last_even_across_a_crash(store, redis_client, mongo_uri, redis_url, tmp_path, clock):
    address = make_address()
    prefix = f"t-{uuid.uuid4().hex[:8]}:"
    env = harness.build(store, redis_client, clock, prefix=prefix)
    try:
        env.upstream.put(
            upstream_token(address, website="https://x.com/a/status/77", twitter="https://blocking.example")
        )
        reached = tmp_path / "reached"
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.recording._crash_worker",
                mongo_uri,
                store.db.name,
                redis_url,
                prefix,
                env.server.url,
                address,
                str(reached),
            ],
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        try:
            deadline = time.monotonic() + 60
            while not reached.exists():
                assert proc.poll() is None, "worker exited early"
                assert time.monotonic() < deadline, "worker never reached the blocking URL"
                time.sleep(0.05)
            # The first URL is fully written, the marker is not.
            assert store.db.contents.count_documents({"platform_key": "77"}) == 1
            assert store.db.token_links.count_documents({"token_address": address}) == 2
            assert not store.tokens.exists(address)
        finally:
            proc.kill()
            proc.wait()
        assert not store.tokens.exists(address)
        time.sleep(1.2)  # the dead worker's lock (ttl 1 s) expires; nobody extends it any more
        result = env.recorder.record_token(event(address), owner="next-worker")
        assert result.outcome is RecordOutcome.RECORDED
        assert {u.status for u in store.tokens.find_by_address(address).social_urls} == {"ok"}
        # Re-running the crashed URL reused its row and replaced (did not duplicate) its links.
        assert store.db.contents.count_documents({"platform_key": "77"}) == 1
        assert (
            store.db.token_links.count_documents({"token_address": address, "source_url": "https://x.com/a/status/77"})
            == 2
        )
    finally:
        env.server.stop()


def test_prepare_and_finish_can_run_as_separate_steps(h, store, address):
    """The Dagster shape: prepare in one step, URLs in others (lock kept by owner), finish last."""
    h.upstream.put(upstream_token(address, twitter="https://x.com/a/status/3", website="https://w.example"))
    prepared = h.recorder.prepare(address, None, "SYM", owner="run-42")
    assert [p.source_field for p in prepared.planned] == ["website", "twitter"]
    other_locks = TokenLocks(h.locks.redis, ttl_s=h.locks.ttl_s, prefix=h.locks.prefix)  # "another process"
    with other_locks.held(address, "run-42"):
        results = [h.recorder.record_one_url(prepared, p) for p in prepared.planned]
    assert h.locks.owner_of(address) == "run-42"
    result = h.recorder.finish(prepared, results)
    assert result.marker_created and result.statuses == {"ok": 2}
    assert h.locks.owner_of(address) is None
    assert store.tokens.find_by_address(address).symbol == "SYM"


def test_a_generator_returning_something_else_than_a_graph_is_invalid(store, redis_client, address):
    gens = [
        FixedGenerator({SourceType.X_TWEET}, graph=None),
        FixedGenerator({SourceType.WEBSITE}, graph={"groups": []}, external=False),
    ]
    env = harness.build(store, redis_client, generators=gens)
    try:
        env.upstream.put(upstream_token(address, website="https://site.example", twitter="https://x.com/a/status/9"))
        assert env.recorder.record_token(event(address), owner="w").outcome is RecordOutcome.RECORDED
        records = {u.source_field: u.status for u in store.tokens.find_by_address(address).social_urls}
        assert records == {"website": "invalid", "twitter": "invalid"}
    finally:
        env.server.stop()


def test_first_transfer_at_comes_from_the_event(h, store, address):
    h.upstream.put(upstream_token(address, twitter="https://x.com/a/status/1", first_flow="2026-11-01T00:00:00Z"))
    h.recorder.record_token(event(address, first="2026-11-29T08:00:00Z"), owner="w")
    assert store.tokens.find_by_address(address).first_transfer_at.isoformat() == "2026-11-29T08:00:00+00:00"
    # The marker is the one holder of the time (it may move earlier later): links carry no copy.
    assert all(link.first_transfer_at is None for link in store.links.find_by_token(address))


def test_a_repeated_marker_write_keeps_discovered_at(h, store, address, clock):
    """The Dagster marker step may run twice (retry policy): discovered_at is set on insert only."""
    h.upstream.put(upstream_token(address, twitter="https://x.com/a/status/2"))
    first_seen = clock()
    prepared = h.recorder.prepare(address, None, None, owner="run-1")
    results = [h.recorder.record_one_url(prepared, p) for p in prepared.planned]
    assert h.recorder.finish(prepared, results).marker_created
    clock.now += timedelta(hours=3)
    assert h.locks.try_acquire(address, "run-1")
    assert not h.recorder.finish(prepared, results).marker_created
    assert store.tokens.find_by_address(address).discovered_at == first_seen


def test_re_recording_one_url_replaces_its_links(h, store, address):
    h.upstream.put(upstream_token(address, twitter="https://x.com/a/status/4"))
    prepared = h.recorder.prepare(address, None, None, owner="run-2")
    (planned,) = prepared.planned
    for _ in range(2):
        assert h.recorder.record_one_url(prepared, planned).status is FetchStatus.OK
    assert store.db.token_links.count_documents({"token_address": address}) == 2
    assert store.db.contents.count_documents({}) == 1 and store.db.accounts.count_documents({}) == 1
    h.recorder.finish(prepared, [])


def test_losing_the_lock_mid_work_leaves_no_marker(store, redis_client, address):
    """The keep-alive found the lock gone (expired, taken over): the work must not be sealed by a
    marker written outside the lock. The next event records the token again."""
    locks = TokenLocks(redis_client, ttl_s=0.6, prefix=f"t-{uuid.uuid4().hex[:8]}:social-record:")

    def steal(routed):
        locks.redis.set(locks.key(address), "another-worker", px=60_000)
        time.sleep(0.5)  # the keep-alive ticks every ttl/3 = 0.2 s
        return harness.tweet_graph(routed)

    env = harness.build(store, redis_client, generators=[FixedGenerator({SourceType.X_TWEET}, build=steal)])
    env.recorder.locks = env.locks = locks
    try:
        env.upstream.put(upstream_token(address, twitter="https://x.com/a/status/5"))
        with pytest.raises(LockNotHeld):
            env.recorder.record_token(event(address), owner="me")
        assert not store.tokens.exists(address)
        assert env.locks.owner_of(address) == "another-worker"  # never released by us
    finally:
        env.server.stop()
