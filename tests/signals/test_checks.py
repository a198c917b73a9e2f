"""The three checks of the signal layer pass on computed data and name what is wrong when it is not."""

from __future__ import annotations

import random
from datetime import timedelta

from socialrec_pipeline.signals import checks
from socialrec_pipeline.signals.clusters import compute_clusters
from socialrec_pipeline.signals.link_stats import compute_link_stats
from socialrec_pipeline.signals.token_signals import compute_token_signals
from socialrec_pipeline.signals.window import DayWindow
from socialrec_pipeline.store import Store
from socialrec_pipeline.store.signals import SignalStore
from tests.signals.dataset import A2, D1, Z1, L, T, at, seed

DAY1 = DayWindow.of(D1.date())


def _computed(db):
    Store(db).ensure_indexes()
    ids = seed(db)
    reads = SignalStore(db)
    compute_link_stats(reads, DAY1)
    compute_token_signals(reads, DAY1)
    compute_clusters(reads, DAY1, hub_limit=3)
    return reads, ids


def test_all_three_pass_on_computed_data(fresh_db):
    reads, _ = _computed(fresh_db)
    outcomes = [
        checks.check_link_stats_recount(reads, DAY1, rng=random.Random(1)),
        checks.check_signals_cover_day(reads, DAY1),
        checks.check_one_cluster_per_token(reads, DAY1),
    ]
    assert [(o.passed, o.violations) for o in outcomes] == [(True, 0)] * 3
    assert outcomes[0].counts["recounted"] == 2  # C1 and C2 were linked on D1
    assert outcomes[1].counts == {"tokens_discovered": 2, "with_signals": 2, "violations": 0}
    assert outcomes[2].counts["tokens"] == 8 and outcomes[2].counts["clusters"] == 4


def test_a_wrong_link_count_fails_the_recount(fresh_db):
    reads, ids = _computed(fresh_db)
    fresh_db.contents.update_one({"_id": ids.C1}, {"$set": {"link_stats.link_count": 2}})
    outcome = checks.check_link_stats_recount(reads, DAY1)
    assert (outcome.passed, outcome.sample_ids) == (False, [str(ids.C1)])


def test_a_content_linked_that_day_without_stats_fails_the_recount(fresh_db):
    reads, ids = _computed(fresh_db)
    fresh_db.contents.update_one({"_id": ids.C2}, {"$unset": {"link_stats": ""}})
    assert checks.check_link_stats_recount(reads, DAY1).sample_ids == [str(ids.C2)]


def test_a_token_of_the_day_without_signals_fails_coverage(fresh_db):
    reads, _ = _computed(fresh_db)
    fresh_db.token_signals.delete_one({"token_address": L})
    # A token recorded later that day (after the partition ran) is missing too.
    fresh_db.tokens.insert_one({"address": "Late1", "discovered_at": at(D1, 23), "fingerprints": []})
    outcome = checks.check_signals_cover_day(reads, DAY1)
    assert (outcome.passed, outcome.sample_ids) == (False, ["Late1", L])
    assert outcome.counts["tokens_discovered"] == 3


def test_a_token_in_two_clusters_or_in_none_fails_membership(fresh_db):
    reads, _ = _computed(fresh_db)
    fresh_db.token_clusters.update_one({"input_cutoff": DAY1.cutoff, "cluster_id": Z1}, {"$set": {"members": [Z1, A2]}})
    fresh_db.token_clusters.update_one({"input_cutoff": DAY1.cutoff, "cluster_id": T}, {"$pull": {"members": L}})
    outcome = checks.check_one_cluster_per_token(reads, DAY1)
    assert not outcome.passed
    assert (outcome.counts["missing"], outcome.counts["in_several"], outcome.counts["not_a_token"]) == (1, 1, 0)
    assert outcome.sample_ids == [L, A2]


def test_clusters_of_another_cutoff_do_not_count(fresh_db):
    reads, _ = _computed(fresh_db)
    assert checks.check_one_cluster_per_token(reads, DayWindow.of(D1.date() + timedelta(days=1))).counts[
        "missing"
    ] == 9  # D2's cutoff: all nine tokens, and no cluster computed for it
