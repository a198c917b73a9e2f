"""Run by test_marker_is_last in a subprocess: records a token whose second URL blocks forever."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

import redis

from socialrec_pipeline.domain.events import TokenFlowEvent
from socialrec_pipeline.providers.base import GeneratorRegistry
from socialrec_pipeline.recording.locks import TokenLocks, UnknownTokenCache
from socialrec_pipeline.recording.processor import TokenRecorder
from socialrec_pipeline.recording.soltracker import SolTrackerClient
from socialrec_pipeline.routing.source_types import SourceType
from socialrec_pipeline.store import Store
from socialrec_pipeline.store.client import open_client, open_database
from tests.recording.graphs import FixedGenerator
from tests.recording.harness import tweet_graph


def main() -> None:
    mongo_uri, db_name, redis_url, prefix, upstream_url, address, reached = sys.argv[1:8]
    store = Store(open_database(open_client(mongo_uri), db_name))
    client = redis.Redis.from_url(redis_url)

    def block(routed):
        Path(reached).write_text("reached")
        threading.Event().wait()  # never returns: the parent kills us here

    recorder = TokenRecorder(
        store,
        SolTrackerClient(upstream_url, "k-secret"),
        TokenLocks(client, ttl_s=1.0, prefix=prefix + "social-record:"),
        UnknownTokenCache(client, prefix=prefix + "unknown:"),
        GeneratorRegistry([
            FixedGenerator({SourceType.X_TWEET}, build=tweet_graph),
            FixedGenerator({SourceType.WEBSITE}, build=block, external=False),
        ]),
    )
    event = TokenFlowEvent.model_validate({"tokenAddress": address, "totalInvestedAlphaFinders": 7})
    recorder.record_token(event, owner="crashing-worker")


if __name__ == "__main__":
    main()
