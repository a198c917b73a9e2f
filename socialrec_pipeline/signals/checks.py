"""The checks of the signal layer (SPEC §11), as `CheckOutcome`s like the integrity checks.

- `link_stats_recount`: on a random sample of the contents linked during the day, the stored
  `link_stats` agree with an independent recount (distinct tokens and first link, as of the stored
  `input_cutoff`).
- `signals_cover_day`: every token discovered during the day has its `token_signals` document,
  computed as of that day's cutoff.
- `one_cluster_per_token`: every token discovered up to the cutoff is a member of exactly one
  cluster of that cutoff, and no cluster holds a token that is not one of them.
"""

from __future__ import annotations

import random
from collections import Counter

from socialrec_pipeline.signals.window import DayWindow
from socialrec_pipeline.store.integrity import SAMPLE, CheckOutcome
from socialrec_pipeline.store.signals import SignalStore

#: Contents recounted per partition by `link_stats_recount`.
RECOUNT_SAMPLE = 200


def _outcome(name: str, offending: list[str], counts: dict[str, int], coverage: str) -> CheckOutcome:
    return CheckOutcome(
        name=name,
        passed=not offending,
        violations=len(offending),
        sample_ids=offending[:SAMPLE],
        counts={**counts, "violations": len(offending)},
        coverage=coverage,
    )


def check_link_stats_recount(
    reads: SignalStore, window: DayWindow, sample: int = RECOUNT_SAMPLE, rng: random.Random | None = None
) -> CheckOutcome:
    ids = reads.content_ids_linked_between(window.start, window.cutoff)
    chosen = (rng or random.Random()).sample(ids, min(sample, len(ids)))
    stored = reads.link_stats_of(chosen)
    offending = []
    for content_id in sorted(chosen, key=str):
        value = stored.get(content_id)
        if not value or value["input_cutoff"] < window.cutoff:
            offending.append(str(content_id))  # linked that day, but no stats as of the day
            continue
        count, first = reads.count_linking_tokens(content_id, value["input_cutoff"])
        if (count, first) != (value["link_count"], value["first_linked_at"]):
            offending.append(str(content_id))
    return _outcome(
        "link_stats_recount",
        offending,
        {"linked_contents": len(ids), "recounted": len(chosen)},
        f"recounted {len(chosen)} of the {len(ids)} contents linked on {window.day}",
    )


def check_signals_cover_day(reads: SignalStore, window: DayWindow) -> CheckOutcome:
    addresses = [t["address"] for t in reads.tokens_discovered_between(window.start, window.cutoff)]
    found = {d["token_address"]: d for d in reads.token_signals_of(addresses)}
    offending = [a for a in sorted(addresses) if a not in found or found[a]["input_cutoff"] != window.cutoff]
    return _outcome(
        "signals_cover_day",
        offending,
        {"tokens_discovered": len(addresses), "with_signals": len(addresses) - len(offending)},
        f"all {len(addresses)} tokens discovered on {window.day}",
    )


def check_one_cluster_per_token(reads: SignalStore, window: DayWindow) -> CheckOutcome:
    addresses = {t["address"] for t in reads.tokens_discovered_between(None, window.cutoff)}
    clusters = reads.cluster_memberships(window.cutoff)
    seen = Counter(member for cluster in clusters for member in cluster["members"])
    missing = sorted(addresses - set(seen))
    twice = sorted(a for a, n in seen.items() if n > 1)
    unknown = sorted(set(seen) - addresses)
    return _outcome(
        "one_cluster_per_token",
        missing + twice + unknown,
        {
            "tokens": len(addresses),
            "clusters": len(clusters),
            "missing": len(missing),
            "in_several": len(twice),
            "not_a_token": len(unknown),
        },
        f"all {len(addresses)} tokens discovered up to {window.cutoff.isoformat()}",
    )
