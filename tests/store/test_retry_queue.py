"""The derived retry queue (`tokens.oldest_attempt`, SPEC §8) is exact after every write of
`social_urls`, the integrity check proves it on every token, and a marker written before the
queue existed is brought up to date by the store itself."""

from __future__ import annotations

import random

from socialrec_pipeline.domain.enums import RETRY_PARTITIONS, FetchStatus
from socialrec_pipeline.domain.models import SocialUrlRecord, Token
from socialrec_pipeline.store import Store, integrity
from socialrec_pipeline.store.tokens import NO_ATTEMPT
from tests.store.conftest import T0, h, unique

STATUSES = list(FetchStatus)


def _record(url: str, status: FetchStatus, at) -> SocialUrlRecord:
    return SocialUrlRecord(url=url, raw_url=url, status=status, attempted_at=at, attempts=1)


def _exact(db) -> integrity.CheckOutcome:
    return integrity.check_retry_queue_exact(db)


def test_every_write_of_the_urls_leaves_the_queue_exact(empty_store):
    """Markers, per-URL results (same url and renamed), refused renames and merges, in a random
    order over a few tokens: after each write the check finds every token's queue exact."""
    store, rng = empty_store, random.Random(19)
    addresses = [unique("So") for _ in range(3)]
    for address in addresses:
        urls = [f"https://x.com/{address}/status/{i}" for i in range(4)]
        store.tokens.write_marker(Token.of(address=address, discovered_at=T0, social_urls=[
            _record(u, rng.choice(STATUSES), h(-rng.randint(1, 50))) for u in urls]))
    writes = 0
    for step in range(60):
        address = rng.choice(addresses)
        held = [r.url for r in store.tokens.find_by_address(address).social_urls]
        action = rng.random()
        if action < 0.1:  # the marker written again (a manual re-record)
            store.tokens.write_marker(Token.of(address=address, discovered_at=T0, social_urls=[
                _record(u, rng.choice(STATUSES), h(step)) for u in held]))
        elif action < 0.75 or len(held) < 2:  # a per-URL result, sometimes under a new url
            url = rng.choice(held)
            new_url = rng.choice([url, url, f"{url}-moved{step}", rng.choice(held)])
            store.tokens.record_social_url_result(address, url, _record(new_url, rng.choice(STATUSES), h(step)))
        else:  # two spellings of one target merged
            url, into = rng.sample(held, 2)
            assert store.tokens.merge_social_url(address, url, into=into)
        writes += 1
        outcome = _exact(store.db)
        assert outcome.passed, (step, outcome.summary(), outcome.sample_ids)
    assert writes == 60 and outcome.counts["scanned"] == len(addresses)


def test_the_check_names_a_stale_and_a_missing_queue(empty_store):
    store = empty_store
    ok, stale, missing = (unique("So") for _ in range(3))
    for address in (ok, stale, missing):
        store.tokens.write_marker(Token.of(address=address, discovered_at=T0, social_urls=[
            _record(f"https://x.com/{address}", FetchStatus.ERROR, h(-2))]))
    assert _exact(store.db).passed
    store.db.tokens.update_one({"address": stale}, {"$set": {"oldest_attempt.error": h(-5)}})
    store.db.tokens.update_one({"address": missing}, {"$unset": {"oldest_attempt": ""}})

    outcome = _exact(store.db)

    assert not outcome.passed and outcome.violations == 2
    assert sorted(outcome.sample_ids) == sorted([stale, missing])
    assert (outcome.counts["wrong"], outcome.counts["missing"], outcome.counts["scanned"]) == (1, 1, 3)


def test_markers_from_before_the_queue_are_brought_up_to_date_through_its_indexes(empty_store):
    """A marker without the field and one written by the previous version (a key only for the
    statuses it held) are both found and rewritten; an up-to-date database costs no write."""
    store = empty_store
    bare, partial, current = (unique("So") for _ in range(3))
    for address in (bare, partial, current):
        store.tokens.write_marker(Token.of(address=address, discovered_at=T0, social_urls=[
            _record(f"https://x.com/{address}/1", FetchStatus.UNSUPPORTED, h(-3)),
            _record(f"https://x.com/{address}/2", FetchStatus.OK, h(-1))]))
    store.db.tokens.update_one({"address": bare}, {"$unset": {"oldest_attempt": ""}})
    store.db.tokens.update_one({"address": partial}, {"$set": {"oldest_attempt": {"unsupported": h(-3)}}})
    assert _exact(store.db).counts["violations"] == 2
    before = {t.address for t in store.tokens.find_by_url_statuses([FetchStatus.UNSUPPORTED], h(0), 10)}
    assert before == {partial, current}  # the selection cannot see `bare`

    assert store.tokens.backfill_oldest_attempt(batch=1) == 2

    assert _exact(store.db).passed
    queue = store.db.tokens.find_one({"address": bare})["oldest_attempt"]
    assert queue == {**{s.value: NO_ATTEMPT for s in RETRY_PARTITIONS}, "unsupported": h(-3)}
    due = store.tokens.find_by_url_statuses([FetchStatus.UNSUPPORTED], h(0), 10)
    assert sorted(t.address for t in due) == sorted([bare, partial, current])
    assert store.tokens.backfill_oldest_attempt() == 0


def test_a_marker_that_runs_through_every_clean_store_path_passes_the_check(empty_store):
    store = Store(empty_store.db)
    address = unique("So")
    store.tokens.write_marker(Token.of(address=address, discovered_at=T0))
    assert _exact(store.db).passed
    assert store.db.tokens.find_one({"address": address})["oldest_attempt"] == {
        s.value: NO_ATTEMPT for s in RETRY_PARTITIONS
    }


def test_a_write_landing_between_the_read_and_the_update_is_neither_lost_nor_left_out_of_the_queue(empty_store):
    """`_change_urls` is a compare-and-set on the array it read: when another write lands in
    between, it reads again, so neither that write nor the queue derived from both is lost."""
    store = empty_store
    address = unique("So")
    a, b = (f"https://x.com/{address}/{i}" for i in (1, 2))
    store.tokens.write_marker(Token.of(address=address, discovered_at=T0, social_urls=[
        _record(a, FetchStatus.ERROR, h(-3)), _record(b, FetchStatus.ERROR, h(-1))]))
    rounds = []

    def a_becomes_ok(records):
        rounds.append([r.status for r in records])
        if len(rounds) == 1:  # someone else writes b in between
            assert store.tokens.record_social_url_result(address, b, _record(b, FetchStatus.UNSUPPORTED, h(1)))
        after = [_record(a, FetchStatus.OK, h(2)) if r.url == a else r for r in records]
        return after, {"$set": {"social_urls.$[t]": after[0].to_document()}}, [{"t.url": a}]

    assert store.tokens._change_urls(address, a_becomes_ok)

    assert rounds == [[FetchStatus.ERROR, FetchStatus.ERROR], [FetchStatus.ERROR, FetchStatus.UNSUPPORTED]]
    assert [r.status for r in store.tokens.find_by_address(address).social_urls] == [
        FetchStatus.OK, FetchStatus.UNSUPPORTED]
    queue = store.db.tokens.find_one({"address": address})["oldest_attempt"]
    assert (queue["error"], queue["unsupported"]) == (NO_ATTEMPT, h(1))
    assert _exact(store.db).passed
