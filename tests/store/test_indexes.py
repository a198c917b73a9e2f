"""The index set is a contract: names, key order, uniqueness and partial filters, nothing more."""

from __future__ import annotations

import pytest
from pymongo.errors import BulkWriteError, DuplicateKeyError

from socialrec_pipeline.domain.enums import ContentSubtype, FetchStatus, Platform, VenueSubtype
from socialrec_pipeline.domain.models import Account, Content, SourceUrlEntry, Venue
from socialrec_pipeline.store import ensure_indexes
from socialrec_pipeline.store.collections import ALL_COLLECTIONS, DERIVED_COLLECTIONS
from tests.store.conftest import T0

EXISTS = lambda field: {field: {"$exists": True}}  # noqa: E731

# (name, keys in order, unique, partialFilterExpression)
EXPECTED = {
    "contents": [
        ("uniq_contents_source_url", [("source_urls.url", 1)], True, None),
        ("idx_contents_platform_subtype", [("platform", 1), ("subtype", 1)], False, None),
        ("uniq_contents_platform_key", [("platform", 1), ("subtype", 1), ("platform_key", 1)], True,
         EXISTS("platform_key")),
        ("idx_contents_creator_published", [("creator_id", 1), ("published_at", -1)], False,
         EXISTS("creator_id")),
        ("idx_contents_creator", [("creator_id", 1)], False, None),
        ("idx_contents_parent", [("parent_content_id", 1)], False, EXISTS("parent_content_id")),
        ("idx_contents_venue", [("venue_id", 1)], False, EXISTS("venue_id")),
    ],
    "accounts": [
        ("uniq_accounts_platform_key", [("platform", 1), ("platform_key", 1)], True, None),
        ("idx_accounts_handle", [("handles.value", 1)], False, None),
        ("idx_accounts_handle_key", [("handles.key", 1)], False, None),
        ("idx_accounts_wallet", [("known_wallets", 1)], False, None),
    ],
    "venues": [
        ("uniq_venues_platform_key", [("platform", 1), ("platform_key", 1)], True, None),
        ("idx_venues_creator", [("creator_id", 1)], False, EXISTS("creator_id")),
    ],
    "token_links": [
        ("idx_links_object_linked", [("object_id", 1), ("link_depth", 1), ("linked_at", 1)], False, None),
        ("idx_links_token_linked", [("token_address", 1), ("linked_at", 1)], False, None),
        ("idx_links_platform_linked", [("platform", 1), ("subtype", 1), ("linked_at", 1)], False, None),
        ("idx_links_linked", [("linked_at", 1)], False, None),
    ],
    "metric_series": [
        ("uniq_series_object", [("object", 1), ("object_id", 1)], True, None),
        ("idx_series_platform", [("platform", 1)], False, None),
        ("idx_series_refresh", [("platform", 1), ("refresh_at", 1)], False, None),
    ],
    "tokens": [
        ("uniq_tokens_address", [("address", 1)], True, None),
        ("idx_tokens_fingerprints", [("fingerprints", 1)], False, None),
        ("idx_tokens_discovered", [("discovered_at", -1)], False, None),
        ("idx_tokens_social_url_status", [("social_urls.status", 1)], False, None),
        ("idx_tokens_oldest_error", [("oldest_attempt.error", 1)], False, None),
        ("idx_tokens_oldest_unsupported", [("oldest_attempt.unsupported", 1)], False, None),
        ("idx_tokens_oldest_skipped_paid", [("oldest_attempt.skipped_paid", 1)], False, None),
        ("idx_tokens_oldest_invalid", [("oldest_attempt.invalid", 1)], False, None),
        ("idx_tokens_oldest_exhausted", [("oldest_attempt.exhausted", 1)], False, None),
    ],
    "token_signals": [
        ("uniq_token_signals_address", [("token_address", 1)], True, None),
        ("idx_token_signals_discovered", [("discovered_at", -1)], False, None),
    ],
    "token_clusters": [
        ("uniq_clusters_cutoff_id", [("input_cutoff", 1), ("cluster_id", 1)], True, None),
        ("idx_clusters_members", [("members", 1), ("input_cutoff", -1)], False, None),
        ("idx_clusters_cutoff_size", [("input_cutoff", 1), ("size", -1)], False, None),
    ],
}


def _normalize(spec: dict) -> tuple:
    partial = spec.get("partialFilterExpression")
    return (
        spec["name"],
        [(field, int(direction)) for field, direction in spec["key"].items()],
        bool(spec.get("unique", False)),
        _plain(partial) if partial is not None else None,
    )


def _plain(value):
    return {k: _plain(v) for k, v in value.items()} if hasattr(value, "items") else value


def actual_indexes(db, collection: str) -> list[tuple]:
    specs = [_normalize(s) for s in db[collection].list_indexes() if s["name"] != "_id_"]
    return sorted(specs, key=lambda s: s[0])


@pytest.mark.parametrize("collection", sorted(EXPECTED))
def test_index_set_is_exactly_the_contract(empty_store, collection):
    assert actual_indexes(empty_store.db, collection) == sorted(EXPECTED[collection], key=lambda s: s[0])


#: What an index spec may carry besides the four contract fields (no sparse, TTL, collation...).
_NEUTRAL_OPTIONS = {"v", "ns", "key", "name", "unique", "partialFilterExpression"}


@pytest.mark.parametrize("collection", sorted(EXPECTED))
def test_indexes_carry_no_option_outside_the_contract(empty_store, collection):
    extra = {s["name"]: set(s) - _NEUTRAL_OPTIONS for s in empty_store.db[collection].list_indexes()}
    assert {name: keys for name, keys in extra.items() if keys} == {}


def test_only_the_six_collections_and_the_derived_ones_exist(empty_store):
    names = set(ALL_COLLECTIONS) | set(DERIVED_COLLECTIONS)
    assert set(empty_store.db.list_collection_names()) == names == set(EXPECTED)
    assert len(ALL_COLLECTIONS) == 6 and set(DERIVED_COLLECTIONS) == {"token_signals", "token_clusters"}


def test_ensure_indexes_twice_is_harmless(empty_store):
    ensure_indexes(empty_store.db)
    empty_store.ensure_indexes()
    for collection, expected in EXPECTED.items():
        assert actual_indexes(empty_store.db, collection) == sorted(expected, key=lambda s: s[0])


def _content(url: str, key: str | None, subtype=ContentSubtype.TWEET) -> Content:
    return Content.of(
        platform=Platform.X,
        subtype=subtype,
        platform_key=key,
        source_urls=[SourceUrlEntry(url=url, status=FetchStatus.OK, observed_at=T0)],
        observed_at=T0,
    )


def test_database_rejects_a_second_account_with_the_same_key(empty_store):
    col = empty_store.db.accounts
    col.insert_one(Account.of(platform=Platform.X, platform_key="42", observed_at=T0).to_document())
    with pytest.raises(DuplicateKeyError):
        col.insert_one(Account.of(platform=Platform.X, platform_key="42", observed_at=T0).to_document())
    # Same key on another platform is another account.
    col.insert_one(Account.of(platform=Platform.GITHUB, platform_key="42", observed_at=T0).to_document())


def test_database_rejects_a_second_venue_with_the_same_key_whatever_its_subtype(empty_store):
    col = empty_store.db.venues
    first = Venue.of(platform=Platform.TELEGRAM, subtype=VenueSubtype.CHANNEL, platform_key="-1001", observed_at=T0)
    col.insert_one(first.to_document())
    again = Venue.of(platform=Platform.TELEGRAM, subtype=VenueSubtype.GROUP, platform_key="-1001", observed_at=T0)
    with pytest.raises(DuplicateKeyError):
        col.insert_one(again.to_document())


def test_database_rejects_a_content_source_url_held_by_another_row(empty_store):
    empty_store.contents.insert_many([_content("https://x.com/a/status/1", "1")])
    with pytest.raises(BulkWriteError) as exc:
        empty_store.contents.insert_many([_content("https://x.com/a/status/1", "2")])
    assert exc.value.details["writeErrors"][0]["code"] == 11000


def test_database_rejects_a_second_content_with_the_same_key(empty_store):
    empty_store.contents.insert_many([_content("https://x.com/a/status/7", "7")])
    with pytest.raises(BulkWriteError) as exc:
        empty_store.contents.insert_many([_content("https://x.com/i/status/7", "7")])
    assert exc.value.details["writeErrors"][0]["code"] == 11000
    # Same key under another subtype is another row.
    empty_store.contents.insert_many([_content("https://x.com/search?q=7", "7", ContentSubtype.SEARCH)])


def test_contents_without_a_platform_key_do_not_collide(empty_store):
    empty_store.contents.insert_many(
        [_content("https://x.com/a/b/c", None, ContentSubtype.UNKNOWN),
         _content("https://x.com/d/e/f", None, ContentSubtype.UNKNOWN)]
    )
    assert empty_store.db.contents.count_documents({"subtype": "unknown"}) == 2
