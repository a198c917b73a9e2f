"""Collection names (SPEC §4): the six collections, nothing else."""

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


def collection(db: Database[dict[str, Any]], name: str) -> Collection[dict[str, Any]]:
    """A handle that reads datetimes back tz-aware UTC whatever codec the caller's db carries."""
    return db.get_collection(name, codec_options=CODEC_OPTIONS)
