"""The write concern of every write that something else relies on having survived a crash.

Journaled (`j`): the server answers only once the write is in its on-disk journal, so a server
killed right after the answer still has it when it comes back on the same storage. Acknowledged
by a majority (`w: "majority"`) when the server is a replica set or a sharded cluster: a write
only the old primary held is rolled back after a failover. The inbox (before a message is
acknowledged), the links and the marker (before a run reports "recorded") use it; see
docs/decisions.md, "Durability".
"""

from __future__ import annotations

from typing import Any

from pymongo import WriteConcern
from pymongo.collection import Collection

#: How long a majority write may wait for the secondaries before the write fails (infrastructure).
MAJORITY_TIMEOUT_MS = 10_000


def durable_write_concern(coll: Collection[Any]) -> WriteConcern:
    """Journaled; majority as well when the server replicates (asks the server once per call)."""
    hello = coll.database.client.admin.command("hello")
    replicated = "setName" in hello or hello.get("msg") == "isdbgrid"
    return WriteConcern(w="majority" if replicated else 1, j=True, wtimeout=MAJORITY_TIMEOUT_MS)


class DurableWrites:
    """A collection's handle for durable writes, created on first use (one `hello` per handle)."""

    def __init__(self, coll: Collection[Any]) -> None:
        self._coll = coll
        self._durable: Collection[Any] | None = None

    @property
    def collection(self) -> Collection[Any]:
        if self._durable is None:
            self._durable = self._coll.with_options(write_concern=durable_write_concern(self._coll))
        return self._durable
