"""The six stored collections as pydantic models: fields, factories, state changes. No IO.

Shape: SPEC §4 (accounts/venues have no `source_urls` and a
required `platform_key`; `token_links` carries no status/name_match/lineage; `tokens` records
`social_urls[]`). One module per collection family; everything is re-exported here, so
`from socialrec_pipeline.domain.models import X` works for every model and constant.

- `base`: ids, UTC datetimes, BSON conversion, the row and value base classes
- `contents`: `Content` and its embedded values
- `identities`: `Account`, `Venue` and their embedded values
- `tokens`: `Token` and `SocialUrlRecord` (`tokens.social_urls[]`)
- `token_links`: `TokenLink`, `LINK_MAX_DEPTH`
- `metric_series`: `MetricSeries`, `MetricPoint`, `SERIES_POINT_CAP`
"""

from socialrec_pipeline.domain.models.base import (
    Metrics,
    Mixed,
    NonEmptyStr,
    Oid,
    Subtype,
    UtcDatetime,
    subtype_of,
    utc_now,
)
from socialrec_pipeline.domain.models.contents import AuthorSnapshot, Content, LinkStats, SourceUrlEntry
from socialrec_pipeline.domain.models.identities import (
    Account,
    AccountMetrics,
    HandleInterval,
    Moderation,
    Venue,
    VenueMetrics,
)
from socialrec_pipeline.domain.models.metric_series import SERIES_POINT_CAP, MetricPoint, MetricSeries
from socialrec_pipeline.domain.models.token_links import LINK_MAX_DEPTH, TokenLink
from socialrec_pipeline.domain.models.tokens import SocialUrlRecord, Token

__all__ = [
    "LINK_MAX_DEPTH",
    "SERIES_POINT_CAP",
    "Account",
    "AccountMetrics",
    "AuthorSnapshot",
    "Content",
    "HandleInterval",
    "LinkStats",
    "MetricPoint",
    "MetricSeries",
    "Metrics",
    "Mixed",
    "Moderation",
    "NonEmptyStr",
    "Oid",
    "SocialUrlRecord",
    "SourceUrlEntry",
    "Subtype",
    "subtype_of",
    "Token",
    "TokenLink",
    "UtcDatetime",
    "Venue",
    "VenueMetrics",
    "utc_now",
]
