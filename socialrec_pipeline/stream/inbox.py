"""`record_inbox`: qualifying tokens waiting for (or being handled by) a `record_token_job` run.

The entry is written before the message is acknowledged, so an accepted event survives a crash of the
sensor. One entry per token (unique `token_address`); `generation` numbers its launches and is part of
the run key (with the entry's id), so re-yielding the same launch after a crash is harmless and a
failed token can be launched again by a later event.

States:
- `pending`  — wants a run at the current generation.
- `launched` — a run was requested for the current generation; `relaunch` is set when an event
  arrives meanwhile (used only if that run ends without a marker).
- `idle`     — its run ended without a marker and no event has asked since; the next event bumps it.
Entries whose token has a marker are deleted (done).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from pymongo import ASCENDING, UpdateOne
from pymongo.database import Database

from socialrec_pipeline.domain.events import TokenFlowEvent

COLLECTION = "record_inbox"

PENDING = "pending"
LAUNCHED = "launched"
IDLE = "idle"


@dataclass(frozen=True, slots=True)
class InboxEntry:
    #: The entry's own id: a token whose entry is deleted (marker written) and later created again
    #: (an operator removed the marker to re-record it) gets new run keys, never ones Dagster
    #: has already used and would drop.
    entry_id: str
    token_address: str
    state: str
    generation: int
    relaunch: bool
    symbol: str | None
    first_flow_timestamp: datetime | None
    launched_at: datetime | None

    @property
    def run_key(self) -> str:
        return run_key(self.token_address, self.entry_id, self.generation)


def run_key(token_address: str, entry_id: str, generation: int) -> str:
    return f"{token_address}:{entry_id}:{generation}"


class RecordInbox:
    def __init__(self, db: Database) -> None:
        self._coll = db[COLLECTION]

    def ensure_indexes(self) -> None:
        # SecantusDB scans slowly: every query below is served by one of these.
        self._coll.create_index([("token_address", ASCENDING)], name="uniq_inbox_token_address", unique=True)
        self._coll.create_index([("state", ASCENDING)], name="idx_inbox_state")

    def accept(self, events: Iterable[TokenFlowEvent], now: datetime) -> int:
        """Record qualifying events (one bulk write); returns the number of distinct tokens."""
        latest: dict[str, TokenFlowEvent] = {}
        for event in events:
            latest.setdefault(event.token_address, event)  # the first seen carries the earliest data
        if not latest:
            return 0
        ops: list[UpdateOne] = []
        for address, event in latest.items():
            on_insert = {
                "token_address": address,
                "state": PENDING,
                "generation": 0,
                "relaunch": False,
                "symbol": event.symbol,
                "first_flow_timestamp": event.first_flow_timestamp,
                "received_at": now,
            }
            ops.append(
                UpdateOne(
                    {"token_address": address},
                    {"$setOnInsert": on_insert, "$set": {"last_event_at": now}},
                    upsert=True,
                )
            )
            # The three states are disjoint, so at most one of the next two matches.
            ops.append(UpdateOne({"token_address": address, "state": LAUNCHED}, {"$set": {"relaunch": True}}))
            ops.append(
                UpdateOne(
                    {"token_address": address, "state": IDLE},
                    {"$set": {"state": PENDING, "relaunch": False}, "$inc": {"generation": 1}},
                )
            )
        self._coll.bulk_write(ops, ordered=True)
        return len(latest)

    def open_entries(self, limit: int) -> list[InboxEntry]:
        cursor = self._coll.find({"state": {"$in": [PENDING, LAUNCHED]}}).limit(limit)
        return [_entry(doc) for doc in cursor]

    def remove(self, addresses: Sequence[str]) -> int:
        if not addresses:
            return 0
        return self._coll.delete_many({"token_address": {"$in": list(addresses)}}).deleted_count

    def apply(self, transitions: Sequence[tuple[InboxEntry, dict]]) -> None:
        """Apply planned state changes; each is guarded by the generation it was planned from."""
        ops = [
            UpdateOne({"token_address": e.token_address, "generation": e.generation}, update)
            for e, update in transitions
        ]
        if ops:
            self._coll.bulk_write(ops, ordered=False)

    def find(self, address: str) -> InboxEntry | None:
        doc = self._coll.find_one({"token_address": address})
        return _entry(doc) if doc else None


def _entry(doc: dict) -> InboxEntry:
    return InboxEntry(
        entry_id=str(doc["_id"]),
        token_address=doc["token_address"],
        state=doc["state"],
        generation=int(doc.get("generation", 0)),
        relaunch=bool(doc.get("relaunch")),
        symbol=doc.get("symbol"),
        first_flow_timestamp=doc.get("first_flow_timestamp"),
        launched_at=doc.get("launched_at"),
    )
