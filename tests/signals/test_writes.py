"""A partition writes only what changed: a recomputed day whose values are the same rewrites no
content and no token_signals document (an update is the costliest operation of the embedded
server), and a changed value is still written."""

from __future__ import annotations

from datetime import timedelta

from socialrec_pipeline.signals.link_stats import compute_link_stats
from socialrec_pipeline.signals.token_signals import compute_token_signals
from socialrec_pipeline.signals.window import DayWindow
from socialrec_pipeline.store import Store
from socialrec_pipeline.store.signals import SignalStore
from tests.signals.dataset import D1, L, T, at, link, seed

DAY1 = DayWindow.of(D1.date())
FIRST, SECOND = at(D1 + timedelta(days=1), 1), at(D1 + timedelta(days=2), 1)


def test_a_recomputed_day_writes_only_the_changed_values(fresh_db):
    Store(fresh_db).ensure_indexes()
    ids = seed(fresh_db)
    reads = SignalStore(fresh_db)
    stats = compute_link_stats(reads, DAY1, now=FIRST)
    signals = compute_token_signals(reads, DAY1, now=FIRST)
    assert stats.written == len(stats.stats) > 0 and signals.written == len(signals.docs) == 2

    again_stats = compute_link_stats(reads, DAY1, now=SECOND)
    again_signals = compute_token_signals(reads, DAY1, now=SECOND)
    assert (again_stats.written, again_signals.written) == (0, 0)
    assert {d["computed_at"] for d in fresh_db.token_signals.find({"token_address": {"$in": [T, L]}})} == {FIRST}

    # L links C2 during D1: C2's count and L's reused contents change, T's signals do not.
    fresh_db.token_links.insert_one(link(L, "contents", ids.C2, at(D1, 20), "yt"))
    third_stats = compute_link_stats(reads, DAY1, now=SECOND)
    third_signals = compute_token_signals(reads, DAY1, now=SECOND)
    assert third_stats.written == 1 and reads.link_stats_of([ids.C2])[ids.C2]["computed_at"] == SECOND
    assert third_signals.written == 1
    stored = {d["token_address"]: d for d in fresh_db.token_signals.find({"token_address": {"$in": [T, L]}})}
    assert (stored[T]["computed_at"], stored[L]["computed_at"]) == (FIRST, SECOND)
    assert [r["content_id"] for r in stored[L]["reused_contents"]] == sorted([ids.C1, ids.C2], key=str)
