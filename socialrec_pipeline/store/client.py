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
    """A client whose every operation is bounded in time (no call waits forever on a dead server).
    A timeout written in the URI (`?serverSelectionTimeoutMS=...`) wins over these defaults: pymongo
    lets keyword arguments override the URI, which would silently ignore the operator's setting."""
    defaults: dict[str, Any] = {
        "serverSelectionTimeoutMS": timeout_ms,
        "connectTimeoutMS": timeout_ms,
        "socketTimeoutMS": max(timeout_ms * 6, 30_000),
    }
    written = uri_option_names(uri)
    timeouts = {name: value for name, value in defaults.items() if name.lower() not in written}
    return MongoClient(uri, appname=app_name, tz_aware=True, tzinfo=UTC, **timeouts)


def uri_option_names(uri: str) -> set[str]:
    """The option names a connection string sets, lower-cased (URI options are case-insensitive)."""
    query = uri.partition("?")[2]
    return {pair.partition("=")[0].strip().lower() for pair in query.replace(";", "&").split("&") if pair}


def open_database(client: MongoClient[dict[str, Any]], name: str) -> Database[dict[str, Any]]:
    return client.get_database(name, codec_options=CODEC_OPTIONS)
