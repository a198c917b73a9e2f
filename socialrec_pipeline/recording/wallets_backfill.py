"""Backfill `accounts.known_wallets` from the bios already stored (SPEC §5, issue 15).

Every account write derives wallets from the observed bio; rows written before that rule (or
before a fix to the extractor) get theirs here. The walk goes through the `_id` index in bounded
batches (`bios_after`), so it never scans and can stop and resume anywhere: `after_id` is the last
row a previous run reached. Wallets are only added (`$addToSet`), never removed, like on writes.
"""

from __future__ import annotations

from dataclasses import dataclass

from bson import ObjectId

from socialrec_pipeline.domain.wallets import wallets_in_text
from socialrec_pipeline.store.store import Store


@dataclass
class WalletsBackfillResult:
    scanned: int = 0
    with_wallets: int = 0
    updated: int = 0
    batches: int = 0
    last_id: ObjectId | None = None
    #: False when `max_batches` stopped the walk before the end of the collection.
    complete: bool = False


def backfill_wallets(
    store: Store, *, batch_size: int = 500, max_batches: int | None = None, after_id: ObjectId | None = None
) -> WalletsBackfillResult:
    """Fill `known_wallets` of every account from its stored bio; one read and at most one bulk
    write per batch of `batch_size` rows."""
    if batch_size < 1:
        raise ValueError("batch_size must be at least 1")
    result = WalletsBackfillResult(last_id=after_id)
    while max_batches is None or result.batches < max_batches:
        rows = store.accounts.bios_after(result.last_id, batch_size)
        if not rows:
            result.complete = True
            break
        result.batches += 1
        result.scanned += len(rows)
        additions = []
        for row_id, bio, known in rows:
            found = wallets_in_text(bio)
            if found:
                result.with_wallets += 1
            missing = [w for w in found if w not in known]
            if missing:
                additions.append((row_id, missing))
        result.updated += store.accounts.add_wallets(additions)
        result.last_id = rows[-1][0]
        if len(rows) < batch_size:
            result.complete = True
            break
    return result
