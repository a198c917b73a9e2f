"""Every signal on the hand-made graph of tests/signals/dataset.py, expected values worked out here.

Each expectation is written from the table in dataset.py, not read back from the code; a comment
says how it was derived.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from socialrec_pipeline.signals.clusters import compute_clusters
from socialrec_pipeline.signals.link_stats import compute_link_stats
from socialrec_pipeline.signals.token_signals import compute_token_signals
from socialrec_pipeline.signals.window import DayWindow
from socialrec_pipeline.store import Store
from socialrec_pipeline.store.signals import SignalStore
from tests.signals.dataset import A1, A2, B1, B2, D0, D1, Z1, Z2, L, T, at, seed

CUTOFF_D1 = D1 + timedelta(days=1) - timedelta(milliseconds=1)
NOW = at(D1 + timedelta(days=3), 6)


@pytest.fixture(scope="module")
def graph(mongo_db):
    Store(mongo_db).ensure_indexes()
    ids = seed(mongo_db)
    return SignalStore(mongo_db), ids


def _by_token(docs):
    return {d["token_address"]: d for d in docs}


def test_the_day_window_ends_at_the_last_millisecond():
    window = DayWindow.of("2026-11-10")
    assert (window.start, window.cutoff) == (D1, CUTOFF_D1)
    assert DayWindow.containing(at(D1, 23, 59)).day == window.day
    assert DayWindow.containing(D1 + timedelta(days=1)).day != window.day  # next midnight: next day


def test_token_signals_of_d1(graph):
    reads, ids = graph
    result = compute_token_signals(reads, DayWindow.of(D1.date()), now=NOW)
    docs = _by_token(result.docs)
    assert set(docs) == {T, L}  # the tokens discovered on D1
    t, l_ = docs[T], docs[L]

    # T reaches K1 (creator of C1, created 3 days before T), K2 (yt, 400 days) and K3 (ig, no
    # creation time: left out). The minimum is K1's 3 days.
    assert t["account_age_days"] == {"min": 3.0, "account_id": ids.K1, "by_platform": {"x": 3.0, "yt": 400.0}}
    # L was discovered one hour after T and reaches only K1: 3 days + 1 hour.
    assert l_["account_age_days"]["min"] == round(3 + 1 / 24, 6)
    assert l_["account_age_days"]["by_platform"] == {"x": round(3 + 1 / 24, 6)}

    # C1 was linked by A1 on D0 10:05, before T (D1 12:01) and L (D1 13:01): reused for both, and
    # A1's link is the earliest (T's link is earlier than L's too, but A1's comes first).
    assert t["reused_contents"] == [{"content_id": ids.C1, "first_token": A1, "first_linked_at": at(D0, 10, 5)}]
    assert l_["reused_contents"] == [{"content_id": ids.C1, "first_token": A1, "first_linked_at": at(D0, 10, 5)}]

    # domain:shared.io is carried by A1, A2 (D0) and T: for T, two earlier tokens. L has no domain.
    assert t["prior_tokens_same_domain"] == {"count": 2, "addresses": [A1, A2]}
    assert l_["prior_tokens_same_domain"] == {"count": 0, "addresses": []}

    # T's accounts: K1 (A1 linked C1, K1's content), K2 (A2 linked it directly), K3 (nobody else).
    # L's account K1 is shared with A1 (D0) and with T (discovered one hour before L).
    assert t["prior_tokens_same_accounts"] == {"count": 2, "addresses": [A1, A2]}
    assert l_["prior_tokens_same_accounts"] == {"count": 2, "addresses": [A1, T]}

    # W's bio holds T's address (stored D1 09:00); W2's too but it was stored on D2: not knowable.
    assert t["wallet_accounts"] == [{"account_id": ids.W, "platform": "x", "platform_key": f"key-{ids.W}"}]
    assert l_["wallet_accounts"] == []
    # T's address is in W's bio, in V2's description and in C2's title. C3's body holds it too, but
    # T linked C3 after the cutoff.
    assert t["ca_exposures"] == {"account_bios": 1, "venue_descriptions": 1, "content_texts": 1}
    assert l_["ca_exposures"] == {"account_bios": 0, "venue_descriptions": 0, "content_texts": 0}

    # C2 (yt viewCount): 100 at 10:00 → 900 at 14:00 = 800 / 4 h = 200 per hour (the D2 point is
    # after the cutoff). C1 (x likeCount): 10 → 58 over 24 h = 2 per hour. T takes the maximum.
    assert t["velocity"] == {
        "per_hour": 200.0, "content_id": ids.C2, "metric": "viewCount", "platform": "yt",
        "first_at": at(D1, 10), "last_at": at(D1, 14), "points": 3,
    }
    assert l_["velocity"] == {
        "per_hour": 2.0, "content_id": ids.C1, "metric": "likeCount", "platform": "x",
        "first_at": at(D0, 10), "last_at": at(D1, 10), "points": 2,
    }
    for doc in (t, l_):
        assert (doc["computed_at"], doc["input_cutoff"], doc["discovered_at"].date()) == (NOW, CUTOFF_D1, D1.date())

    figures = result.figures()
    assert figures["tokens_with_reused_content"] == 2
    assert figures["median_min_account_age_days"] == round((3.0 + 3 + 1 / 24) / 2, 3)


def test_token_signals_of_d0_see_only_d0(graph):
    reads, ids = graph
    docs = _by_token(compute_token_signals(reads, DayWindow.of(D0.date()), now=NOW).docs)
    assert set(docs) == {A1, A2, B1, B2, Z1, Z2}
    # A2 is the second token with domain:shared.io; T (D1) is not "prior" nor known yet.
    assert docs[A2]["prior_tokens_same_domain"] == {"count": 1, "addresses": [A1]}
    assert docs[A1]["prior_tokens_same_domain"] == {"count": 0, "addresses": []}
    # A1 linked C1 first: not a reuse. B1, Z1, Z2 share only the hub H (signals ignore no account:
    # the hub limit is a clustering rule) — Z1 sees A1 and B1 before it.
    assert docs[A1]["reused_contents"] == []
    assert docs[Z1]["prior_tokens_same_accounts"] == {"count": 2, "addresses": [A1, B1]}
    # A1 reaches K1 (created D1 12:00 - 3 days = D0 12:00 - 2 days; A1 was discovered D0 10:00,
    # so 2 days - 2 h later) and H (created 2000 days before T): the minimum is K1's.
    assert docs[A1]["account_age_days"]["min"] == round(2 - 2 / 24, 6)
    assert "velocity" not in docs[A2]  # no content, no series


def test_link_stats_of_d1(graph):
    reads, ids = graph
    result = compute_link_stats(reads, DayWindow.of(D1.date()), now=NOW)
    # Contents linked on D1: C1 (T, L; A1 on D0 counts too: 3 tokens, first D0 10:05) and C2 (T).
    # C3 was linked on D2 only.
    assert result.stats == {
        ids.C1: {"link_count": 3, "first_linked_at": at(D0, 10, 5), "computed_at": NOW, "input_cutoff": CUTOFF_D1},
        ids.C2: {"link_count": 1, "first_linked_at": at(D1, 12, 2), "computed_at": NOW, "input_cutoff": CUTOFF_D1},
    }
    assert reads.link_stats_of([ids.C1, ids.C3]) == {ids.C1: result.stats[ids.C1], ids.C3: None}


def test_clusters_as_of_d1_with_a_hub_limit_of_three(graph):
    reads, ids = graph
    result = compute_clusters(reads, DayWindow.of(D1.date()), hub_limit=3, now=NOW)
    # H is linked by A1, B1, Z1, Z2 by D1 (4 > 3): a hub, joins nothing (N1's link is on D2).
    # {T, A1, A2, L}: shared.io (A1, A2, T), K1 (A1 via C1, T, L), K2 (A2, T). {B1, B2}: V1.
    clusters = {d["cluster_id"]: d for d in result.docs}
    assert {cid: d["members"] for cid, d in clusters.items()} == {
        T: [T, A1, A2, L],  # T's address starts with a digit: the smallest
        B1: [B1, B2],
        Z1: [Z1],
        Z2: [Z2],
    }
    assert clusters[T]["joined_by"] == {"accounts": 2, "domains": 1}
    assert clusters[T]["examples"] == [
        {"kind": "accounts", "key": str(ids.K1), "tokens": 3},
        {"kind": "domains", "key": "domain:shared.io", "tokens": 3},
        {"kind": "accounts", "key": str(ids.K2), "tokens": 2},
    ]
    assert clusters[B1]["joined_by"] == {"venues": 1} and clusters[Z1]["joined_by"] == {}
    assert [d["size"] for d in result.docs] == [4, 2, 1, 1]
    assert result.hubs == 1
    assert all(d["input_cutoff"] == CUTOFF_D1 and d["computed_at"] == NOW for d in result.docs)
    stored = reads.clusters_as_of(CUTOFF_D1)
    assert [(d["cluster_id"], d["members"]) for d in stored] == [(d["cluster_id"], d["members"]) for d in result.docs]


def test_without_the_hub_limit_the_hub_merges_two_clusters(graph):
    reads, _ = graph
    result = compute_clusters(reads, DayWindow.of(D1.date()), hub_limit=50, now=NOW)
    # H (4 tokens) now joins A1's cluster with B1's and the lone Z1, Z2: one cluster of all 8.
    assert [d["members"] for d in result.docs] == [sorted([T, A1, A2, L, B1, B2, Z1, Z2])]
