"""`Store(db)`: the repositories of one database, plus `ensure_indexes()`."""

from __future__ import annotations

from typing import Any

from pymongo.database import Database

from socialrec_pipeline.store.contents import ContentRepository
from socialrec_pipeline.store.identities import AccountRepository, VenueRepository
from socialrec_pipeline.store.indexes import ensure_indexes
from socialrec_pipeline.store.metric_series import MetricSeriesRepository
from socialrec_pipeline.store.token_links import TokenLinkRepository
from socialrec_pipeline.store.tokens import TokenRepository


class Store:
    def __init__(self, db: Database[dict[str, Any]]) -> None:
        self.db = db
        self.contents = ContentRepository(db)
        self.accounts = AccountRepository(db)
        self.venues = VenueRepository(db)
        self.tokens = TokenRepository(db)
        self.links = TokenLinkRepository(db)
        self.metrics = MetricSeriesRepository(db)

    def ensure_indexes(self) -> None:
        """Create missing indexes, then bring derived keys of older rows up to date
        (`handles[].key`, served by the index just ensured)."""
        ensure_indexes(self.db)
        self.accounts.backfill_handle_keys()
