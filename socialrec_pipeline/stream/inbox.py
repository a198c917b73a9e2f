"""`record_inbox`: qualifying tokens waiting for (or being handled by) a `record_token_job` run.

The entry is written (journaled) before the message is acknowledged, so an accepted event survives
a crash of the sensor or of the database. One entry per token (unique `token_address`);
`generation` numbers its launches and is part of the run key (with the entry's id), so re-yielding
the same launch after a crash is harmless and a token can be launched again.

States:
- `pending`  — wants a run at the current generation.
- `launched` — a run was requested for the current generation; `relaunch` is set when an event
  arrives meanwhile (used only if that run ends without a marker).
- `retrying` — its run ended without a marker for a reason a later run can fix (a red run, a lost
  request, a token lock held elsewhere); relaunched automatically at `check_at` (backoff).
- `stuck`    — gave up after the last backoff step; stays visible to operators with the run that
  last failed (`stuck_entries`), relaunched only by a new event.
- `idle`     — its run ended green without a marker (token unknown upstream) or was cancelled;
  the next event relaunches it. Removed after `IDLE_RETENTION` without events.
Entries whose token has a marker are deleted (done), whatever their state. Entries not open
(`retrying`, `stuck`, `idle`) carry `check_at`, the next time a tick looks at them, so every
query is an index range and the collection stays bounded.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from pymongo import ASCENDING, UpdateOne
from pymongo.collection import Collection
from pymongo.database import Database

from socialrec_pipeline.domain.events import TokenFlowEvent
from socialrec_pipeline.store.durability import DurableWrites
from socialrec_pipeline.store.errors import refuses_document

COLLECTION = "record_inbox"

PENDING = "pending"
LAUNCHED = "launched"
RETRYING = "retrying"
STUCK = "stuck"
IDLE = "idle"
OPEN_STATES = (PENDING, LAUNCHED)
#: States whose entries a tick reads only when their `check_at` has come.
RESTING_STATES = (RETRYING, STUCK, IDLE)


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
    #: Runs in a row that ended without a marker for a reason a later run can fix.
    failures: int = 0
    check_at: datetime | None = None
    last_event_at: datetime | None = None
    last_failed_run_id: str | None = None
    last_failed_at: datetime | None = None

    @property
    def run_key(self) -> str:
        return run_key(self.token_address, self.entry_id, self.generation)


def run_key(token_address: str, entry_id: str, generation: int) -> str:
    return f"{token_address}:{entry_id}:{generation}"


#: Poison: a write the database refused for the entry's content dead-letters its message. The rule
#: lives with the store (the recording path judges a refused graph by it too).
rejects_content = refuses_document

#: Filters on the address plus another field: the embedded server's planner scans the collection
#: for those unless told to use the unique index (see docs/decisions.md, "Queries on the
#: embedded server").
_BY_ADDRESS = "uniq_inbox_token_address"


class RecordInbox:
    def __init__(self, db: Database) -> None:
        self._coll = db[COLLECTION]
        self._durable = DurableWrites(self._coll)

    @property
    def _writes(self) -> Collection:
        """The collection with the write concern every inbox write uses: journaled (`j`), and
        acknowledged by a majority when the server is a replica set or a sharded cluster. An
        acknowledged message must survive the database being killed right after the tick."""
        return self._durable.collection

    def ensure_indexes(self) -> None:
        # SecantusDB scans slowly: every query below is served by one of these.
        self._coll.create_index([("token_address", ASCENDING)], name="uniq_inbox_token_address", unique=True)
        self._coll.create_index([("state", ASCENDING)], name="idx_inbox_state")
        self._coll.create_index([("check_at", ASCENDING)], name="idx_inbox_check_at")
        # Entries left `idle` before entries carried `check_at` would never be looked at again:
        # due now, so the next tick sweeps them like any other (a no-op once done).
        self._writes.update_many(
            {"state": IDLE, "check_at": {"$exists": False}},
            {"$set": {"check_at": datetime(2000, 1, 1, tzinfo=UTC)}},
            hint="idx_inbox_state",
        )

    def accept(self, events: Iterable[TokenFlowEvent], now: datetime) -> int:
        """Record qualifying events (one journaled bulk write); returns the number of distinct tokens.

        Duplicates arrive in any order: the entry keeps the earliest `firstFlowTimestamp` seen
        (`$min`, within the batch and across batches) and the first symbol seen.
        """
        earliest: dict[str, datetime | None] = {}
        symbols: dict[str, str | None] = {}
        for event in events:
            address = event.token_address
            seen = earliest.get(address)
            stamp = event.first_flow_timestamp
            earliest[address] = stamp if seen is None or (stamp is not None and stamp < seen) else seen
            if symbols.get(address) is None:
                symbols[address] = event.symbol
        if not earliest:
            return 0
        ops: list[UpdateOne] = []
        for address, stamp in earliest.items():
            on_insert = {
                "token_address": address,
                "state": PENDING,
                "generation": 0,
                "relaunch": False,
                "received_at": now,
            }
            if symbols[address] is not None:
                on_insert["symbol"] = symbols[address]
            # A new event starts the backoff over: the token gets every relaunch step again.
            update: dict = {"$setOnInsert": on_insert, "$set": {"last_event_at": now, "failures": 0}}
            if stamp is not None:
                update["$min"] = {"first_flow_timestamp": stamp}
            ops.append(UpdateOne({"token_address": address}, update, upsert=True, hint=_BY_ADDRESS))
            # The states are disjoint, so at most one of the next two matches. An event relaunches
            # any entry that has no launch outstanding; backoff only paces relaunches without one.
            ops.append(
                UpdateOne({"token_address": address, "state": LAUNCHED}, {"$set": {"relaunch": True}}, hint=_BY_ADDRESS)
            )
            ops.append(
                UpdateOne(
                    {"token_address": address, "state": {"$in": list(RESTING_STATES)}},
                    {
                        "$set": {"state": PENDING, "relaunch": False},
                        "$inc": {"generation": 1},
                        "$unset": {"check_at": ""},
                    },
                    hint=_BY_ADDRESS,
                )
            )
        self._writes.bulk_write(ops, ordered=True)
        return len(earliest)

    def open_entries(self, limit: int) -> list[InboxEntry]:
        cursor = self._coll.find({"state": {"$in": list(OPEN_STATES)}}).limit(limit)
        return [_entry(doc) for doc in cursor]

    def due_entries(self, now: datetime, limit: int) -> list[InboxEntry]:
        """Resting entries whose `check_at` has come (oldest first): relaunch, sweep or keep."""
        cursor = self._coll.find({"check_at": {"$lte": now}}).sort("check_at", ASCENDING).limit(limit)
        return [_entry(doc) for doc in cursor]

    def remove(self, addresses: Sequence[str]) -> int:
        if not addresses:
            return 0
        return self._writes.delete_many({"token_address": {"$in": list(addresses)}}).deleted_count

    def apply(self, transitions: Sequence[tuple[InboxEntry, dict]]) -> None:
        """Apply planned state changes; each is guarded by the generation it was planned from."""
        ops = [
            UpdateOne({"token_address": e.token_address, "generation": e.generation}, update, hint=_BY_ADDRESS)
            for e, update in transitions
        ]
        if ops:
            self._writes.bulk_write(ops, ordered=False)

    def find(self, address: str) -> InboxEntry | None:
        doc = self._coll.find_one({"token_address": address})
        return _entry(doc) if doc else None

    def count_in_state(self, state: str) -> int:
        return self._coll.count_documents({"state": state})

    def entries_in_states(self, states: Sequence[str], limit: int) -> list[InboxEntry]:
        """Up to `limit` entries in `states`, the ones due first (for the operators' tables)."""
        cursor = self._coll.find({"state": {"$in": list(states)}}, hint="idx_inbox_state").limit(limit)
        return sorted(
            (_entry(doc) for doc in cursor), key=lambda e: (e.state, e.check_at or datetime.max.replace(tzinfo=UTC))
        )

    def stuck_entries(self, limit: int = 50) -> list[InboxEntry]:
        """Tokens whose automatic relaunches gave up, with the run that last failed (for operators:
        the sensor's tick log and cursor, and any health view)."""
        return [_entry(doc) for doc in self._coll.find({"state": STUCK}).limit(limit)]


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
        failures=int(doc.get("failures", 0)),
        check_at=doc.get("check_at"),
        last_event_at=doc.get("last_event_at"),
        last_failed_run_id=doc.get("last_failed_run_id"),
        last_failed_at=doc.get("last_failed_at"),
    )
