"""Handles are matched the way each platform matches them (all seven: case-insensitively), through
`handles[].key` and its index, while `handles[].value` keeps the platform's spelling."""

from __future__ import annotations

import uuid

import pytest

from socialrec_pipeline.domain.enums import Platform
from socialrec_pipeline.domain.handles import CASE_INSENSITIVE, handle_key
from socialrec_pipeline.domain.models import Account
from tests.store.conftest import h, unique

PLATFORMS = [Platform.X, Platform.GITHUB, Platform.REDDIT, Platform.TIKTOK, Platform.INSTAGRAM,
             Platform.TELEGRAM, Platform.YOUTUBE]


def mixed() -> str:
    """A handle unique to the test, in mixed case (`Kol_ab12CD…`)."""
    tail = uuid.uuid4().hex[:10]
    return "Kol_" + "".join(c.upper() if i % 2 else c for i, c in enumerate(tail)) + "x"


def test_every_account_platform_compares_handles_without_case():
    assert set(PLATFORMS) == CASE_INSENSITIVE
    assert [handle_key(p, "KolMixed") for p in PLATFORMS] == ["kolmixed"] * len(PLATFORMS)
    assert handle_key(Platform.WEB, "KolMixed") == "KolMixed"  # no rule known: compared exactly


@pytest.mark.parametrize("platform", PLATFORMS)
def test_holders_and_handle_lookups_ignore_case_and_keep_the_spelling(store, platform):
    spelled = mixed()
    account = Account.of(platform=platform, platform_key=unique(), observed_at=h(0), handle=spelled)
    row_id = store.accounts.upsert(account)

    for asked in (spelled, spelled.lower(), spelled.upper()):
        assert [a.id for a in store.accounts.find_current_holders(platform, asked)] == [row_id]
        assert [a.id for a in store.accounts.find_by_handle(asked)] == [row_id]
    other = next(p for p in PLATFORMS if p != platform)
    assert store.accounts.find_current_holders(other, spelled.lower()) == []
    stored = store.db.accounts.find_one({"_id": row_id})
    assert [(i["value"], i["key"]) for i in stored["handles"]] == [(spelled, spelled.lower())]
    row = store.accounts.find_by_id(row_id)
    assert row.had_handle_at(spelled.lower(), h(0)) and row.currently_holds(spelled.upper())


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_case_only_change_extends_the_interval_with_the_current_spelling(store, platform):
    spelled, key = mixed(), unique()
    store.accounts.upsert(Account.of(platform=platform, platform_key=key, observed_at=h(0), handle=spelled))
    store.accounts.upsert(Account.of(platform=platform, platform_key=key, observed_at=h(2), handle=spelled.lower()))
    # A late sighting of the old spelling: inside the interval, it changes nothing.
    store.accounts.upsert(Account.of(platform=platform, platform_key=key, observed_at=h(1), handle=spelled))
    row = store.accounts.find_by_platform_key(platform, key)
    assert [(i.value, i.key, i.first_seen, i.last_seen) for i in row.handles] == [
        (spelled.lower(), spelled.lower(), h(0), h(2))
    ]
    # A real rename still opens an interval.
    store.accounts.upsert(Account.of(platform=platform, platform_key=key, observed_at=h(3), handle="Renamed_" + key))
    row = store.accounts.find_by_platform_key(platform, key)
    assert [i.value for i in row.handles] == [spelled.lower(), "Renamed_" + key]
    assert store.accounts.find_current_holders(platform, spelled) == []
    assert [a.id for a in store.accounts.find_by_handle(spelled)] == [row.id]


def test_the_model_extends_on_a_case_only_change_too():
    account = Account.of(platform=Platform.X, platform_key="1", observed_at=h(0), handle="KolMixed")
    account.add_handle_observation("kolmixed", h(1))
    account.add_handle_observation("KOLMIXED", h(0.5))  # older: extends nothing, keeps the spelling
    assert [(i.value, i.key, i.first_seen, i.last_seen) for i in account.handles] == [
        ("kolmixed", "kolmixed", h(0), h(1))
    ]


def test_rows_stored_before_keys_existed_get_them_at_ensure_indexes(empty_store):
    spelled = mixed()
    legacy = {
        "platform": "x", "platform_key": unique(), "observed_at": h(0), "created_at": h(0), "updated_at": h(0),
        "handles": [{"value": "Older_" + spelled, "first_seen": h(0), "last_seen": h(1)},
                    {"value": spelled, "first_seen": h(2), "last_seen": h(3)}],
        "links": [], "declared_handles": [], "known_wallets": [], "metrics": {}, "moderation": {}, "data": {},
    }
    empty_store.db.accounts.insert_one(legacy)
    assert empty_store.accounts.find_current_holders(Platform.X, spelled) == []  # no key yet: not found

    empty_store.ensure_indexes()
    stored = empty_store.db.accounts.find_one({"_id": legacy["_id"]})
    assert [(i["value"], i["key"]) for i in stored["handles"]] == [
        ("Older_" + spelled, ("Older_" + spelled).lower()), (spelled, spelled.lower())
    ]
    assert [a.id for a in empty_store.accounts.find_current_holders(Platform.X, spelled.lower())] == [legacy["_id"]]
    assert empty_store.accounts.backfill_handle_keys() == 0  # up to date: nothing left to change


def test_a_legacy_row_extends_its_interval_on_a_case_only_change_before_the_backfill(empty_store):
    spelled, key = mixed(), unique()
    empty_store.db.accounts.insert_one({
        "platform": "gh", "platform_key": key, "observed_at": h(0),
        "handles": [{"value": spelled, "first_seen": h(0), "last_seen": h(0)}],
    })
    empty_store.accounts.upsert(Account.of(platform=Platform.GITHUB, platform_key=key, observed_at=h(1),
                                           handle=spelled.lower()))
    row = empty_store.accounts.find_by_platform_key(Platform.GITHUB, key)
    assert [(i.value, i.first_seen, i.last_seen) for i in row.handles] == [(spelled.lower(), h(0), h(1))]
