"""The data the pipeline writes, declared as external assets (the Asset Catalog and its lineage).

Nothing here materializes them: runs of `record_token_job`, `reconcile_job`, `retry_job` and
`metric_refresh_job` write the collections; these specs give them a name, an owner, a schema and
the lineage token.flow → record_inbox → tokens / contents / accounts / venues / token_links /
metric_series, so that the integrity checks (defs/integrity.py) have something to hang on.
"""

from __future__ import annotations

import dagster as dg

#: Who answers for the data (shown in the catalog).
OWNERS = ["team:socialrec"]
DATA_GROUP = "socialrec_data"
OPS_GROUP = "socialrec_operations"


def _schema(*columns: tuple[str, str, str]) -> dg.TableSchema:
    return dg.TableSchema(columns=[dg.TableColumn(name, type_, description=desc) for name, type_, desc in columns])


#: Who writes each collection: the runs (or the producer) named in its description.
WRITERS = {
    "token_flow": "the upstream producer (outside this code location); token_flow_sensor consumes it",
    "record_inbox": "token_flow_sensor's ticks",
    "metric_series": "record_token_job, reconcile_job, retry_job and metric_refresh_job runs",
}
DEFAULT_WRITERS = "record_token_job, reconcile_job and retry_job runs"


def written_by(key: str) -> str:
    """The sentence every external asset's description ends with: who writes it, and why its page
    says "Never materialized" (not a fault; nothing to report or wipe by hand)."""
    return (
        f" Written by {WRITERS.get(key, DEFAULT_WRITERS)}, not by a materialization: \"Never materialized\" "
        "on this page is expected, and reporting a materialization event or wiping it by hand changes nothing "
        "in the data. Its state is in the checks on this page and in recording_health."
    )


def _spec(
    key: str, description: str, schema: dg.TableSchema | None, deps: list[str], kind: str = "mongodb"
) -> dg.AssetSpec:
    metadata = {"dagster/column_schema": schema} if schema is not None else {}
    return dg.AssetSpec(
        key,
        description=description + written_by(key),
        owners=OWNERS,
        group_name=DATA_GROUP,
        deps=deps,
        kinds={kind},
        metadata=metadata,
    )


TOKEN_FLOW = _spec(
    "token_flow",
    "RabbitMQ `token.flow` events (queue `af-social-scanner.token-flow.social-sync[.env]`, invalid ones in "
    "`<queue>.dlq`: read them with `socialrec dlq list`). Produced outside this code location; the "
    "token_flow_sensor drains it every few seconds.",
    _schema(
        ("tokenAddress", "string", "the token's mint address"),
        ("totalInvestedAlphaFinders", "int", "alpha finders that bought; below the threshold (5) no run"),
        ("symbol", "string", "optional"),
        ("firstFlowTimestamp", "datetime", "optional; earliest becomes tokens.first_transfer_at"),
    ),
    deps=[],
    kind="rabbitmq",
)

RECORD_INBOX = _spec(
    "record_inbox",
    "Qualifying token.flow events between the broker ack and the record_token_job run that records them "
    "(one entry per token; deleted once the token's marker exists).",
    _schema(
        ("token_address", "string", "unique (uniq_inbox_token_address)"),
        ("state", "string", "pending | launched | idle (idx_inbox_state)"),
        ("generation", "int", "launch counter, part of the run key"),
        ("relaunch", "bool", "an event arrived while the run was active"),
        ("received_at", "datetime", "first qualifying event"),
        ("last_event_at", "datetime", "latest qualifying event"),
        ("launched_at", "datetime", "when the current generation's run was requested"),
    ),
    deps=["token_flow"],
)

TOKENS = _spec(
    "tokens",
    "The recording marker, written last: its existence means the token was recorded. social_urls[] says "
    "what happened to each of the token's URLs.",
    _schema(
        ("address", "string", "unique (uniq_tokens_address)"),
        ("symbol", "string", ""),
        ("first_transfer_at", "datetime", "earliest firstFlowTimestamp"),
        ("discovered_at", "datetime", "set when the marker is created (idx_tokens_discovered)"),
        ("fingerprints", "string[]", ""),
        (
            "social_urls",
            "object[]",
            "url, raw_url, source_field, source_type, source_key, platform, subtype, "
            "status (FetchStatus, idx_tokens_social_url_status), attempted_at, attempts",
        ),
    ),
    deps=["record_inbox"],
)

CONTENTS = _spec(
    "contents",
    "Coordinates in a platform's content space (tweets, videos, repos, sites ...). Identity: first "
    "source_urls.url, then (platform, subtype, platform_key); both unique.",
    _schema(
        ("platform", "string", "x tt ig yt rd gh tg web"),
        ("subtype", "string", "ContentSubtype"),
        ("platform_key", "string", "optional; unique with platform, subtype (partial index)"),
        ("source_urls", "object[]", "{url (unique), status, observed_at}"),
        ("creator_id", "ObjectId", "accounts._id"),
        ("venue_id", "ObjectId", "venues._id"),
        ("parent_content_id", "ObjectId", "the original this content quotes / retweets / forks"),
        ("published_at", "datetime", ""),
        ("observed_at", "datetime", ""),
        ("metrics_latest", "object", "whitelisted metrics"),
        ("data", "object", "platform-specific fields"),
    ),
    deps=["record_inbox"],
)

_IDENTITY = (
    ("platform", "string", "platform code"),
    ("platform_key", "string", "required; unique with platform"),
)

ACCOUNTS = _spec(
    "accounts",
    "Who: platform accounts, identified by (platform, platform_key), upserted atomically.",
    _schema(
        *_IDENTITY,
        ("handles", "object[]", "{value, key, first_seen, last_seen} intervals; key: as the platform compares it"),
        ("display_name", "string", ""),
        ("known_wallets", "string[]", "addresses found in the bio"),
        ("metrics", "object", "{followers}"),
        ("observed_at", "datetime", ""),
    ),
    deps=["record_inbox"],
)

VENUES = _spec(
    "venues",
    "Where: communities, subreddits, Telegram channels and groups, identified by (platform, platform_key).",
    _schema(
        *_IDENTITY,
        ("subtype", "string", "VenueSubtype (mutable, not part of the identity)"),
        ("name", "string", ""),
        ("creator_id", "ObjectId", "accounts._id"),
        ("metrics", "object", "{members}"),
        ("observed_at", "datetime", ""),
    ),
    deps=["record_inbox"],
)

TOKEN_LINKS = _spec(
    "token_links",
    "Append-only successful observations 'this token pointed at this object' (no status, no lineage).",
    _schema(
        ("token_address", "string", "tokens.address"),
        ("object", "string", "contents | accounts | venues"),
        ("object_id", "ObjectId", "_id in that collection"),
        ("source_url", "string", "the entry URL (tokens.social_urls[].url)"),
        ("platform", "string", ""),
        ("subtype", "string", "optional, copied from the object"),
        ("link_depth", "int", "0 root group, 1 the original it quotes, capped at 2"),
        ("linked_at", "datetime", "the as-of axis"),
        ("observed_at", "datetime", ""),
    ),
    deps=["record_inbox"],
)

METRIC_SERIES = _spec(
    "metric_series",
    "One row per (object, object_id): metric points over time, capped at 200 by the write; the first point "
    "at recording, later ones from metric_refresh_job.",
    _schema(
        ("object", "string", "contents | accounts | venues"),
        ("object_id", "ObjectId", "unique with object"),
        ("platform", "string", ""),
        ("points", "object[]", "{at, metrics}, time-ordered, at most 200"),
    ),
    deps=["record_inbox"],
)

COLLECTION_SPECS = [TOKEN_FLOW, RECORD_INBOX, TOKENS, CONTENTS, ACCOUNTS, VENUES, TOKEN_LINKS, METRIC_SERIES]
