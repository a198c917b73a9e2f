"""Graph writer and record_token figures against the embedded Mongo wire server and local Redis.

Prints Mongo round trips (pymongo CommandListener) and wall time per graph for 1-, 3- and
10-group graphs — write round trips and identity reads separately — then record_token tokens/s
with a zero-latency fixture upstream. Last line: `writer_round_trips_3_groups: <n>`.

Run: .venv/bin/python bench/writer.py  (REDIS_URL / MONGODB_URI override the defaults)
"""

from __future__ import annotations

import os
import statistics
import sys
import time
import uuid
from pathlib import Path

from pymongo import MongoClient, monitoring

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from socialrec_pipeline.domain.events import TokenFlowEvent  # noqa: E402
from socialrec_pipeline.providers.base import GeneratorRegistry  # noqa: E402
from socialrec_pipeline.recording.locks import TokenLocks, UnknownTokenCache, open_redis  # noqa: E402
from socialrec_pipeline.recording.processor import TokenRecorder  # noqa: E402
from socialrec_pipeline.recording.soltracker import SolTrackerClient  # noqa: E402
from socialrec_pipeline.recording.writer import GraphWriter  # noqa: E402
from socialrec_pipeline.sandbox.fixture_server import FixtureServer  # noqa: E402
from socialrec_pipeline.sandbox.soltracker import SolTrackerFixture, upstream_token  # noqa: E402
from socialrec_pipeline.store import Store  # noqa: E402
from socialrec_pipeline.store.client import CODEC_OPTIONS  # noqa: E402
from socialrec_pipeline.store.embedded import configured_or_embedded_mongo  # noqa: E402
from tests.recording.conftest import make_address  # noqa: E402
from tests.recording.graphs import chain  # noqa: E402
from tests.recording.harness import default_generators  # noqa: E402

WRITES = {"insert", "update", "delete", "findAndModify"}
READS = {"find", "aggregate", "count"}


class Counter(monitoring.CommandListener):
    def __init__(self) -> None:
        self.names: list[str] = []

    def started(self, event) -> None:
        self.names.append(event.command_name)

    def succeeded(self, event) -> None: ...

    def failed(self, event) -> None: ...

    def split(self) -> tuple[int, int]:
        return sum(n in WRITES for n in self.names), sum(n in READS for n in self.names)


def bench_writer(store: Store, counter: Counter, groups: int, repeats: int = 20) -> tuple[int, int, float]:
    writer = GraphWriter(store)
    writes, reads, times = [], [], []
    for i in range(repeats):
        graph = chain(groups, prefix=f"g{groups}-{i}-")
        counter.names.clear()
        started = time.perf_counter()
        writer.write(graph, entry_url=f"https://x.com/i/status/g{groups}-{i}-0", token_address=make_address(i))
        times.append(time.perf_counter() - started)
        w, r = counter.split()
        writes.append(w)
        reads.append(r)
    return max(writes), max(reads), statistics.median(times)


def bench_record_token(store: Store, redis_url: str, tokens: int = 100) -> float:
    server = FixtureServer().start()
    fixture = SolTrackerFixture(api_key="bench")
    fixture.install(server)
    addresses = [make_address(1000 + i) for i in range(tokens)]
    for i, address in enumerate(addresses):
        fixture.put(upstream_token(address, website=f"https://site{i}.example",
                                   twitter=f"https://x.com/kol/status/{9000 + i}", telegram="N/A"))
    client = open_redis(redis_url)
    prefix = f"bench-{uuid.uuid4().hex[:6]}:"
    recorder = TokenRecorder(
        store, SolTrackerClient(server.url, "bench"),
        TokenLocks(client, prefix=prefix + "lock:"), UnknownTokenCache(client, prefix=prefix + "unknown:"),
        GeneratorRegistry(default_generators()),
    )
    started = time.perf_counter()
    for address in addresses:
        event = TokenFlowEvent.model_validate({"tokenAddress": address, "totalInvestedAlphaFinders": 6})
        assert recorder.record_token(event, owner="bench").outcome == "recorded"
    elapsed = time.perf_counter() - started
    server.stop()
    return tokens / elapsed


def main() -> None:
    redis_url = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
    uri = os.environ.get("MONGODB_URI")
    with configured_or_embedded_mongo(uri) as mongo_uri:
        counter = Counter()
        client = MongoClient(mongo_uri, event_listeners=[counter], tz_aware=True)
        db = client.get_database(f"bench_writer_{uuid.uuid4().hex[:6]}", codec_options=CODEC_OPTIONS)
        store = Store(db)
        store.ensure_indexes()
        results = {}
        for groups in (1, 3, 10):
            writes, reads, median = bench_writer(store, counter, groups)
            results[groups] = writes
            print(f"writer {groups:>2} groups: write round trips {writes}, identity reads {reads}, "
                  f"median wall {median * 1000:.1f} ms/graph")
        rate = bench_record_token(store, redis_url)
        print(f"record_token: {rate:.1f} tokens/s (3 URLs/token: tweet, website, junk; zero-latency upstream)")
        client.drop_database(db.name)
        client.close()
    print(f"writer_round_trips_3_groups: {results[3]}")


if __name__ == "__main__":
    main()
