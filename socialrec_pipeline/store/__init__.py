"""MongoDB: collection names, indexes and repositories (data access only, no business rules)."""

from socialrec_pipeline.store.contents import ContentRepository
from socialrec_pipeline.store.identities import AccountRepository, VenueRepository
from socialrec_pipeline.store.indexes import ensure_indexes
from socialrec_pipeline.store.metric_series import FirstPoint, MetricSeriesRepository
from socialrec_pipeline.store.store import Store
from socialrec_pipeline.store.token_links import TokenLinkRepository
from socialrec_pipeline.store.tokens import TokenRepository

__all__ = [
    "AccountRepository",
    "ContentRepository",
    "FirstPoint",
    "MetricSeriesRepository",
    "Store",
    "TokenLinkRepository",
    "TokenRepository",
    "VenueRepository",
    "ensure_indexes",
]
