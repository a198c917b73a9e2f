"""`token_links`: append-only observations "token T pointed at object O".

There is deliberately no update or upsert method: overwriting a link would destroy the as-of
ordinal ("how many tokens had linked this object by time T"). The only removal is the retry path's
`delete_by_token_and_source_url`, which clears one URL's links right before that URL is rewritten.

Queries whose predicates are not a plain prefix of their index name it (`hint`): the embedded
server would otherwise scan the collection (e.g. `object_id` + `linked_at` skips `link_depth`).

Time bounds (`as_of`, `since`) must be timezone-aware: stored times are UTC, and a naive bound
would silently be read as UTC by the driver, shifting the answer by the caller's offset. A naive
one raises `ValueError` naming the argument.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from bson import ObjectId
from pymongo import DESCENDING
from pymongo.database import Database

from socialrec_pipeline.domain.enums import Platform
from socialrec_pipeline.domain.models import TokenLink, utc_now
from socialrec_pipeline.store.collections import TOKEN_LINKS, collection
from socialrec_pipeline.store.durability import DurableWrites
from socialrec_pipeline.store.rows import stamped

_BY_OBJECT = "idx_links_object_linked"


def _require_aware(name: str, moment: datetime) -> datetime:
    if moment.tzinfo is None or moment.tzinfo.utcoffset(moment) is None:
        raise ValueError(f"{name} must be a timezone-aware datetime (UTC), got naive {moment!r}")
    return moment


class TokenLinkRepository:
    def __init__(self, db: Database[dict[str, Any]]) -> None:
        self._col = collection(db, TOKEN_LINKS)
        self._durable = DurableWrites(self._col)

    def append_many(self, links: Sequence[TokenLink]) -> int:
        if not links:
            return 0
        now = utc_now()
        docs = [stamped(link.to_document(), now) for link in links]
        # Journaled (majority on a replica set), like the marker that stands for them: a URL's
        # links are never lost while its marker survives, a failover included (docs/decisions.md,
        # "Durability").
        return len(self._durable.collection.insert_many(docs, ordered=True).inserted_ids)

    def count_by_object_as_of(
        self, object_id: ObjectId, as_of: datetime, link_depth: int | None = None
    ) -> int:
        """Links to the object made at or before `as_of` (idx_links_object_linked)."""
        _require_aware("as_of", as_of)
        query = self._object_query(object_id, as_of, link_depth)
        return self._col.count_documents(query, hint=_BY_OBJECT)

    def find_by_object_as_of(
        self, object_id: ObjectId, as_of: datetime, link_depth: int | None = None
    ) -> list[TokenLink]:
        _require_aware("as_of", as_of)
        query = self._object_query(object_id, as_of, link_depth)
        cursor = self._col.find(query).hint(_BY_OBJECT).sort("linked_at", 1)
        return [TokenLink.from_document(d) for d in cursor]

    def find_by_token(self, token_address: str, as_of: datetime | None = None) -> list[TokenLink]:
        query: dict[str, Any] = {"token_address": token_address}
        if as_of is not None:
            query["linked_at"] = {"$lte": _require_aware("as_of", as_of)}
        return [TokenLink.from_document(d) for d in self._col.find(query).sort("linked_at", 1)]

    def delete_by_token_and_source_url(self, token_address: str, source_url: str) -> int:
        # idx_links_token_linked narrows to the token; source_url filters its few links.
        result = self._col.delete_many(
            {"token_address": token_address, "source_url": source_url},
            hint="idx_links_token_linked",
        )
        return result.deleted_count

    def find_linked_since(
        self, since: datetime, platforms: Iterable[Platform] | None = None, limit: int = 1000
    ) -> list[TokenLink]:
        """Links made at or after `since` on the given platforms (all when None), newest first.

        The platform is always constrained (all codes when None) so the query stays on
        idx_links_platform_linked; `linked_at` alone has no index.
        """
        _require_aware("since", since)
        codes = [str(p) for p in (platforms if platforms is not None else Platform)]
        if not codes:
            return []
        query = {"platform": {"$in": codes}, "linked_at": {"$gte": since}}
        cursor = (
            self._col.find(query)
            .hint("idx_links_platform_linked")
            .sort("linked_at", DESCENDING)
            .limit(limit)
        )
        return [TokenLink.from_document(d) for d in cursor]

    @staticmethod
    def _object_query(object_id: ObjectId, as_of: datetime, link_depth: int | None) -> dict[str, Any]:
        query: dict[str, Any] = {"object_id": object_id}
        if link_depth is not None:
            query["link_depth"] = link_depth
        query["linked_at"] = {"$lte": as_of}
        return query

