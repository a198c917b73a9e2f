"""What the row repositories share: lookups by `_id`, model decoding, storage timestamps."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any, Generic, TypeVar

from bson import ObjectId
from pymongo.collection import Collection

from socialrec_pipeline.domain.models import Account, Content, Venue

Row = TypeVar("Row", Content, Account, Venue)


def stamped(document: dict[str, Any], now: datetime) -> dict[str, Any]:
    """`document` as a row stored at `now`: `created_at` / `updated_at` are ours, never a provider's."""
    return {**document, "created_at": now, "updated_at": now}


class RowRepository(Generic[Row]):
    """Data access for one collection of `Row`s: every read decodes into the model."""

    _model: type[Row]

    def __init__(self, col: Collection[dict[str, Any]]) -> None:
        self._col = col

    def find_by_id(self, row_id: ObjectId) -> Row | None:
        return self._one({"_id": row_id})

    def find_by_ids(self, row_ids: Iterable[ObjectId]) -> list[Row]:
        ids = list(dict.fromkeys(row_ids))
        return self._many({"_id": {"$in": ids}}) if ids else []

    def _one(self, query: dict[str, Any], hint: str | None = None) -> Row | None:
        found = self._many(query, hint=hint, limit=1)
        return found[0] if found else None

    def _many(
        self, query: dict[str, Any], hint: str | None = None, limit: int = 0, sort: list[tuple[str, int]] | None = None
    ) -> list[Row]:
        cursor = self._col.find(query, limit=limit, sort=sort)
        if hint:
            cursor = cursor.hint(hint)
        return [self._model.from_document(d) for d in cursor]
