"""`token_signals` (SPEC §11): one document per token, computed in its `discovered_at` day's partition.

Every value is as of the day's cutoff: links with `linked_at` ≤ cutoff, metric points with `at` ≤
cutoff, tokens with `discovered_at` ≤ cutoff. "Earlier" compares stored times; a tie is not earlier.
The reads are batched for all the day's tokens (one `$in` query per input, never one per token) and
each is served by an index (store/signals.py). docs/signals.md explains each field for the analyst.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from bson import ObjectId

from socialrec_pipeline.domain.enums import Platform
from socialrec_pipeline.signals.window import DayWindow
from socialrec_pipeline.store.signals import SignalStore

#: Each platform's main engagement metric, the one `velocity` measures.
MAIN_METRIC: dict[str, str] = {
    Platform.X: "likeCount",
    Platform.YOUTUBE: "viewCount",
    Platform.TIKTOK: "playCount",
    Platform.INSTAGRAM: "likesCount",
    Platform.REDDIT: "score",
    Platform.GITHUB: "stargazers_count",
}

#: Lists of other tokens keep this many addresses (the count is always complete).
EXAMPLES = 20
DOMAIN_PREFIX = "domain:"
_DAY = timedelta(days=1)
_HOUR = timedelta(hours=1)


@dataclass(frozen=True)
class TokenSignalsResult:
    docs: list[dict[str, Any]]
    written: int

    def figures(self) -> dict[str, float | int]:
        """The partition's numbers for the asset's metadata (plotted across partitions)."""
        ages = [d["account_age_days"]["min"] for d in self.docs if "account_age_days" in d]
        return {
            "tokens": len(self.docs),
            "tokens_with_reused_content": sum(1 for d in self.docs if d["reused_contents"]),
            "tokens_with_account_age": len(ages),
            "median_min_account_age_days": round(statistics.median(ages), 3) if ages else -1.0,
            "tokens_with_prior_same_domain": sum(1 for d in self.docs if d["prior_tokens_same_domain"]["count"]),
            "tokens_with_prior_same_accounts": sum(1 for d in self.docs if d["prior_tokens_same_accounts"]["count"]),
            "tokens_with_wallet_accounts": sum(1 for d in self.docs if d["wallet_accounts"]),
            "tokens_with_velocity": sum(1 for d in self.docs if "velocity" in d),
        }


def _others(candidates: dict[str, datetime], own: str, before: datetime) -> dict[str, Any]:
    """{count, addresses}: tokens discovered strictly before `before`, earliest first."""
    prior = sorted((at, address) for address, at in candidates.items() if address != own and at < before)
    return {"count": len(prior), "addresses": [address for _, address in prior[:EXAMPLES]]}


def _velocity(series: dict[str, Any], cutoff: datetime) -> dict[str, Any] | None:
    metric = MAIN_METRIC.get(series.get("platform", ""))
    if metric is None:
        return None
    points = sorted(
        (p["at"], p["metrics"][metric])
        for p in series.get("points", [])
        if p["at"] <= cutoff and isinstance(p.get("metrics", {}).get(metric), int | float)
    )
    if len(points) < 2 or points[-1][0] <= points[0][0]:
        return None
    (first_at, first), (last_at, last) = points[0], points[-1]
    return {
        "per_hour": round((last - first) / ((last_at - first_at) / _HOUR), 6),
        "content_id": series["object_id"],
        "metric": metric,
        "platform": series["platform"],
        "first_at": first_at,
        "last_at": last_at,
        "points": len(points),
    }


def _text_holds(doc: dict[str, Any], address: str) -> bool:
    text = doc.get("text") or {}
    return any(address in (text.get(part) or "") for part in ("primary", "body"))


@dataclass
class _Linked:
    """What the tokens' own links reach as of the cutoff (a content's creator counts as linked)."""

    contents: dict[str, set[ObjectId]]
    accounts: dict[str, set[ObjectId]]
    venues: dict[str, set[ObjectId]]
    #: (token, object) → the token's earliest link to it
    own_first: dict[tuple[str, ObjectId], datetime]
    content_rows: dict[ObjectId, dict[str, Any]]
    account_rows: dict[ObjectId, dict[str, Any]]
    venue_rows: dict[ObjectId, dict[str, Any]]


def _union(groups: dict[str, set[ObjectId]]) -> set[ObjectId]:
    return set().union(*groups.values()) if groups else set()


def _read_linked(reads: SignalStore, addresses: list[str], cutoff: datetime) -> _Linked:
    contents: dict[str, set[ObjectId]] = defaultdict(set)
    accounts: dict[str, set[ObjectId]] = defaultdict(set)
    venues: dict[str, set[ObjectId]] = defaultdict(set)
    own_first: dict[tuple[str, ObjectId], datetime] = {}
    for link in reads.links_of_tokens(addresses, cutoff):
        address, oid = link["token_address"], link["object_id"]
        {"contents": contents, "accounts": accounts, "venues": venues}[link["object"]][address].add(oid)
        key = (address, oid)
        if key not in own_first or link["linked_at"] < own_first[key]:
            own_first[key] = link["linked_at"]
    content_rows = {d["_id"]: d for d in reads.contents_by_id(_union(contents), ("creator_id", "platform", "text"))}
    for address, ids in contents.items():  # the creator of a linked content counts as linked
        accounts[address] |= {content_rows[c]["creator_id"] for c in ids if content_rows.get(c, {}).get("creator_id")}
    account_rows = {d["_id"]: d for d in reads.accounts_by_id(_union(accounts))}
    venue_rows = {d["_id"]: d for d in reads.venues_by_id(_union(venues))}
    return _Linked(contents, accounts, venues, own_first, content_rows, account_rows, venue_rows)


@dataclass
class _Others:
    """Other tokens' links (≤ cutoff) to the same contents, to the same accounts, and to contents those
    accounts created: content reuse and prior tokens with the same accounts."""

    links_by_object: dict[ObjectId, list[dict[str, Any]]]
    tokens_of_account: dict[ObjectId, set[str]]
    discovered: dict[str, datetime]


def _read_others(reads: SignalStore, linked: _Linked, cutoff: datetime, known: dict[str, datetime]) -> _Others:
    account_ids = _union(linked.accounts)
    created = {d["_id"]: d["creator_id"] for d in reads.content_ids_by_creators(account_ids)}
    links_by_object: dict[ObjectId, list[dict[str, Any]]] = defaultdict(list)
    for link in reads.links_to_objects(_union(linked.contents) | account_ids | set(created), cutoff):
        links_by_object[link["object_id"]].append(link)
    tokens_of_account: dict[ObjectId, set[str]] = defaultdict(set)
    for oid, links in links_by_object.items():
        for link in links:
            if link["object"] == "accounts":
                tokens_of_account[oid].add(link["token_address"])
            elif link["object"] == "contents" and oid in created:
                tokens_of_account[created[oid]].add(link["token_address"])
    account_tokens = set().union(*tokens_of_account.values()) if tokens_of_account else set()
    # the partition's own tokens are known already: only the others are read
    discovered = {address: at for address, at in known.items() if address in account_tokens}
    discovered |= {d["address"]: d["discovered_at"] for d in reads.tokens_by_address(account_tokens - set(known))}
    return _Others(links_by_object, tokens_of_account, discovered)


def _read_same_domain(
    reads: SignalStore, tokens: list[dict[str, Any]], cutoff: datetime
) -> tuple[dict[str, list[str]], dict[str, dict[str, datetime]]]:
    """(each token's `domain:` fingerprints, fingerprint → earlier tokens carrying it with their times)."""
    fingerprints = {
        t["address"]: sorted(f for f in t.get("fingerprints") or [] if f.startswith(DOMAIN_PREFIX)) for t in tokens
    }
    all_fps = set().union(*fingerprints.values()) if fingerprints else set()
    latest = max((t["discovered_at"] for t in tokens), default=cutoff)
    same_domain: dict[str, dict[str, datetime]] = defaultdict(dict)
    for other in reads.tokens_with_fingerprints_before(all_fps, latest):
        for fp in other.get("fingerprints") or []:
            if fp in all_fps:
                same_domain[fp][other["address"]] = other["discovered_at"]
    return fingerprints, same_domain


def _read_wallet_holders(reads: SignalStore, addresses: list[str], cutoff: datetime) -> dict[str, list[dict[str, Any]]]:
    holders: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for account in reads.accounts_with_wallets(addresses, cutoff):
        for wallet in account.get("known_wallets") or []:
            holders[wallet].append(
                {"account_id": account["_id"], "platform": account["platform"], "platform_key": account["platform_key"]}
            )
    return holders


def _account_age(linked: _Linked, address: str, found_at: datetime) -> dict[str, Any] | None:
    by_platform: dict[str, float] = {}
    youngest: tuple[float, str] | None = None
    for account_id in linked.accounts.get(address, ()):
        row = linked.account_rows.get(account_id)
        if row is None or row.get("account_created_at") is None:
            continue
        days = round((found_at - row["account_created_at"]) / _DAY, 6)
        platform = row["platform"]
        by_platform[platform] = min(days, by_platform.get(platform, days))
        if youngest is None or (days, str(account_id)) < youngest:
            youngest = (days, str(account_id))
    if youngest is None:
        return None
    return {"min": youngest[0], "account_id": ObjectId(youngest[1]), "by_platform": dict(sorted(by_platform.items()))}


def _reused_contents(linked: _Linked, others: _Others, address: str) -> list[dict[str, Any]]:
    reused = []
    for content_id in sorted(linked.contents.get(address, ()), key=str):
        mine = linked.own_first[(address, content_id)]
        earlier = sorted(
            (link["linked_at"], link["token_address"])
            for link in others.links_by_object.get(content_id, ())
            if link["token_address"] != address and link["linked_at"] < mine
        )
        if earlier:
            first_at, first_token = earlier[0]
            reused.append({"content_id": content_id, "first_token": first_token, "first_linked_at": first_at})
    return reused


def _ca_exposures(linked: _Linked, address: str, holders: list[dict[str, Any]]) -> dict[str, int]:
    return {
        "account_bios": len(holders),
        "venue_descriptions": sum(
            1
            for v in linked.venues.get(address, ())
            if address in (linked.venue_rows.get(v, {}).get("description") or "")
        ),
        "content_texts": sum(
            1 for c in linked.contents.get(address, ()) if _text_holds(linked.content_rows.get(c, {}), address)
        ),
    }


def signals_for(
    reads: SignalStore, tokens: list[dict[str, Any]], cutoff: datetime, now: datetime
) -> list[dict[str, Any]]:
    """The signal documents of `tokens` (each with address, discovered_at, fingerprints) as of `cutoff`."""
    addresses = [t["address"] for t in tokens]
    linked = _read_linked(reads, addresses, cutoff)
    others = _read_others(reads, linked, cutoff, {t["address"]: t["discovered_at"] for t in tokens})
    fingerprints, same_domain = _read_same_domain(reads, tokens, cutoff)
    wallet_holders = _read_wallet_holders(reads, addresses, cutoff)
    series = {d["object_id"]: d for d in reads.content_series(_union(linked.contents))}
    docs = []
    for token in tokens:
        address, found_at = token["address"], token["discovered_at"]
        doc: dict[str, Any] = {"token_address": address, "discovered_at": found_at}
        age = _account_age(linked, address, found_at)
        if age is not None:
            doc["account_age_days"] = age
        doc["reused_contents"] = _reused_contents(linked, others, address)
        domain_candidates: dict[str, datetime] = {}
        for fp in fingerprints[address]:
            domain_candidates.update(same_domain.get(fp, {}))
        doc["prior_tokens_same_domain"] = _others(domain_candidates, address, found_at)
        account_candidates = {
            other: others.discovered[other]
            for account_id in linked.accounts.get(address, ())
            for other in others.tokens_of_account.get(account_id, ())
            if other in others.discovered
        }
        doc["prior_tokens_same_accounts"] = _others(account_candidates, address, found_at)
        holders = sorted(wallet_holders.get(address, []), key=lambda a: str(a["account_id"]))
        doc["wallet_accounts"] = holders
        doc["ca_exposures"] = _ca_exposures(linked, address, holders)
        contents = linked.contents.get(address, ())
        candidates = [v for c in contents if c in series and (v := _velocity(series[c], cutoff))]
        if candidates:
            doc["velocity"] = max(candidates, key=lambda v: (v["per_hour"], str(v["content_id"])))
        doc["computed_at"] = now
        doc["input_cutoff"] = cutoff
        docs.append(doc)
    return docs


def compute_token_signals(reads: SignalStore, window: DayWindow, now: datetime | None = None) -> TokenSignalsResult:
    """Compute and write the signals of every token discovered during the window's day."""
    now = now or datetime.now(UTC)
    tokens = reads.tokens_discovered_between(window.start, window.cutoff)
    docs = signals_for(reads, tokens, window.cutoff, now)
    return TokenSignalsResult(docs=docs, written=reads.write_token_signals(docs))
