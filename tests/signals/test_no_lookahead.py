"""No look-ahead (SPEC §11): a past partition recomputed after newer data arrived is unchanged, and a
link or metric point written after the cutoff never changes a value (one written at the cutoff does).
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from bson import ObjectId

from socialrec_pipeline.signals.clusters import compute_clusters
from socialrec_pipeline.signals.link_stats import compute_link_stats
from socialrec_pipeline.signals.token_signals import compute_token_signals
from socialrec_pipeline.signals.window import DayWindow
from socialrec_pipeline.store import Store
from socialrec_pipeline.store.signals import SignalStore
from tests.signals.dataset import D1, D2, L, T, at, link, point, seed

DAY1, DAY2 = DayWindow.of(D1.date()), DayWindow.of(D2.date())
FIRST_RUN, SECOND_RUN = at(D2 + timedelta(days=1), 1), at(D2 + timedelta(days=5), 1)
HUB_LIMIT = 3


def _without(docs, *fields):
    return [{k: v for k, v in d.items() if k not in fields} for d in docs]


def _stored_signals(db):
    docs = db.token_signals.find({"token_address": {"$in": [T, L]}}).sort("token_address", 1)
    return _without(docs, "_id", "computed_at")


def _compute_day(reads, window, now):
    return (
        compute_link_stats(reads, window, now=now),
        compute_token_signals(reads, window, now=now),
        compute_clusters(reads, window, hub_limit=HUB_LIMIT, now=now),
    )


def _newer_data(db, ids) -> None:
    """Everything a later day brings: a token on the same domain, accounts and contents; links from
    D1's tokens to new objects; metric points; an account whose bio holds T's address."""
    n2, content, account = "N2tok", ObjectId(), ObjectId()
    db.tokens.insert_one({"address": n2, "discovered_at": at(D2, 10), "fingerprints": ["domain:shared.io"],
                          "social_urls": [], "created_at": at(D2, 10)})
    db.accounts.insert_one({"_id": account, "platform": "x", "platform_key": "late", "known_wallets": [T],
                            "account_created_at": at(D2, 1), "created_at": at(D2, 11)})
    db.contents.insert_one({"_id": content, "platform": "x", "subtype": "tweet", "creator_id": account,
                            "text": {"primary": T}, "created_at": at(D2, 11),
                            "source_urls": [{"url": f"https://x.com/late/status/{content}", "status": "ok",
                                             "observed_at": at(D2, 11)}]})
    db.token_links.insert_many([
        link(n2, "contents", ids.C1, at(D2, 10, 1)),
        link(n2, "accounts", ids.K2, at(D2, 10, 2), "yt"),
        link(n2, "venues", ids.V1, at(D2, 10, 3), "tg"),
        link(T, "contents", content, at(D2, 11, 1)),
        link(L, "contents", ids.C2, at(D2, 11, 2), "yt"),
        link(L, "accounts", ids.H, at(D2, 11, 3)),
    ])
    db.metric_series.update_one({"object": "contents", "object_id": ids.C1},
                                {"$push": {"points": point(at(D2, 12), likeCount=10_000)}})
    db.metric_series.update_one({"object": "contents", "object_id": ids.C2},
                                {"$push": {"points": point(at(D2, 12), viewCount=9_000_000)}})


def test_a_past_partition_recomputed_after_newer_data_is_unchanged(fresh_db):
    Store(fresh_db).ensure_indexes()
    ids = seed(fresh_db)
    reads = SignalStore(fresh_db)
    stats_before, signals_before, clusters_before = _compute_day(reads, DAY1, FIRST_RUN)
    stored_before = _stored_signals(fresh_db)
    assert len(stored_before) == 2 and clusters_before.docs

    _newer_data(fresh_db, ids)
    _compute_day(reads, DAY2, FIRST_RUN)  # the later day is computed: newer link_stats exist
    newer_stats = reads.link_stats_of([ids.C1])[ids.C1]
    assert newer_stats["input_cutoff"] == DAY2.cutoff and newer_stats["link_count"] == 4  # N2 added one
    stats_after, signals_after, clusters_after = _compute_day(reads, DAY1, SECOND_RUN)

    assert _without(stats_after.stats.values(), "computed_at") == _without(stats_before.stats.values(), "computed_at")
    assert _without(signals_after.docs, "computed_at") == _without(signals_before.docs, "computed_at")
    assert _stored_signals(fresh_db) == stored_before
    assert _without(clusters_after.docs, "computed_at") == _without(clusters_before.docs, "computed_at")
    stored_clusters = reads.clusters_as_of(DAY1.cutoff)
    assert _without(stored_clusters, "computed_at") == _without(clusters_before.docs, "computed_at")
    assert {d["computed_at"] for d in stored_clusters} == {SECOND_RUN}
    # The backfill of D1 did not replace the link stats a later day computed.
    assert reads.link_stats_of([ids.C1])[ids.C1] == newer_stats


@pytest.mark.parametrize(
    ("offset", "changes"),
    [(timedelta(0), True), (timedelta(milliseconds=1), False), (timedelta(hours=5), False)],
    ids=["at-the-cutoff", "one-ms-after", "hours-after"],
)
def test_a_link_or_point_after_the_cutoff_changes_nothing(fresh_db, offset, changes):
    Store(fresh_db).ensure_indexes()
    ids = seed(fresh_db)
    reads = SignalStore(fresh_db)
    before = _compute_day(reads, DAY1, FIRST_RUN)
    when = DAY1.cutoff + offset
    # L links C2 (T's video: reuse, velocity, link count) and K2 (A2's and T's channel: prior
    # accounts, clusters); C2 gets a huge point.
    fresh_db.token_links.insert_many([link(L, "contents", ids.C2, when, "yt"), link(L, "accounts", ids.K2, when, "yt")])
    fresh_db.metric_series.update_one({"object": "contents", "object_id": ids.C2},
                                      {"$push": {"points": point(when, viewCount=50_000_000)}})
    after = _compute_day(reads, DAY1, FIRST_RUN)
    t_before = next(d for d in before[1].docs if d["token_address"] == T)
    t_after = next(d for d in after[1].docs if d["token_address"] == T)
    l_before = next(d for d in before[1].docs if d["token_address"] == L)
    l_after = next(d for d in after[1].docs if d["token_address"] == L)
    assert (t_after["velocity"] != t_before["velocity"]) is changes
    assert (l_after["reused_contents"] != l_before["reused_contents"]) is changes
    assert (after[0].stats.get(ids.C2) != before[0].stats.get(ids.C2)) is changes
    assert (after[2].docs != before[2].docs) is changes
    if not changes:
        assert after[0].stats == before[0].stats and after[1].docs == before[1].docs
