"""SPEC §5: every observation completes and refreshes accounts and venues (one atomic update each).

Each test stores real-shaped observations in the order the pipeline meets them and reads the row
back; the merge runs on the server (an update pipeline), so these run against the wire server.
"""

from __future__ import annotations

import random
import threading
from datetime import timedelta

from socialrec_pipeline.domain.enums import Platform, VenueSubtype
from socialrec_pipeline.domain.graph import DeclaredHandle
from socialrec_pipeline.domain.models import Account, Venue
from socialrec_pipeline.store import Store
from tests.store.conftest import T0, h, unique

SOL = "7xKXtg2CW87d97TXJSDpbD5jBkheTqA83TZRuJosgAsU"
BONK = "DezXAZ8z7PnrnRJjz3wXBoRgixCa6xjnB7YaB1pPB263"
EVM = "0x0Ae024D3C20a1b2c3d4e5f60718293a4b5c6d7e8"


def gh_owner(login: str, at=T0) -> Account:
    """A repo answer's embedded `owner {login, id, type}` (providers/github.py owner_account)."""
    return Account.of(platform=Platform.GITHUB, platform_key=login.lower(), observed_at=at, handle=login,
                      data={"source_ref": "repo", "id": 583231, "account_type": "User"})


def gh_profile(login: str, at=T0, **fields) -> Account:
    """`GET /users/{login}` (providers/github.py user_account)."""
    values = dict(display_name="Pump Dev", bio=f"building on solana. CA: {SOL}", links=["https://pump.example"],
                  declared_handles=[DeclaredHandle(platform=Platform.X, value="pumpdev_x")], followers=77,
                  account_created_at=h(-10_000), unavailable=False, data={"id": 583231, "account_type": "User"})
    values.update(fields)
    return Account.of(platform=Platform.GITHUB, platform_key=login.lower(), observed_at=at, handle=login, **values)


def raw(store: Store, key: str, collection: str = "accounts") -> dict:
    return store.db[collection].find_one({"platform_key": key})


def test_a_stub_is_completed_by_the_full_profile_and_keeps_its_id(store):
    login = unique("PumpDev")
    stub_id = store.accounts.upsert(gh_owner(login))
    stub = raw(store, login.lower())
    assert stub["data"] == {"source_ref": "repo", "id": 583231, "account_type": "User"}
    assert "bio" not in stub and stub["known_wallets"] == [] and stub["metrics"] == {}

    assert store.accounts.upsert(gh_profile(login, h(1))) == stub_id
    row = store.accounts.find_by_id(stub_id)
    assert row.display_name == "Pump Dev"
    assert row.bio.startswith("building on solana")
    assert row.links == ["https://pump.example"]
    assert [(d.platform, d.value) for d in row.declared_handles] == [(Platform.X, "pumpdev_x")]
    assert row.metrics.followers == 77
    assert row.account_created_at == h(-10_000)
    assert row.known_wallets == [SOL]
    assert row.moderation.unavailable is False and row.moderation.changed_at is None
    assert row.observed_at == h(1)
    assert row.data == {"id": 583231, "account_type": "User", "profile_observed_at": h(1)}  # source_ref gone
    assert [(x.value, x.first_seen, x.last_seen) for x in row.handles] == [(login, T0, h(1))]
    assert row.created_at == stub["created_at"] and row.updated_at >= stub["updated_at"]


def test_a_later_thin_copy_never_thins_a_full_profile(store):
    login = unique("dev")
    row_id = store.accounts.upsert(gh_profile(login, T0))
    store.accounts.upsert(gh_owner(login, h(5)))  # newer, but carries none of the profile fields
    row = store.accounts.find_by_id(row_id)
    assert (row.display_name, row.metrics.followers, row.links) == ("Pump Dev", 77, ["https://pump.example"])
    assert "source_ref" not in row.data and row.data["profile_observed_at"] == T0
    assert row.observed_at == h(5) and row.handles[-1].last_seen == h(5)


def test_mutable_fields_move_forward_only_with_a_newer_observation(store):
    key = unique()
    row_id = store.accounts.upsert(Account.of(platform=Platform.X, platform_key=key, observed_at=h(2),
                                              display_name="new name", followers=500))
    # An older answer (a retry that ran late) fills what is absent but replaces nothing.
    store.accounts.upsert(Account.of(platform=Platform.X, platform_key=key, observed_at=h(1),
                                     display_name="old name", followers=100, bio="old bio",
                                     account_created_at=h(-50)))
    row = store.accounts.find_by_id(row_id)
    assert (row.display_name, row.metrics.followers) == ("new name", 500)
    assert (row.bio, row.account_created_at, row.observed_at) == ("old bio", h(-50), h(2))
    # A newer one moves them; account_created_at (immutable) stays the first value.
    store.accounts.upsert(Account.of(platform=Platform.X, platform_key=key, observed_at=h(3),
                                     display_name="newest", followers=900, account_created_at=h(-1)))
    row = store.accounts.find_by_id(row_id)
    assert (row.display_name, row.metrics.followers, row.bio) == ("newest", 900, "old bio")
    assert row.account_created_at == h(-50) and row.observed_at == h(3)


def test_handles_make_intervals_with_gaps_and_three_for_a_b_a(store):
    key = unique()
    for at, handle in [(0, "alpha"), (1, "alpha"), (5, "beta"), (6, "beta"), (9, "alpha")]:
        store.accounts.upsert(Account.of(platform=Platform.TIKTOK, platform_key=key, observed_at=h(at), handle=handle))
    row = store.accounts.find_by_platform_key(Platform.TIKTOK, key)
    assert [(x.value, x.first_seen, x.last_seen) for x in row.handles] == [
        ("alpha", h(0), h(1)), ("beta", h(5), h(6)), ("alpha", h(9), h(9))
    ]
    assert row.had_handle_at("alpha", h(1)) and not row.had_handle_at("alpha", h(3))  # the gap: nobody's
    assert not row.had_handle_at("beta", h(3)) and not row.had_handle_at("alpha", h(7))


def test_handle_merge_on_the_server_equals_the_model_rule(store):
    rng = random.Random(15)
    for _ in range(4):
        key = unique()
        model = Account.of(platform=Platform.X, platform_key=key, observed_at=T0)
        for _ in range(8):
            at, handle = h(rng.randint(0, 20)), rng.choice(["a", "b", "c"])
            model.add_handle_observation(handle, at)
            store.accounts.upsert(Account.of(platform=Platform.X, platform_key=key, observed_at=at, handle=handle))
        stored = store.accounts.find_by_platform_key(Platform.X, key)
        assert stored.handles == model.handles  # including out-of-order arrivals (cut back)


def test_absent_never_overwrites_and_empty_lists_are_absent(store):
    key = unique()
    row_id = store.accounts.upsert(gh_profile(key, T0))
    store.accounts.upsert(Account.of(platform=Platform.GITHUB, platform_key=key, observed_at=h(1), links=[],
                                     data={"id": 583231}))
    row = store.accounts.find_by_id(row_id)
    assert row.bio and row.links == ["https://pump.example"] and row.display_name == "Pump Dev"
    assert row.moderation.unavailable is False and row.data["account_type"] == "User"


def test_moderation_is_set_and_cleared_with_the_time(store):
    key = unique()
    row_id = store.accounts.upsert(Account.of(platform=Platform.X, platform_key=key, observed_at=T0, unavailable=False))
    assert store.accounts.find_by_id(row_id).moderation.changed_at is None
    store.accounts.upsert(Account.of(platform=Platform.X, platform_key=key, observed_at=h(2), unavailable=True))
    row = store.accounts.find_by_id(row_id)
    assert (row.moderation.unavailable, row.moderation.changed_at) == (True, h(2))
    # An older "alive" answer does not clear it; no word (None) leaves it alone.
    store.accounts.upsert(Account.of(platform=Platform.X, platform_key=key, observed_at=h(1), unavailable=False))
    store.accounts.upsert(Account.of(platform=Platform.X, platform_key=key, observed_at=h(3)))
    row = store.accounts.find_by_id(row_id)
    assert (row.moderation.unavailable, row.moderation.changed_at) == (True, h(2))
    # Seen alive again later: cleared, with that time.
    store.accounts.upsert(Account.of(platform=Platform.X, platform_key=key, observed_at=h(4), unavailable=False))
    row = store.accounts.find_by_id(row_id)
    assert (row.moderation.unavailable, row.moderation.changed_at) == (False, h(4))


def test_mark_unavailable_touches_existing_rows_only(store):
    key = unique()
    assert store.accounts.mark_unavailable(Platform.REDDIT, key, h(1)) is False
    assert store.accounts.find_by_platform_key(Platform.REDDIT, key) is None
    store.accounts.upsert(Account.of(platform=Platform.REDDIT, platform_key=key, observed_at=T0, bio="gm"))
    assert store.accounts.mark_unavailable(Platform.REDDIT, key, h(1)) is True
    row = store.accounts.find_by_platform_key(Platform.REDDIT, key)
    assert (row.moderation.unavailable, row.moderation.changed_at, row.bio, row.observed_at) == (True, h(1), "gm", h(1))


def test_known_wallets_come_from_every_observed_bio(store):
    key = unique()
    row_id = store.accounts.upsert(Account.of(platform=Platform.X, platform_key=key, observed_at=T0,
                                              bio=f"CA: {SOL} | BNB: {EVM}"))
    assert set(store.accounts.find_by_id(row_id).known_wallets) == {SOL, EVM.lower()}
    # The bio changes: the new wallet joins, the old ones stay known (a dev who deletes the CA
    # after a rug is still that wallet's account).
    store.accounts.upsert(Account.of(platform=Platform.X, platform_key=key, observed_at=h(1), bio=f"new: {BONK}"))
    row = store.accounts.find_by_id(row_id)
    assert set(row.known_wallets) == {SOL, EVM.lower(), BONK} and row.bio == f"new: {BONK}"
    assert [a.id for a in store.accounts.find_by_wallet(EVM)] == [row_id]  # any case joins
    assert [a.id for a in store.accounts.find_by_wallet(BONK)] == [row_id]


def test_venue_is_completed_and_refreshed(store):
    key = unique("sub")
    thin = Venue.of(platform=Platform.REDDIT, subtype=VenueSubtype.SUBREDDIT, platform_key=key, observed_at=T0,
                    name="Solana", data={"source_ref": "post"})
    venue_id = store.venues.upsert(thin)
    full = Venue.of(platform=Platform.REDDIT, subtype=VenueSubtype.SUBREDDIT, platform_key=key, observed_at=h(1),
                    name="Solana", description="The Solana subreddit", venue_created_at=h(-9000), members=250000,
                    data={"id": "2qh1i", "subreddit_type": "public"})
    assert store.venues.upsert(full) == venue_id
    row = store.venues.find_by_id(venue_id)
    assert (row.description, row.venue_created_at, row.metrics.members) == ("The Solana subreddit", h(-9000), 250000)
    assert row.data == {"id": "2qh1i", "subreddit_type": "public", "profile_observed_at": h(1)}
    store.venues.upsert(Venue.of(platform=Platform.REDDIT, subtype=VenueSubtype.SUBREDDIT, platform_key=key,
                                 observed_at=h(2), members=260000, data={"source_ref": "post"}))
    row = store.venues.find_by_id(venue_id)
    assert row.metrics.members == 260000 and row.description == "The Solana subreddit" and "source_ref" not in row.data


def test_concurrent_observations_of_a_new_key_both_land(mongo_client, mongo_db):
    store = Store(mongo_db)
    store.ensure_indexes()
    for _ in range(3):
        key = unique()
        barrier = threading.Barrier(2)
        observations = [
            Account.of(platform=Platform.X, platform_key=key, observed_at=T0, bio="one"),
            Account.of(platform=Platform.X, platform_key=key, observed_at=T0 + timedelta(seconds=1), followers=5),
        ]

        def write(obs, barrier=barrier):
            barrier.wait()
            store.accounts.upsert(obs)

        threads = [threading.Thread(target=write, args=(o,)) for o in observations]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        row = store.accounts.find_by_platform_key(Platform.X, key)
        assert (row.bio, row.metrics.followers) == ("one", 5)
        assert store.db.accounts.count_documents({"platform": "x", "platform_key": key}) == 1
