"""tokens: the marker write, existence checks, the retry selection and per-URL results."""

from __future__ import annotations

from bson.codec_options import CodecOptions
from bson.raw_bson import RawBSONDocument

from socialrec_pipeline.domain.enums import RETRY_PARTITIONS, RETRYABLE, ContentSubtype, FetchStatus, Platform
from socialrec_pipeline.domain.models import SocialUrlRecord, Token
from socialrec_pipeline.store.tokens import NO_ATTEMPT
from tests.store.conftest import T0, h, unique


def record(url: str, status: FetchStatus, attempted_at=T0, attempts: int = 0) -> SocialUrlRecord:
    return SocialUrlRecord(
        url=url, raw_url=url.removeprefix("https://"), source_field="twitter", source_type="x_tweet",
        source_key="1", platform=Platform.X, subtype=ContentSubtype.TWEET, status=status,
        attempted_at=attempted_at, attempts=attempts,
    )


def token(address: str | None = None, records=(), **fields) -> Token:
    return Token.of(address=address or unique("So"), discovered_at=fields.pop("discovered_at", T0),
                    social_urls=records, **fields)


def test_write_marker_creates_once_and_keeps_insert_only_fields(store):
    first = token(symbol="KOL", first_transfer_at=h(-1), fingerprints=["domain:kol.fun"], web={"title": "kol"},
                  records=[record("https://x.com/a/status/1", FetchStatus.ERROR)])
    assert store.tokens.write_marker(first) is True
    again = token(first.address, discovered_at=h(5), fingerprints=["domain:other"], web={"title": "other"},
                  records=[record("https://x.com/a/status/1", FetchStatus.OK)])
    assert store.tokens.write_marker(again) is False
    stored = store.tokens.find_by_address(first.address)
    assert stored.id == first.id
    assert stored.discovered_at == T0
    assert stored.fingerprints == ["domain:kol.fun"] and stored.web == {"title": "kol"}
    assert stored.symbol == "KOL" and stored.first_transfer_at == h(-1)  # unknown values do not erase
    assert stored.social_urls[0].status == FetchStatus.OK  # the newest recording's results
    assert store.db.tokens.count_documents({"address": first.address}) == 1


def test_exists_and_find_existing_addresses(store):
    present = [token() for _ in range(3)]
    for t in present:
        store.tokens.write_marker(t)
    absent = [unique("So") for _ in range(2)]
    wanted = [t.address for t in present] + absent
    assert store.tokens.find_existing_addresses(wanted) == {t.address for t in present}
    assert store.tokens.find_existing_addresses([]) == set()
    assert store.tokens.exists(present[0].address) and not store.tokens.exists(absent[0])
    assert store.tokens.find_by_address(absent[0]) is None


def test_find_by_url_statuses_checks_status_and_cutoff_on_the_same_url(empty_store):
    tokens = empty_store.tokens
    due = token(records=[record("https://x.com/a/status/1", FetchStatus.ERROR, attempted_at=h(-3)),
                         record("https://x.com/a/status/2", FetchStatus.OK, attempted_at=h(-3))])
    # An old `ok` and a fresh `error`: no single URL is both retryable and old enough.
    mixed = token(records=[record("https://x.com/b/status/1", FetchStatus.OK, attempted_at=h(-3)),
                           record("https://x.com/b/status/2", FetchStatus.ERROR, attempted_at=h(0))])
    absorbing = token(records=[record("https://x.com/c/status/1", FetchStatus.EXHAUSTED, attempted_at=h(-3))])
    paid = token(records=[record("https://x.com/d/status/1", FetchStatus.SKIPPED_PAID, attempted_at=h(-2)),
                          record("https://x.com/d/status/2", FetchStatus.UNSUPPORTED, attempted_at=h(-2)),
                          record("https://x.com/d/status/3", FetchStatus.ERROR, attempted_at=h(-2))])
    for t in (due, mixed, absorbing, paid):
        tokens.write_marker(t)
    found = tokens.find_by_url_statuses(RETRYABLE, attempted_before=h(-1), limit=10)
    assert sorted(t.address for t in found) == sorted([due.address, paid.address])  # each once
    assert len(tokens.find_by_url_statuses(RETRYABLE, attempted_before=h(-1), limit=1)) == 1
    assert [t.address for t in tokens.find_by_url_statuses([FetchStatus.EXHAUSTED], h(-1), 10)] == [absorbing.address]
    errors = tokens.find_by_url_statuses([FetchStatus.ERROR], None, 10)
    assert {t.address for t in errors} == {due.address, mixed.address, paid.address}
    assert tokens.find_by_url_statuses([], h(0), 10) == []


def _raw(store, address: str) -> RawBSONDocument:
    raw_tokens = store.db.tokens.with_options(codec_options=CodecOptions(document_class=RawBSONDocument))
    return raw_tokens.find_one({"address": address})


def test_record_social_url_result_changes_one_element_and_nothing_else(store):
    urls = [f"https://x.com/a/status/{i}" for i in range(3)]
    t = token(records=[record(u, FetchStatus.ERROR, attempted_at=h(-3), attempts=1) for u in urls])
    store.tokens.write_marker(t)
    before = _raw(store, t.address)

    result = record(urls[1], FetchStatus.OK, attempted_at=h(0), attempts=2)
    assert store.tokens.record_social_url_result(t.address, urls[1], result) is True

    after = _raw(store, t.address)
    assert [e.raw for i, e in enumerate(after["social_urls"]) if i != 1] == [
        e.raw for i, e in enumerate(before["social_urls"]) if i != 1
    ]
    assert list(after) == list(before)
    for key in before:
        if key != "social_urls":
            assert after[key] == before[key], key
    assert store.tokens.find_by_address(t.address).social_url(urls[1]) == result


def test_record_social_url_result_for_an_unknown_url_or_token_changes_nothing(store):
    t = token(records=[record("https://x.com/a/status/1", FetchStatus.ERROR)])
    store.tokens.write_marker(t)
    before = _raw(store, t.address).raw
    other = record("https://x.com/z/status/9", FetchStatus.OK)
    assert store.tokens.record_social_url_result(t.address, other.url, other) is False
    assert store.tokens.record_social_url_result(unique("So"), other.url, other) is False
    assert _raw(store, t.address).raw == before


def test_find_recently_discovered_is_newest_first(empty_store):
    for i in range(4):
        empty_store.tokens.write_marker(token(discovered_at=h(i)))
    assert [t.discovered_at for t in empty_store.tokens.find_recently_discovered(limit=2)] == [h(3), h(2)]


def test_record_social_url_result_can_move_the_element_to_its_new_canonical_url(store):
    """Retry re-routes old URLs: the result may carry a new url; every field lands, in one write."""
    old, new = "https://x.com/a/status/1?s=20", "https://x.com/a/status/1"
    t = token(records=[record(old, FetchStatus.ERROR, attempted_at=h(-3), attempts=1),
                       record("https://x.com/b/status/2", FetchStatus.OK)])
    store.tokens.write_marker(t)
    result = record(new, FetchStatus.OK, attempted_at=h(0), attempts=2)
    assert store.tokens.record_social_url_result(t.address, old, result) is True
    stored = store.tokens.find_by_address(t.address)
    assert stored.social_url(new) == result and stored.social_url(old) is None
    assert [r.url for r in stored.social_urls] == [new, "https://x.com/b/status/2"]


def test_record_social_url_result_refuses_a_url_another_element_already_holds(store):
    a, b = "https://x.com/a/status/1", "https://x.com/b/status/2"
    t = token(records=[record(a, FetchStatus.ERROR), record(b, FetchStatus.OK)])
    store.tokens.write_marker(t)
    before = _raw(store, t.address).raw
    clash = record(b, FetchStatus.NOT_FOUND, attempted_at=h(1))
    assert store.tokens.record_social_url_result(t.address, a, clash) is False
    assert _raw(store, t.address).raw == before
    assert [r.url for r in store.tokens.find_by_address(t.address).social_urls] == [a, b]


def test_the_retry_queue_field_follows_every_write_of_the_urls(store):
    """`oldest_attempt.<status>` is derived from social_urls by the marker and by each per-URL result,
    and a marker from before the field existed gets it from the one-off backfill."""
    a, b, c = (f"https://x.com/a/status/{i}" for i in (71, 72, 73))
    marker = token(records=[record(a, FetchStatus.ERROR, h(-3)), record(b, FetchStatus.ERROR, h(-1)),
                            record(c, FetchStatus.UNSUPPORTED, h(-2))])
    store.tokens.write_marker(marker)

    def stored():  # the partitions that hold a URL (the others hold NO_ATTEMPT)
        queue = store.db.tokens.find_one({"address": marker.address})["oldest_attempt"]
        assert set(queue) == {s.value for s in RETRY_PARTITIONS}
        return {status: at for status, at in queue.items() if at != NO_ATTEMPT}

    assert stored() == {"error": h(-3), "unsupported": h(-2)}
    store.tokens.record_social_url_result(marker.address, a, record(a, FetchStatus.OK, h(1)))
    assert stored() == {"error": h(-1), "unsupported": h(-2)}
    store.tokens.record_social_url_result(marker.address, c, record(c, FetchStatus.ERROR, h(2)))
    assert stored() == {"error": h(-1)}
    assert store.tokens.find_by_address(marker.address).social_urls[0].status == FetchStatus.OK  # still reads back
    store.db.tokens.update_one({"address": marker.address}, {"$unset": {"oldest_attempt": ""}})
    due = store.tokens.find_due_urls([FetchStatus.ERROR], h(5), 1000)
    assert marker.address not in [t.address for t, _ in due]  # not in the queue until backfilled
    assert store.tokens.backfill_oldest_attempt() >= 1
    assert stored() == {"error": h(-1)}
    due = store.tokens.find_due_urls([FetchStatus.ERROR], h(5), 1000)
    ((found, urls),) = [(t, u) for t, u in due if t.address == marker.address]
    assert [u.url for u in urls] == [b, c]
