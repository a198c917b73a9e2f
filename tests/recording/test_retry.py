"""Retry: re-route, replace links, attempts per status kind, exhausted, untouched neighbours."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from socialrec_pipeline.domain.enums import FetchStatus
from socialrec_pipeline.domain.errors import OutOfCredit, TransientProviderError
from socialrec_pipeline.domain.models import SocialUrlRecord, Token
from socialrec_pipeline.recording.retry import RetryService
from socialrec_pipeline.recording.settings import RecordingSettings
from socialrec_pipeline.routing.source_types import SourceType

from . import harness
from .conftest import make_address
from .graphs import RaisingGenerator

OLD = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)  # two hours before the test clock


def rec(
    url, status, attempts=0, *, raw=None, source_type="x_tweet", platform="x", subtype="tweet", field="twitter", at=None
):
    return SocialUrlRecord(
        url=url,
        raw_url=raw or url,
        source_field=field,
        source_type=source_type,
        source_key=None,
        platform=platform,
        subtype=subtype,
        status=status,
        attempted_at=at or OLD,
        attempts=attempts,
    )


@pytest.fixture
def env(store, redis_client, clock):
    e = harness.build(store, redis_client, clock)
    yield e
    e.server.stop()


def seed(store, clock, address, *records):
    store.tokens.write_marker(Token.of(address=address, discovered_at=OLD, symbol="S", social_urls=list(records)))


def elements(store, address):
    return {r.url: r for r in store.tokens.find_by_address(address).social_urls}


def test_retry_replaces_links_and_counts_attempts_per_status_kind(env, store, clock):
    address = make_address(1)
    tweet = "https://x.com/a/status/42"
    seed(
        store,
        clock,
        address,
        rec(tweet, "error", attempts=2),
        rec(
            "https://t.me/chan",
            "unsupported",
            source_type="telegram_channel",
            platform="tg",
            subtype="channel",
            field="telegram",
        ),
        rec(
            "https://www.tiktok.com/@someone",
            "skipped_paid",
            source_type="tiktok_profile",
            platform="tt",
            subtype=None,
            field="website",
        ),
        rec("https://x.com/a/status/43", "not_found", attempts=1, field="discord"),
    )
    before = elements(store, address)
    result = RetryService(store, env.recorder, clock=clock).run(None)
    after = elements(store, address)
    assert (after[tweet].status, after[tweet].attempts, after[tweet].attempted_at) == ("ok", 3, clock())
    assert (after["https://t.me/chan"].status, after["https://t.me/chan"].attempts) == ("unsupported", 0)
    tiktok = after["https://tiktok.com/@someone"]  # re-routed: canonical spelling replaces the old url
    assert (tiktok.status, tiktok.attempts, tiktok.source_type) == ("skipped_paid", 0, "tiktok_profile")
    assert after["https://x.com/a/status/43"] == before["https://x.com/a/status/43"]  # untouched neighbour
    assert result.urls_attempted == 3 and result.external_calls == 1
    links = store.db.token_links.count_documents({"token_address": address, "source_url": tweet})
    assert links == 2
    # Force the tweet back to `error` and retry: links are replaced, not appended.
    store.tokens.record_social_url_result(
        address,
        tweet,
        after[tweet].model_copy(update={"status": FetchStatus.ERROR, "attempted_at": clock() - timedelta(hours=2)}),
    )
    RetryService(store, env.recorder, clock=clock).run([FetchStatus.ERROR])
    assert store.db.token_links.count_documents({"token_address": address, "source_url": tweet}) == 2
    assert env.soltracker_calls() == 0


def test_error_at_max_attempts_becomes_exhausted(store, redis_client, clock):
    failing = RaisingGenerator({SourceType.X_TWEET}, TransientProviderError("503"))
    e = harness.build(store, redis_client, clock, generators=[failing])
    try:
        address = make_address(2)
        seed(store, clock, address, rec("https://x.com/a/status/1", "error", attempts=3))
        service = RetryService(store, e.recorder, clock=clock)
        service.run(None)
        assert elements(store, address)["https://x.com/a/status/1"].status == "error"
        clock.now += timedelta(hours=2)
        result = service.run(None)
        element = elements(store, address)["https://x.com/a/status/1"]
        assert (element.status, element.attempts, result.exhausted) == ("exhausted", 5, 1)
        clock.now += timedelta(hours=2)
        assert service.run(None).urls_attempted == 0  # exhausted is absorbing by default
        assert len(failing.calls) == 2
    finally:
        e.server.stop()


def test_invalid_and_exhausted_only_when_named_and_recent_urls_wait(env, store, clock):
    address = make_address(3)
    seed(
        store,
        clock,
        address,
        rec("https://x.com/a/status/7", "invalid"),
        rec("https://x.com/a/status/8", "exhausted", attempts=5, field="website"),
        rec("https://x.com/a/status/9", "error", attempts=1, field="telegram", at=clock() - timedelta(minutes=5)),
    )
    service = RetryService(store, env.recorder, clock=clock)
    assert service.run(None).urls_attempted == 0  # error is too recent; absorbing ones not asked for
    result = service.run(["invalid"])
    assert result.urls_attempted == 1
    assert elements(store, address)["https://x.com/a/status/7"].status == "ok"
    assert elements(store, address)["https://x.com/a/status/8"].status == "exhausted"
    with pytest.raises(ValueError):
        service.run(["ok"])


def test_retry_reroutes_stale_classification(env, store, clock):
    address = make_address(4)
    stale = rec("https://twitter.com/a/status/55?s=20", "unsupported", source_type="x_unknown", subtype="unknown")
    seed(store, clock, address, stale)
    assert RetryService(store, env.recorder, clock=clock).run(None).rerouted == 1
    (element,) = store.tokens.find_by_address(address).social_urls
    assert (element.url, element.source_type, element.source_key, element.status) == (
        "https://x.com/a/status/55",
        "x_tweet",
        "55",
        "ok",
    )
    assert element.raw_url == "https://twitter.com/a/status/55?s=20"


def test_out_of_credit_stops_paid_urls_for_the_rest_of_the_run(store, redis_client, clock):
    tiktok = RaisingGenerator({SourceType.TIKTOK_PROFILE}, OutOfCredit("no credit"))
    e = harness.build(
        store,
        redis_client,
        clock,
        generators=[tiktok, *harness.default_generators()],
        settings=RecordingSettings(enable_paid=True),
    )
    try:
        for i in range(3):
            seed(
                store,
                clock,
                make_address(30 + i),
                rec(
                    f"https://tiktok.com/@p{i}",
                    "skipped_paid",
                    source_type="tiktok_profile",
                    platform="tt",
                    subtype=None,
                ),
            )
        result = RetryService(store, e.recorder, clock=clock).run(["skipped_paid"])
        assert len(tiktok.calls) == 1 and result.credit_exhausted
        assert result.statuses == {"skipped_paid": 3} and result.external_calls == 0
    finally:
        e.server.stop()


def test_retry_skips_a_locked_token(env, store, clock):
    address = make_address(5)
    seed(store, clock, address, rec("https://x.com/a/status/66", "error", attempts=1))
    env.locks.try_acquire(address, "stream")
    result = RetryService(store, env.recorder, clock=clock).run(None)
    assert (result.skipped_locked, result.urls_attempted) == (1, 0)
    assert elements(store, address)["https://x.com/a/status/66"].status == "error"


def test_retry_deletes_the_urls_links_before_generating(store, redis_client, clock):
    """SPEC §8 order: gate → delete the links of (token, url) → generate. A failing attempt leaves
    none of the URL's old links behind; other URLs' links are untouched."""
    from socialrec_pipeline.recording.writer import GraphWriter

    from .graphs import routed

    failing = RaisingGenerator({SourceType.X_TWEET}, TransientProviderError("503"))
    e = harness.build(store, redis_client, clock, generators=[failing])
    try:
        address = make_address(6)
        url, neighbour = "https://x.com/a/status/61", "https://x.com/a/status/62"
        seed(store, clock, address, rec(url, "error", attempts=1), rec(neighbour, "ok", attempts=1, field="website"))
        writer = GraphWriter(store)
        for u, key in ((url, "61"), (neighbour, "62")):  # links of an earlier, partly written attempt
            writer.write(harness.tweet_graph(routed(u, SourceType.X_TWEET, key)), entry_url=u, token_address=address)
        RetryService(store, e.recorder, clock=clock).run(None)
        assert len(failing.calls) == 1
        assert (elements(store, address)[url].status, elements(store, address)[url].attempts) == ("error", 2)
        assert store.db.token_links.count_documents({"token_address": address, "source_url": url}) == 0
        assert store.db.token_links.count_documents({"token_address": address, "source_url": neighbour}) == 2
    finally:
        e.server.stop()


def test_rerouted_url_takes_its_links_along_whatever_the_outcome(store, redis_client, clock):
    """A URL whose canonical form changed: links under the old spelling go, even when the new
    attempt fails (the element no longer carries the old URL, so they would be orphans)."""
    from socialrec_pipeline.recording.writer import GraphWriter

    from .graphs import routed

    failing = RaisingGenerator({SourceType.X_TWEET}, TransientProviderError("503"))
    e = harness.build(store, redis_client, clock, generators=[failing])
    try:
        address = make_address(7)
        old = "https://twitter.com/a/status/71?s=20"
        seed(store, clock, address, rec(old, "error", attempts=1))
        GraphWriter(store).write(
            harness.tweet_graph(routed(old, SourceType.X_TWEET, "71")), entry_url=old, token_address=address
        )
        RetryService(store, e.recorder, clock=clock).run(None)
        (element,) = store.tokens.find_by_address(address).social_urls
        assert (element.url, element.status) == ("https://x.com/a/status/71", "error")
        assert store.db.token_links.count_documents({"token_address": address}) == 0
    finally:
        e.server.stop()


def test_limit_caps_the_urls_of_one_run(env, store, clock):
    address = make_address(8)
    seed(
        store,
        clock,
        address,
        *[rec(f"https://x.com/a/status/8{i}", "error", attempts=1, field=f"f{i}") for i in range(3)],
    )
    result = RetryService(store, env.recorder, clock=clock).run(None, limit=2)
    assert result.urls_attempted == 2
    assert sorted(r.status for r in store.tokens.find_by_address(address).social_urls) == ["error", "ok", "ok"]


def test_selection_is_an_oldest_first_range_on_each_status_index(store, redis_client, clock, fresh_db, mongo_uri):
    from pymongo import MongoClient, monitoring

    from socialrec_pipeline.store import Store
    from socialrec_pipeline.store.client import CODEC_OPTIONS

    class Finds(monitoring.CommandListener):
        def __init__(self):
            self.commands = []

        def started(self, event):
            if event.command_name == "find" and event.command.get("find") == "tokens":
                self.commands.append(event.command)

        def succeeded(self, event):
            pass

        def failed(self, event):
            pass

    listener = Finds()
    client = MongoClient(mongo_uri, event_listeners=[listener], tz_aware=True)
    try:
        watched = Store(client.get_database(fresh_db.name, codec_options=CODEC_OPTIONS))
        e = harness.build(watched, redis_client, clock)
        seed(watched, clock, make_address(9), rec("https://x.com/a/status/91", "error", attempts=1))
        listener.commands.clear()
        RetryService(watched, e.recorder, clock=clock).run(["error", "unsupported"])
        selection = [  # the range scans (the queue backfill's probes for missing fields ask for null)
            c
            for c in listener.commands
            if any(f in c["filter"] and c["filter"][f] is not None
                   for f in ("oldest_attempt.error", "oldest_attempt.unsupported"))
        ]
        assert sorted(list(c["filter"])[0] for c in selection) == ["oldest_attempt.error", "oldest_attempt.unsupported"]
        for command in selection:
            (field,) = command["filter"]
            assert command["filter"][field] == {"$lt": clock() - timedelta(minutes=60)}
            assert command["sort"] == {field: 1} and command["hint"] == "idx_tokens_oldest_" + field.split(".")[1]
        e.server.stop()
    finally:
        client.close()


@pytest.mark.parametrize(("urls", "limit"), [(7, 3), (10, 5), (5, 4)])
def test_every_due_url_is_attempted_within_ceil_m_over_l_runs(store, redis_client, clock, urls, limit):
    """Issue 9 item 7: fair retry. URLs that stay `unsupported` for good (no generator) are retried
    every run they are due; with limit L and M due URLs each is attempted within ceil(M/L) runs,
    however the URLs are spread over tokens and in whatever order they were written."""
    import math

    e = harness.build(store, redis_client, clock, generators=[])  # nothing can fetch them: unsupported for good
    try:
        attempted: dict[str, int] = {}
        token_of: dict[str, str] = {}
        for i in range(urls):
            address = make_address(500 + i // 2)  # two URLs per token, the first token written first
            url = f"https://x.com/a/status/{900 + i}"
            token_of[url] = address
            at = OLD - timedelta(minutes=(i * 7919) % 97)  # attempted_at in no particular order
            marker = store.tokens.find_by_address(address)
            records = (marker.social_urls if marker else []) + [rec(url, "unsupported", field=f"f{i}", at=at)]
            store.tokens.write_marker(Token.of(address=address, discovered_at=OLD, social_urls=records))
        service = RetryService(store, e.recorder, clock=clock)
        for _run in range(math.ceil(urls / limit)):
            before = {u: r.attempted_at for a in set(token_of.values()) for u, r in elements(store, a).items()}
            oldest = sorted(before.values())[:limit]  # the oldest L (which of equal times: any)
            result = service.run(["unsupported"], limit=limit)
            after = {u: r.attempted_at for a in set(token_of.values()) for u, r in elements(store, a).items()}
            done = sorted(u for u in after if after[u] != before[u])
            assert result.urls_attempted == len(done) == min(limit, urls)  # all are due again each hour
            assert sorted(before[u] for u in done) == oldest
            for u in done:
                attempted[u] = attempted.get(u, 0) + 1
            clock.now += timedelta(hours=1, minutes=1)  # the hourly schedule: every URL is due again
        assert set(attempted) == set(token_of)  # each one within ceil(M/L) runs
    finally:
        e.server.stop()


def test_a_url_finished_by_someone_else_before_we_got_the_lock_is_not_redone(env, store, clock):
    """The token is read again under its lock: selection happened before it, and another worker
    may have retried the URL in between (it would be called, and paid for, twice)."""
    address = make_address(10)
    url = "https://x.com/a/status/101"
    seed(store, clock, address, rec(url, "error", attempts=1))
    tweets = env.generators[0]
    real_try = env.locks.try_acquire

    def finished_meanwhile(addr, owner):
        done = elements(store, addr)[url].model_copy(
            update={"status": FetchStatus.OK, "attempts": 2, "attempted_at": clock()}
        )
        store.tokens.record_social_url_result(addr, url, done)
        return real_try(addr, owner)

    env.locks.try_acquire = finished_meanwhile
    result = RetryService(store, env.recorder, clock=clock).run(None)
    assert tweets.calls == [] and result.urls_attempted == 0
    assert (elements(store, address)[url].status, elements(store, address)[url].attempts) == ("ok", 2)


def test_a_rerouted_url_equal_to_a_sibling_is_merged_into_it_and_never_touches_its_links(env, store, clock):
    """Issue 9 item 6: retrying one URL never deletes another URL's links. The re-routed element
    is the same target as the sibling: no second fetch, the sibling's links keep their ids and
    `linked_at` (the as-of history), only the element's own (old-spelling) links go, and so does
    the element (issue 19: one element per target, never an `ok` element without links)."""
    from socialrec_pipeline.recording.writer import GraphWriter

    from .graphs import routed

    address = make_address(11)
    sibling_url = "https://x.com/a/status/55"
    stale = "https://twitter.com/a/status/55?s=20"  # stored under its raw spelling by an older router
    seed(
        store,
        clock,
        address,
        rec(sibling_url, "ok", attempts=1, field="twitter"),
        rec(stale, "unsupported", source_type="x_unknown", subtype="unknown", field="website"),
    )
    writer = GraphWriter(store, clock=lambda: OLD)
    writer.write(
        harness.tweet_graph(routed(sibling_url, SourceType.X_TWEET, "55")), entry_url=sibling_url, token_address=address
    )
    writer.write(harness.tweet_graph(routed(stale, SourceType.X_TWEET, "55")), entry_url=stale, token_address=address)
    sibling_links = list(store.db.token_links.find({"token_address": address, "source_url": sibling_url}).sort("_id"))
    assert len(sibling_links) == 2

    result = RetryService(store, env.recorder, clock=clock).run(["unsupported"])

    assert env.generators[0].calls == []  # the target was already fetched for the sibling
    assert (result.urls_attempted, result.same_as_sibling, result.external_calls) == (1, 1, 0)
    after = elements(store, address)
    assert set(after) == {sibling_url}  # one element per target: the sibling's
    assert (after[sibling_url].status, after[sibling_url].attempts, after[sibling_url].attempted_at) == ("ok", 1, OLD)
    assert (
        list(store.db.token_links.find({"token_address": address, "source_url": sibling_url}).sort("_id"))
        == sibling_links
    )
    assert store.db.token_links.count_documents({"token_address": address, "source_url": stale}) == 0


def test_a_rerouted_url_follows_a_failing_sibling_without_an_attempt(env, store, clock):
    address = make_address(12)
    sibling_url = "https://x.com/a/status/56"
    stale = "https://twitter.com/a/status/56?s=20"
    seed(
        store,
        clock,
        address,
        rec(sibling_url, "not_found", attempts=1),
        rec(stale, "error", attempts=2, field="website"),
    )
    RetryService(store, env.recorder, clock=clock).run(["error"])
    after = elements(store, address)
    assert set(after) == {sibling_url}
    assert (after[sibling_url].status, after[sibling_url].attempts) == ("not_found", 1)
    assert env.generators[0].calls == []


def test_a_sibling_retried_earlier_in_the_same_run_passes_on_its_new_outcome(env, store, clock):
    address = make_address(13)
    sibling_url = "https://x.com/a/status/57"
    stale = "https://twitter.com/a/status/57?s=20"
    seed(
        store,
        clock,
        address,
        rec(sibling_url, "error", attempts=1, at=OLD - timedelta(minutes=1)),  # older: retried first
        rec(stale, "error", attempts=1, field="website"),
    )
    result = RetryService(store, env.recorder, clock=clock).run(["error"])
    after = elements(store, address)
    assert (result.urls_attempted, result.same_as_sibling) == (2, 1)
    assert env.generators[0].calls == [sibling_url]  # fetched once, for the sibling
    assert set(after) == {sibling_url} and (after[sibling_url].status, after[sibling_url].attempts) == ("ok", 2)


def test_two_stored_spellings_of_one_profile_are_merged_with_one_call(store, redis_client, clock):
    """Issue 19 defect 2: `twitter.com/kolguy` and `mobile.twitter.com/kolguy` (both `error`, stored
    by an older router) now route to `x.com/kolguy`. Retried in one run with the platform failing
    every call after the first: one call, one element `x.com/kolguy` `ok` with its links intact.
    Working from the token as read before the first URL, the second URL deleted the first one's
    links, called again (and failed), and left `x.com/kolguy` `ok` with no links."""
    from socialrec_pipeline.providers.x import TwitterApiClient, XGenerator
    from socialrec_pipeline.sandbox.fixture_server import FixtureServer, Reply
    from socialrec_pipeline.sandbox.platforms import x as xfix

    x_server = FixtureServer().start()
    users = xfix.demo_fixtures()
    users.register(x_server)
    served = []

    def user_info(request):
        served.append(request.param("userName"))
        if len(served) > 1:
            return Reply.json({"status": "error", "msg": "upstream overloaded"}, status=503)
        return users._user(request)

    x_server.route("GET", "/twitter/user/info", user_info)
    env = harness.build(store, redis_client, clock, generators=[XGenerator(TwitterApiClient(x_server.url, "k"))])
    try:
        address = make_address(21)
        profile = dict(source_type="x_profile", subtype=None, field="twitter")
        seed(
            store,
            clock,
            address,
            rec("https://twitter.com/kolguy", "error", attempts=1, at=OLD - timedelta(minutes=1), **profile),
            rec("https://mobile.twitter.com/kolguy", "error", attempts=1, **profile),
        )

        result = RetryService(store, env.recorder, clock=clock).run(["error"])

        assert served == ["kolguy"]  # one platform call for the one target
        after = elements(store, address)
        assert set(after) == {"https://x.com/kolguy"}  # the two spellings are one element now
        assert (after["https://x.com/kolguy"].status, after["https://x.com/kolguy"].attempts) == ("ok", 2)
        links = store.db.token_links.count_documents({"token_address": address, "source_url": "https://x.com/kolguy"})
        assert links >= 1
        assert store.db.token_links.count_documents({"token_address": address}) == links
        assert (result.external_calls, result.same_as_sibling) == (1, 1)
    finally:
        env.server.stop()
        x_server.stop()


def test_a_retry_run_brings_markers_from_before_the_queue_into_it_by_itself(env, store, clock):
    """Issue 19 defect 9: no upgrade step to remember. A marker without the queue field and one
    written by the previous version (a key only for the statuses it held) are retried by the first
    run, and afterwards every token's queue is exact."""
    from socialrec_pipeline.store import integrity

    bare, partial = make_address(22), make_address(23)
    seed(store, clock, bare, rec("https://x.com/a/status/221", "error", attempts=1))
    seed(store, clock, partial, rec("https://x.com/a/status/231", "unsupported"))
    store.db.tokens.update_one({"address": bare}, {"$unset": {"oldest_attempt": ""}})
    store.db.tokens.update_one({"address": partial}, {"$set": {"oldest_attempt": {"unsupported": OLD}}})

    result = RetryService(store, env.recorder, clock=clock).run(["error"])

    assert result.queue_backfilled >= 2
    assert elements(store, bare)["https://x.com/a/status/221"].status == "ok"
    check = integrity.check_retry_queue_exact(store.db)
    assert check.passed, check.summary()
