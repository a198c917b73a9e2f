"""Retention of `token_clusters` (docs/signals.md): a clustering run deletes the sets whose cutoff is
more than `retention_days` days before its own, never its own set nor a later one, so the schedule
keeps the last days and a backfill of an old day removes nothing newer."""

from __future__ import annotations

from datetime import timedelta

from socialrec_pipeline.signals.clusters import compute_clusters
from socialrec_pipeline.signals.window import DayWindow
from socialrec_pipeline.store import Store
from socialrec_pipeline.store.signals import SignalStore
from tests.signals.dataset import D0, D1, seed

DAY0, DAY1 = DayWindow.of(D0.date()), DayWindow.of(D1.date())
#: Eight days after D1: D1's cutoff is then exactly 8 days before this day's cutoff.
LATER = DayWindow.of((D1 + timedelta(days=8)).date())


def _cutoffs(db) -> list:
    return sorted({d["input_cutoff"] for d in db.token_clusters.find({}, {"input_cutoff": 1})})


def test_a_run_deletes_the_sets_older_than_the_retention_and_keeps_the_rest(fresh_db):
    Store(fresh_db).ensure_indexes()
    seed(fresh_db)
    reads = SignalStore(fresh_db)
    zero = compute_clusters(reads, DAY0, hub_limit=3, retention_days=7)
    first = compute_clusters(reads, DAY1, hub_limit=3, retention_days=7)
    assert first.pruned == 0 and _cutoffs(fresh_db) == [DAY0.cutoff, DAY1.cutoff]
    # D0: {A1, A2} (domain), {B1, B2} (V1), Z1, Z2 (H, 4 tokens, is a hub); D1: T and L join A1's
    assert len(zero.docs) == 4 and len(first.docs) == 4

    # Retention 8: D1's set is exactly 8 days old and stays; D0's (9 days) goes.
    later = compute_clusters(reads, LATER, hub_limit=3, retention_days=8)
    assert later.pruned == len(zero.docs)
    assert _cutoffs(fresh_db) == [DAY1.cutoff, LATER.cutoff]

    # Retention 7: D1's set is now one day too old.
    again = compute_clusters(reads, LATER, hub_limit=3, retention_days=7)
    assert again.pruned == len(first.docs)
    assert _cutoffs(fresh_db) == [LATER.cutoff]


def test_a_backfill_of_an_old_day_keeps_the_newer_sets(fresh_db):
    Store(fresh_db).ensure_indexes()
    seed(fresh_db)
    reads = SignalStore(fresh_db)
    day1 = compute_clusters(reads, DAY1, hub_limit=3, retention_days=7)
    compute_clusters(reads, LATER, hub_limit=3, retention_days=30)
    backfill = compute_clusters(reads, DAY0, hub_limit=3, retention_days=1)
    assert backfill.pruned == 0
    assert _cutoffs(fresh_db) == [DAY0.cutoff, DAY1.cutoff, LATER.cutoff]
    # the next regular run removes what is out of its window, the backfilled day included
    regular = compute_clusters(reads, LATER, hub_limit=3, retention_days=7)
    assert regular.pruned == len(backfill.docs) + len(day1.docs)
    assert _cutoffs(fresh_db) == [LATER.cutoff]
