"""wallets_backfill: stored bios → known_wallets, in bounded batches over the `_id` index."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from socialrec_pipeline.recording.wallets_backfill import backfill_wallets

SOL = "7xKXtg2CW87d97TXJSDpbD5jBkheTqA83TZRuJosgAsU"
BONK = "DezXAZ8z7PnrnRJjz3wXBoRgixCa6xjnB7YaB1pPB263"
EVM = "0x0Ae024D3C20a1b2c3d4e5f60718293a4b5c6d7e8"
T0 = datetime(2026, 11, 1, tzinfo=UTC)


def legacy_rows(store, bios):
    """Rows as the writer stored them before wallets were derived (known_wallets: [])."""
    docs = [{"platform": "x", "platform_key": f"k{i}", "handles": [], "links": [], "declared_handles": [],
             "known_wallets": [], "metrics": {}, "moderation": {}, "observed_at": T0, "data": {},
             "created_at": T0, "updated_at": T0, **({"bio": bio} if bio is not None else {})}
            for i, bio in enumerate(bios)]
    store.db.accounts.insert_many(docs)
    return [d["_id"] for d in docs]


def test_backfill_fills_wallets_from_stored_bios_in_batches(store):
    ids = legacy_rows(store, [f"CA: {SOL}", None, "gm frens", f"BNB: {EVM} & {BONK}", f"tx https://solscan.io/account/{SOL}"])
    store.db.accounts.update_one({"_id": ids[3]}, {"$set": {"known_wallets": [BONK]}})  # partly known already
    result = backfill_wallets(store, batch_size=2)
    assert (result.scanned, result.with_wallets, result.updated, result.batches, result.complete) == (5, 2, 2, 3, True)
    wallets = {d["_id"]: d["known_wallets"] for d in store.db.accounts.find()}
    assert wallets[ids[0]] == [SOL]
    assert sorted(wallets[ids[3]]) == sorted([BONK, EVM.lower()])
    assert wallets[ids[1]] == wallets[ids[2]] == wallets[ids[4]] == []
    assert [a.id for a in store.accounts.find_by_wallet(EVM)] == [ids[3]]
    again = backfill_wallets(store, batch_size=10)  # idempotent
    assert (again.updated, again.batches) == (0, 1)


def test_backfill_stops_after_max_batches_and_resumes(store):
    ids = legacy_rows(store, [f"CA {SOL}"] * 5)
    first = backfill_wallets(store, batch_size=2, max_batches=1)
    assert (first.scanned, first.updated, first.complete, first.last_id) == (2, 2, False, ids[1])
    rest = backfill_wallets(store, batch_size=2, after_id=first.last_id)
    assert (rest.scanned, rest.updated, rest.complete) == (3, 3, True)
    assert store.db.accounts.count_documents({"known_wallets": SOL}) == 5
    with pytest.raises(ValueError):
        backfill_wallets(store, batch_size=0)
