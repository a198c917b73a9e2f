"""Every query `record_inbox` sends is answered from one of the inbox's own indexes."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from pymongo import MongoClient

from socialrec_pipeline.domain.events import TokenFlowEvent
from socialrec_pipeline.store.client import open_database
from socialrec_pipeline.stream.inbox import COLLECTION, STUCK, RecordInbox
from socialrec_pipeline.stream.intake import EndedRun, TickLimits, plan_launches
from tests.store.test_query_plans import _filters, _index_names, _Recorder, _stages, winning_plan

NOW = datetime(2026, 11, 30, 12, tzinfo=UTC)
ADDRESSES = ["7GCihgDB8fe6KNjn2MYtkzZcRjQy3t9GHdC8uHYmW2hr", "So11111111111111111111111111111111111111112"]


def test_every_inbox_query_uses_an_index(mongo_uri, fresh_db):
    recorder = _Recorder()
    client = MongoClient(mongo_uri, event_listeners=[recorder], tz_aware=True)
    try:
        db = open_database(client, fresh_db.name)
        inbox = RecordInbox(db)
        inbox.ensure_indexes()
        # Enough rows that a scan and an index plan differ.
        db[COLLECTION].insert_many(
            [{"token_address": f"filler{i}", "state": "idle", "check_at": NOW + timedelta(days=9)} for i in range(50)]
        )
        limits = TickLimits(backoff=(timedelta(minutes=1),))
        events = [TokenFlowEvent.model_validate({"tokenAddress": a, "totalInvestedAlphaFinders": 6}) for a in ADDRESSES]
        inbox.accept(events, NOW)
        failed = lambda keys: {k: EndedRun("r", "FAILURE") for k in keys}  # noqa: E731
        at = NOW
        for _ in range(5):  # launch, back off, relaunch, give up, sweep
            plan_launches(inbox, lambda a: set(), set(), at, limits, ended_runs=failed)
            at += timedelta(minutes=20)
        plan_launches(inbox, lambda a: set(a), set(), at + timedelta(hours=1), limits)  # markers: done
        inbox.find(ADDRESSES[0])
        inbox.count_in_state(STUCK)
        inbox.stuck_entries()
        inbox.remove(ADDRESSES)
    finally:
        client.close()
    reads = [f for command in recorder.commands for f in _filters(command) if f[0] == COLLECTION]
    assert len(reads) > 15
    scans = []
    for collection, query, sort, hint in reads:
        plan = winning_plan(fresh_db, collection, query, sort, hint)
        if "COLLSCAN" in set(_stages(plan)) or not set(_index_names(plan)):
            scans.append((json.dumps(query, default=str), sort, plan))
    assert scans == [], "\n".join(f"{q} {s} {p}" for q, s, p in scans)


def test_the_inbox_declares_exactly_its_three_indexes(fresh_db):
    RecordInbox(fresh_db).ensure_indexes()
    RecordInbox(fresh_db).ensure_indexes()  # idempotent
    specs = {s["name"]: (list(s["key"].items()), bool(s.get("unique"))) for s in fresh_db[COLLECTION].list_indexes()}
    assert specs == {
        "_id_": ([("_id", 1)], False),
        "uniq_inbox_token_address": ([("token_address", 1)], True),
        "idx_inbox_state": ([("state", 1)], False),
        "idx_inbox_check_at": ([("check_at", 1)], False),
    }
