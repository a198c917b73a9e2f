"""Every index the product needs, created by one idempotent `ensure_indexes(db)`.

Names, key order, uniqueness and partial filters are a contract asserted by tests. Each product
query is served by one of these (the embedded server is very slow on collection scans).

Decisions worth knowing:
- `uniq_venues_platform_key` is `{platform, platform_key}`, without `subtype`. A venue's identity
  is (platform, platform_key) (SPEC §4); a Telegram page can turn from channel into group or an
  empty shell, and must stay one row whose subtype is refreshed, not become a second venue.
- `accounts` / `venues` keys are required, so their unique indexes are not partial.
- `contents` uniqueness is database-enforced on both identity axes (SPEC §4 improvement): the
  `platform_key` index is partial because searches and unknown URLs have no key, and a stored
  `null` is never written (models drop None fields), so key-less rows do not collide.
"""

from __future__ import annotations

from typing import Any

from pymongo import ASCENDING, DESCENDING, IndexModel
from pymongo.database import Database

from socialrec_pipeline.domain.enums import RETRY_PARTITIONS
from socialrec_pipeline.store.collections import (
    ACCOUNTS,
    CONTENTS,
    METRIC_SERIES,
    TOKEN_CLUSTERS,
    TOKEN_LINKS,
    TOKEN_SIGNALS,
    TOKENS,
    VENUES,
    collection,
)


def _exists(field: str) -> dict[str, Any]:
    return {field: {"$exists": True}}


INDEXES: dict[str, list[IndexModel]] = {
    CONTENTS: [
        IndexModel([("source_urls.url", ASCENDING)], name="uniq_contents_source_url", unique=True),
        IndexModel(
            [("platform", ASCENDING), ("subtype", ASCENDING)], name="idx_contents_platform_subtype"
        ),
        IndexModel(
            [("platform", ASCENDING), ("subtype", ASCENDING), ("platform_key", ASCENDING)],
            name="uniq_contents_platform_key",
            unique=True,
            partialFilterExpression=_exists("platform_key"),
        ),
        IndexModel(
            [("creator_id", ASCENDING), ("published_at", DESCENDING)],
            name="idx_contents_creator_published",
            partialFilterExpression=_exists("creator_id"),
        ),
        # Contents by creator for the signal partitions (SPEC §11): not partial, so every planner
        # (the embedded one included) serves `{creator_id: {$in: [...]}}` from it without a hint.
        IndexModel([("creator_id", ASCENDING)], name="idx_contents_creator"),
        IndexModel(
            [("parent_content_id", ASCENDING)],
            name="idx_contents_parent",
            partialFilterExpression=_exists("parent_content_id"),
        ),
        IndexModel(
            [("venue_id", ASCENDING)],
            name="idx_contents_venue",
            partialFilterExpression=_exists("venue_id"),
        ),
    ],
    ACCOUNTS: [
        IndexModel(
            [("platform", ASCENDING), ("platform_key", ASCENDING)],
            name="uniq_accounts_platform_key",
            unique=True,
        ),
        IndexModel([("handles.value", ASCENDING)], name="idx_accounts_handle"),
        # Handles as the platform compares them (domain/handles.py): every holder lookup.
        IndexModel([("handles.key", ASCENDING)], name="idx_accounts_handle_key"),
        IndexModel([("known_wallets", ASCENDING)], name="idx_accounts_wallet"),
    ],
    VENUES: [
        IndexModel(
            [("platform", ASCENDING), ("platform_key", ASCENDING)],
            name="uniq_venues_platform_key",
            unique=True,
        ),
        IndexModel(
            [("creator_id", ASCENDING)],
            name="idx_venues_creator",
            partialFilterExpression=_exists("creator_id"),
        ),
    ],
    TOKEN_LINKS: [
        IndexModel(
            [("object_id", ASCENDING), ("link_depth", ASCENDING), ("linked_at", ASCENDING)],
            name="idx_links_object_linked",
        ),
        IndexModel(
            [("token_address", ASCENDING), ("linked_at", ASCENDING)], name="idx_links_token_linked"
        ),
        IndexModel(
            [("platform", ASCENDING), ("subtype", ASCENDING), ("linked_at", ASCENDING)],
            name="idx_links_platform_linked",
        ),
        # The as-of axis alone: the links of one day (the signal partitions, SPEC §11).
        IndexModel([("linked_at", ASCENDING)], name="idx_links_linked"),
    ],
    METRIC_SERIES: [
        IndexModel(
            [("object", ASCENDING), ("object_id", ASCENDING)], name="uniq_series_object", unique=True
        ),
        IndexModel([("platform", ASCENDING)], name="idx_series_platform"),
        # The metric refresh queue: per platform, the objects waiting longest first (SPEC §9).
        IndexModel([("platform", ASCENDING), ("refresh_at", ASCENDING)], name="idx_series_refresh"),
    ],
    TOKENS: [
        IndexModel([("address", ASCENDING)], name="uniq_tokens_address", unique=True),
        IndexModel([("fingerprints", ASCENDING)], name="idx_tokens_fingerprints"),
        IndexModel([("discovered_at", DESCENDING)], name="idx_tokens_discovered"),
        IndexModel([("social_urls.status", ASCENDING)], name="idx_tokens_social_url_status"),
        # The retry queue: one plain (non-multikey) index per retry partition on the oldest
        # attempted_at of the token's URLs in that status, so selection is oldest first.
        *[
            IndexModel([(f"oldest_attempt.{status.value}", ASCENDING)], name=f"idx_tokens_oldest_{status.value}")
            for status in RETRY_PARTITIONS
        ],
    ],
    # Derived (SPEC §11): one document per token; the partition's check reads by address, the
    # analyst by discovery day.
    TOKEN_SIGNALS: [
        IndexModel([("token_address", ASCENDING)], name="uniq_token_signals_address", unique=True),
        IndexModel([("discovered_at", DESCENDING)], name="idx_token_signals_discovered"),
    ],
    # One set of clusters per cutoff (a daily partition): replaced as a whole by its partition,
    # looked up by member ("which cluster was this token in as of day D") or by size.
    TOKEN_CLUSTERS: [
        IndexModel(
            [("input_cutoff", ASCENDING), ("cluster_id", ASCENDING)], name="uniq_clusters_cutoff_id", unique=True
        ),
        IndexModel([("members", ASCENDING), ("input_cutoff", DESCENDING)], name="idx_clusters_members"),
        IndexModel([("input_cutoff", ASCENDING), ("size", DESCENDING)], name="idx_clusters_cutoff_size"),
    ],
}


def ensure_indexes(db: Database[dict[str, Any]]) -> None:
    """Create any missing index. Safe to run on every start: existing identical indexes are kept.

    An index of the same name with a different definition (an older schema) makes the server
    refuse; that is deliberate — silently keeping the wrong index would break the contract.
    """
    for name, models in INDEXES.items():
        collection(db, name).create_indexes(models)
