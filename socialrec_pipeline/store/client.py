"""Opening a database handle with the codec and timeouts every caller needs."""

from __future__ import annotations

from datetime import UTC
from typing import Any

from bson.codec_options import CodecOptions
from pymongo import MongoClient
from pymongo.database import Database

#: Every datetime read back is timezone-aware UTC (SPEC §4).
CODEC_OPTIONS: CodecOptions[dict[str, Any]] = CodecOptions(tz_aware=True, tzinfo=UTC)


def open_client(uri: str, *, timeout_ms: int = 5_000, app_name: str = "socialrec") -> MongoClient[dict[str, Any]]:
    """A client whose every operation is bounded in time (no call waits forever on a dead server)."""
    return MongoClient(
        uri,
        appname=app_name,
        tz_aware=True,
        tzinfo=UTC,
        serverSelectionTimeoutMS=timeout_ms,
        connectTimeoutMS=timeout_ms,
        socketTimeoutMS=max(timeout_ms * 6, 30_000),
    )


def open_database(client: MongoClient[dict[str, Any]], name: str) -> Database[dict[str, Any]]:
    return client.get_database(name, codec_options=CODEC_OPTIONS)
