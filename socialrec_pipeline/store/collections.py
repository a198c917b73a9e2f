"""Collection names: the six collections of SPEC §4, and the two derived ones of SPEC §11."""

from __future__ import annotations

from typing import Any

from pymongo.collection import Collection
from pymongo.database import Database

from socialrec_pipeline.store.client import CODEC_OPTIONS

CONTENTS = "contents"
ACCOUNTS = "accounts"
VENUES = "venues"
TOKENS = "tokens"
TOKEN_LINKS = "token_links"
METRIC_SERIES = "metric_series"

ALL_COLLECTIONS: tuple[str, ...] = (CONTENTS, ACCOUNTS, VENUES, TOKENS, TOKEN_LINKS, METRIC_SERIES)

#: Derived collections (SPEC §11), written only by the signal assets; every value carries
#: `computed_at` and `input_cutoff`.
TOKEN_SIGNALS = "token_signals"
TOKEN_CLUSTERS = "token_clusters"
DERIVED_COLLECTIONS: tuple[str, ...] = (TOKEN_SIGNALS, TOKEN_CLUSTERS)


def collection(db: Database[dict[str, Any]], name: str) -> Collection[dict[str, Any]]:
    """A handle that reads datetimes back tz-aware UTC whatever codec the caller's db carries."""
    return db.get_collection(name, codec_options=CODEC_OPTIONS)
