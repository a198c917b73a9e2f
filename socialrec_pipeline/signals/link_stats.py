"""`contents.link_stats` (SPEC §11): how many distinct tokens had linked a content by the cutoff.

For each content linked during the day: `link_count` = distinct tokens with a link to it whose
`linked_at` ≤ cutoff, `first_linked_at` = the earliest such `linked_at`. Written with the cutoff and
the computation time; a stored value with a newer cutoff is kept (a backfill of an older day never
replaces what a later day computed).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from bson import ObjectId

from socialrec_pipeline.signals.window import DayWindow
from socialrec_pipeline.store.signals import SignalStore


@dataclass(frozen=True)
class LinkStatsResult:
    stats: dict[ObjectId, dict[str, Any]]
    written: int


def stats_as_of(
    reads: SignalStore, content_ids: list[ObjectId], cutoff: datetime, now: datetime
) -> dict[ObjectId, dict[str, Any]]:
    """The link stats of `content_ids` as of `cutoff` (contents without a link by then are left out)."""
    tokens: dict[ObjectId, set[str]] = {}
    first: dict[ObjectId, datetime] = {}
    for link in reads.links_to_objects(content_ids, cutoff):
        oid = link["object_id"]
        tokens.setdefault(oid, set()).add(link["token_address"])
        if oid not in first or link["linked_at"] < first[oid]:
            first[oid] = link["linked_at"]
    return {
        oid: {"link_count": len(tokens[oid]), "first_linked_at": first[oid], "computed_at": now, "input_cutoff": cutoff}
        for oid in content_ids
        if oid in tokens
    }


def compute_link_stats(reads: SignalStore, window: DayWindow, now: datetime | None = None) -> LinkStatsResult:
    """Compute and write the link stats of every content linked during the window's day."""
    now = now or datetime.now(UTC)
    ids = reads.content_ids_linked_between(window.start, window.cutoff)
    stats = stats_as_of(reads, ids, window.cutoff, now)
    return LinkStatsResult(stats=stats, written=reads.write_link_stats(stats))
