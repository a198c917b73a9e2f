"""accounts / venues: atomic upsert on (platform, platform_key) that completes and refreshes rows."""

from __future__ import annotations

import threading

import pytest
from pymongo.errors import BulkWriteError

from socialrec_pipeline.domain.enums import Platform, VenueSubtype
from socialrec_pipeline.domain.models import Account, Venue
from socialrec_pipeline.store import Store
from tests.store.conftest import T0, h, unique


def account(key: str, **fields) -> Account:
    return Account.of(platform=fields.pop("platform", Platform.X), platform_key=key, observed_at=T0, **fields)


def test_upsert_many_inserts_new_keys_and_returns_every_id(store):
    a, b = account(unique()), account(unique(), platform=Platform.GITHUB)
    ids = store.accounts.upsert_many([a, b])
    assert ids == {("x", a.platform_key): a.id, ("gh", b.platform_key): b.id}
    assert store.accounts.find_by_id(a.id).platform_key == a.platform_key


def test_existing_row_is_returned_and_refreshed_in_place(store):
    key = unique()
    first = account(key, display_name="first", followers=10, handle="kol")
    store.accounts.upsert(first)
    later = Account.of(platform=Platform.X, platform_key=key, observed_at=h(1), display_name="renamed",
                       followers=99, handle="other")
    ids = store.accounts.upsert_many([account(unique()), later])
    assert ids[("x", key)] == first.id != later.id
    stored = store.accounts.find_by_id(first.id)
    assert (stored.display_name, stored.metrics.followers, stored.observed_at) == ("renamed", 99, h(1))
    assert [x.value for x in stored.handles] == ["kol", "other"]
    assert store.db.accounts.count_documents({"platform": "x", "platform_key": key}) == 1


def test_same_key_twice_in_one_batch_makes_one_row(store):
    key = unique()
    ids = store.accounts.upsert_many([account(key, display_name="a"), account(key, display_name="b")])
    assert len(ids) == 1
    assert store.accounts.find_by_platform_key(Platform.X, key).display_name == "a"
    store.accounts.upsert_many([account(key, followers=3), account(key, display_name="c", bio="b")])
    stored = store.accounts.find_by_platform_key(Platform.X, key)
    # folded into one observation, as new as the row: it moves every field it holds
    assert (stored.display_name, stored.bio, stored.metrics.followers) == ("c", "b", 3)


def test_stored_row_round_trips_with_timestamps(store):
    acc = account(unique(), handle="kol", followers=5, account_created_at=h(-100))
    store.accounts.upsert(acc)
    back = store.accounts.find_by_id(acc.id)
    assert back.model_dump(exclude={"created_at", "updated_at", "data"}) == acc.model_dump(
        exclude={"created_at", "updated_at", "data"}
    )
    assert back.data == {"profile_observed_at": T0}  # a full profile (no source_ref) is stamped
    assert back.created_at is not None and back.created_at.tzinfo is not None


def test_concurrent_upserts_of_one_key_make_one_row(mongo_client, mongo_db):
    store = Store(mongo_db)
    store.ensure_indexes()
    key = unique()
    workers = 8
    barrier = threading.Barrier(workers)
    results: list = []
    errors: list = []

    def upsert() -> None:
        try:
            barrier.wait()
            results.append(store.accounts.upsert(account(key)))
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=upsert) for _ in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert store.db.accounts.count_documents({"platform": "x", "platform_key": key}) == 1
    assert len(set(results)) == 1  # every caller got the id of the one stored row


def test_find_by_handle_and_wallet(store):
    handle = unique("h")
    wallet = unique("So")
    old = account(unique(), handle=handle, known_wallets=[wallet])
    new = account(unique(), handle=handle)
    store.accounts.upsert_many([old, new])
    assert {a.id for a in store.accounts.find_by_handle(handle)} == {old.id, new.id}
    assert [a.id for a in store.accounts.find_by_wallet(wallet)] == [old.id]
    assert store.accounts.find_by_handle(unique("nobody")) == []
    assert {a.id for a in store.accounts.find_by_ids([old.id, new.id])} == {old.id, new.id}


def test_venue_identity_ignores_subtype(store):
    key = unique("-100")
    channel = Venue.of(platform=Platform.TELEGRAM, subtype=VenueSubtype.CHANNEL, platform_key=key, observed_at=T0)
    group = Venue.of(platform=Platform.TELEGRAM, subtype=VenueSubtype.GROUP, platform_key=key, observed_at=h(1))
    assert store.venues.upsert(channel) == store.venues.upsert(group) == channel.id
    stored = store.venues.find_by_platform_key(Platform.TELEGRAM, key)
    assert stored.subtype == VenueSubtype.GROUP  # a newer observation moves the mutable subtype
    store.venues.upsert(channel)  # older: changes nothing
    assert store.venues.find_by_platform_key(Platform.TELEGRAM, key).subtype == VenueSubtype.GROUP


def test_venues_by_creator(store):
    creator = account(unique())
    store.accounts.upsert(creator)
    venue = Venue.of(platform=Platform.X, subtype=VenueSubtype.COMMUNITY, platform_key=unique(),
                     observed_at=T0, creator_id=creator.id, members=12)
    ids = store.venues.upsert_many([venue])
    assert ids == {("x", venue.platform_key): venue.id}
    assert [v.id for v in store.venues.find_by_creator(creator.id)] == [venue.id]
    assert store.venues.find_by_id(venue.id).metrics.members == 12


def test_a_reused_id_is_not_mistaken_for_a_lost_race(store):
    first = account(unique())
    store.accounts.upsert(first)
    clash = account(unique())
    clash.id = first.id  # a caller bug: one issued id used for two accounts
    with pytest.raises(BulkWriteError):
        store.accounts.upsert(clash)
