"""`token_clusters` (SPEC §11): which tokens come from the same people, as of a cutoff.

Tokens discovered ≤ cutoff are joined when they share an account (linked directly, or the creator
of a linked content), a venue, or a `domain:` fingerprint, through links with `linked_at` ≤ cutoff;
a cluster is a connected component. An object shared by more than `cluster_hub_limit` tokens is a
hub (an exchange's account, a big channel, a shared host) and joins nothing: it would merge
unrelated launches into one component. Every token is in exactly one cluster (a lone token is a
cluster of one). A cluster's id is its smallest member address.

Each cutoff keeps its own set, replaced whole when its day is recomputed. Retention: a run deletes
the sets whose cutoff is more than `cluster_retention_days` days before its own, never a later one,
so the schedule keeps the last days and a backfill of old days never removes newer sets.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from socialrec_pipeline.signals.settings import DEFAULT_HUB_LIMIT, DEFAULT_RETENTION_DAYS
from socialrec_pipeline.signals.token_signals import DOMAIN_PREFIX
from socialrec_pipeline.signals.window import DayWindow
from socialrec_pipeline.store.signals import SignalStore

#: A cluster keeps this many example joining objects (its counts per kind are complete).
EXAMPLES = 20
#: Size buckets of the "clusters by size" plot: (label, smallest, largest).
SIZE_BUCKETS = (("1", 1, 1), ("2", 2, 2), ("3_5", 3, 5), ("6_20", 6, 20), ("21_plus", 21, 10**12))

ObjectKey = tuple[str, str]  # (kind, id): ("accounts", "<ObjectId>"), ("venues", …), ("domains", "domain:x")


class _UnionFind:
    def __init__(self) -> None:
        self.parent: dict[str, str] = {}

    def find(self, item: str) -> str:
        root = item
        while self.parent.setdefault(root, root) != root:
            root = self.parent[root]
        while self.parent[item] != root:  # path compression
            self.parent[item], item = root, self.parent[item]
        return root

    def union(self, a: str, b: str) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)


@dataclass
class ClustersResult:
    docs: list[dict[str, Any]]
    hubs: int
    written: int = 0
    #: documents of older cutoffs deleted by the retention rule
    pruned: int = 0
    sizes: Counter[int] = field(default_factory=Counter)

    def figures(self) -> dict[str, int]:
        """Clusters by size (the plot), with totals."""
        out = {
            "tokens": sum(d["size"] for d in self.docs),
            "clusters": len(self.docs),
            "largest_cluster": max((d["size"] for d in self.docs), default=0),
            "hubs_ignored": self.hubs,
        }
        for label, low, high in SIZE_BUCKETS:
            out[f"clusters_size_{label}"] = sum(1 for d in self.docs if low <= d["size"] <= high)
        return out


def objects_of_tokens(reads: SignalStore, tokens: list[dict[str, Any]], cutoff: datetime) -> dict[ObjectKey, set[str]]:
    """Every joining object → the tokens that reach it as of `cutoff`."""
    holders: dict[ObjectKey, set[str]] = defaultdict(set)
    for token in tokens:
        for fp in token.get("fingerprints") or []:
            if fp.startswith(DOMAIN_PREFIX):
                holders[("domains", fp)].add(token["address"])
    linked_contents: dict[Any, set[str]] = defaultdict(set)
    known = {t["address"] for t in tokens}
    for link in reads.links_up_to(cutoff):
        if link["token_address"] not in known:
            continue  # a link whose token has no marker yet (or was discovered after the cutoff)
        kind = link["object"]
        if kind == "contents":
            linked_contents[link["object_id"]].add(link["token_address"])
        else:
            holders[(kind, str(link["object_id"]))].add(link["token_address"])
    creators = reads.content_creators()
    for content_id, linking in linked_contents.items():
        if content_id in creators:
            holders[("accounts", str(creators[content_id]))] |= linking
    return holders


def cluster_tokens(
    addresses: list[str], holders: dict[ObjectKey, set[str]], hub_limit: int, cutoff: datetime, now: datetime
) -> ClustersResult:
    """Connected components of `addresses` over the non-hub objects of `holders`."""
    forest = _UnionFind()
    for address in addresses:
        forest.find(address)
    hubs = 0
    joining: list[tuple[ObjectKey, set[str]]] = []
    for key, tokens in holders.items():
        if len(tokens) > hub_limit:
            hubs += 1
            continue
        if len(tokens) < 2:
            continue
        joining.append((key, tokens))
        first, *rest = sorted(tokens)
        for other in rest:
            forest.union(first, other)
    members: dict[str, list[str]] = defaultdict(list)
    for address in addresses:
        members[forest.find(address)].append(address)
    joined: dict[str, list[tuple[ObjectKey, int]]] = defaultdict(list)
    for key, tokens in joining:
        joined[forest.find(next(iter(tokens)))].append((key, len(tokens)))
    docs: list[dict[str, Any]] = []
    for root, group in members.items():
        group.sort()
        objects = sorted(joined.get(root, []), key=lambda item: (-item[1], item[0]))
        docs.append(
            {
                "cluster_id": group[0],
                "members": group,
                "size": len(group),
                "joined_by": dict(sorted(Counter(kind for (kind, _), _n in objects).items())),
                "examples": [{"kind": kind, "key": key, "tokens": n} for (kind, key), n in objects[:EXAMPLES]],
                "computed_at": now,
                "input_cutoff": cutoff,
            }
        )
    docs.sort(key=lambda d: (-d["size"], d["cluster_id"]))
    return ClustersResult(docs=docs, hubs=hubs)


def compute_clusters(
    reads: SignalStore,
    window: DayWindow,
    hub_limit: int = DEFAULT_HUB_LIMIT,
    now: datetime | None = None,
    retention_days: int = DEFAULT_RETENTION_DAYS,
) -> ClustersResult:
    """Compute the clusters of all tokens discovered up to the window's cutoff, replace that
    cutoff's stored set with them, and delete the sets more than `retention_days` days older."""
    now = now or datetime.now(UTC)
    tokens = reads.tokens_discovered_between(None, window.cutoff)
    holders = objects_of_tokens(reads, tokens, window.cutoff)
    result = cluster_tokens([t["address"] for t in tokens], holders, hub_limit, window.cutoff, now)
    result.written = reads.replace_clusters(window.cutoff, result.docs)
    result.pruned = reads.prune_clusters(window.cutoff - timedelta(days=retention_days))
    return result


def largest_table(docs: list[dict[str, Any]], limit: int = 20) -> list[dict[str, Any]]:
    """Rows of the "largest clusters" table: id, size, what joined them, a few members."""
    return [
        {
            "cluster_id": d["cluster_id"],
            "size": d["size"],
            "joined_by": ", ".join(f"{kind} {n}" for kind, n in d["joined_by"].items()) or "-",
            "examples": ", ".join(e["key"] for e in d["examples"][:3]) or "-",
            "members": ", ".join(d["members"][:5]) + (" …" if d["size"] > 5 else ""),
        }
        for d in docs[:limit]
    ]
