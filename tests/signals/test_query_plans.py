"""Every query a signal partition sends is answered from an index (SPEC §11: a day partition must
not scan a collection). The commands are captured from the driver while the three computations
and their checks run, then each read is explained on the same server."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from pymongo import MongoClient, monitoring

from socialrec_pipeline.signals import checks
from socialrec_pipeline.signals.clusters import compute_clusters
from socialrec_pipeline.signals.link_stats import compute_link_stats
from socialrec_pipeline.signals.token_signals import compute_token_signals
from socialrec_pipeline.signals.window import DayWindow
from socialrec_pipeline.store import Store
from socialrec_pipeline.store.client import open_database
from socialrec_pipeline.store.signals import SignalStore
from tests.signals.dataset import D1, seed
from tests.store.test_query_plans import _filters, _index_names, _stages, winning_plan

_READS = {"find", "aggregate", "count", "update", "delete", "findAndModify", "distinct"}


class _Recorder(monitoring.CommandListener):
    def __init__(self) -> None:
        self.commands: list[dict] = []

    def started(self, event):
        if event.command_name in _READS:
            self.commands.append(dict(event.command))

    def succeeded(self, event):
        pass

    def failed(self, event):
        pass


def _reads(command: dict):
    if "distinct" in command:
        return [(command["distinct"], command.get("query", {}), None, command.get("hint"))]
    return _filters(command)


@pytest.fixture
def traced(mongo_uri, fresh_db):
    Store(fresh_db).ensure_indexes()
    seed(fresh_db)
    recorder = _Recorder()
    client = MongoClient(mongo_uri, event_listeners=[recorder], tz_aware=True)
    yield SignalStore(open_database(client, fresh_db.name)), recorder
    client.close()


def _scans(db, commands) -> tuple[int, list]:
    reads = [r for command in commands for r in _reads(command)]
    scans = []
    for collection, query, sort, hint in reads:
        plan = winning_plan(db, collection, query, sort, hint)
        if "COLLSCAN" in set(_stages(plan)) or not set(_index_names(plan)):
            scans.append((collection, json.dumps(query, default=str), hint, plan))
    return len(reads), scans


def test_a_day_partition_and_its_checks_use_only_indexes(traced):
    reads, recorder = traced
    window = DayWindow.of(D1.date())
    compute_link_stats(reads, window)
    compute_token_signals(reads, window)
    checks.check_link_stats_recount(reads, window)
    checks.check_signals_cover_day(reads, window)
    collections = {c.get("find") or c.get("update") or c.get("distinct") for c in recorder.commands}
    assert {"tokens", "token_links", "contents", "accounts", "venues", "metric_series", "token_signals"} <= collections
    count, scans = _scans(reads.db, recorder.commands)
    assert count > 15
    assert scans == [], "\n".join(map(str, scans))


def test_the_clustering_and_its_check_use_only_indexes(traced):
    reads, recorder = traced
    window = DayWindow.of(D1.date())
    compute_clusters(reads, window, hub_limit=3)
    checks.check_one_cluster_per_token(reads, window)
    count, scans = _scans(reads.db, recorder.commands)
    assert count >= 5
    assert scans == [], "\n".join(map(str, scans))


def test_a_read_without_an_index_would_be_reported(traced):
    """The check can fail: `source_url` has no index, so this read is a collection scan."""
    reads, recorder = traced
    list(reads.db.token_links.find({"source_url": {"$exists": True}}))
    _, scans = _scans(reads.db, recorder.commands)
    assert [s[0] for s in scans] == ["token_links"]


def test_a_recomputed_day_and_the_cluster_retention_use_only_indexes(traced):
    """The second run of a day reads the stored documents to write only what changed, and the
    clustering deletes the sets older than its retention: those reads are index reads too."""
    reads, recorder = traced
    window = DayWindow.of(D1.date())
    for _ in range(2):
        compute_link_stats(reads, window)
        compute_token_signals(reads, window)
    compute_clusters(reads, DayWindow.of(D1.date() + timedelta(days=9)), hub_limit=3, retention_days=7)
    deletes = [c for c in recorder.commands if "delete" in c and c["delete"] == "token_clusters"]
    bounds = [d["q"]["input_cutoff"] for c in deletes for d in c["deletes"]]
    assert any(isinstance(b, dict) and "$lt" in b for b in bounds)  # the retention's range
    assert any(c.get("find") == "token_signals" for c in recorder.commands)
    count, scans = _scans(reads.db, recorder.commands)
    assert count > 20
    assert scans == [], "\n".join(map(str, scans))
