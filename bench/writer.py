"""Graph writer and record_token figures against the embedded Mongo wire server and local Redis.

Prints Mongo round trips (pymongo CommandListener) and wall time per graph for 1-, 3- and
10-group graphs — write round trips and identity reads separately — then record_token tokens/s
with a zero-latency fixture upstream. Last line: `writer_round_trips_3_groups: <n>`; exit 1 when
that is over `--max-round-trips` (the goal, 6).

    .venv/bin/python bench/writer.py [--max-round-trips 6]  (REDIS_URL / MONGODB_URI override the defaults)
    .venv/bin/python bench/writer.py --self-test

`--self-test` writes 3-group graphs with the driver's `insert_many` sending one document per round
trip (a writer that lost its batching) and fails unless the bench reports the goal breached; last
line `bench_self_test: N/N rows detect their breach`.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

from pymongo import MongoClient, monitoring
from pymongo.collection import Collection
from pymongo.results import InsertManyResult

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


@contextlib.contextmanager
def unbatched_inserts() -> Iterator[None]:
    """The self-test's breach: every `insert_many` sends its documents one round trip each."""
    batched = Collection.insert_many

    def one_by_one(self: Collection, documents, ordered: bool = True, **kwargs) -> InsertManyResult:
        ids = [self.insert_one(doc, **kwargs).inserted_id for doc in documents]
        return InsertManyResult(ids, acknowledged=True)

    Collection.insert_many = one_by_one  # type: ignore[method-assign,assignment]
    try:
        yield
    finally:
        Collection.insert_many = batched  # type: ignore[method-assign]


def breached(round_trips: int, max_round_trips: int) -> bool:
    """The one verdict, for the measurement and the self-test alike."""
    return round_trips > max_round_trips


def self_test(store: Store, counter: Counter, max_round_trips: int) -> int:
    with unbatched_inserts():
        writes, _, _ = bench_writer(store, counter, 3, repeats=3)
    caught = breached(writes, max_round_trips)
    print(f"unbatched_inserts: {writes} write round trips for 3 groups -> {'breach reported' if caught else 'BLIND'}")
    print(f"bench_self_test: {int(caught)}/1 rows detect their breach")
    return 0 if caught else 1


def measure(store: Store, counter: Counter, redis_url: str, max_round_trips: int) -> int:
    results = {}
    for groups in (1, 3, 10):
        writes, reads, median = bench_writer(store, counter, groups)
        results[groups] = writes
        print(f"writer {groups:>2} groups: write round trips {writes}, identity reads {reads}, "
              f"median wall {median * 1000:.1f} ms/graph")
    rate = bench_record_token(store, redis_url)
    print(f"record_token: {rate:.1f} tokens/s (3 URLs/token: tweet, website, junk; zero-latency upstream)")
    if breached(results[3], max_round_trips):
        print(f"BREACH: writer_round_trips_3_groups {results[3]} > --max-round-trips {max_round_trips}")
    print(f"writer_round_trips_3_groups: {results[3]}")
    return 1 if breached(results[3], max_round_trips) else 0


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--max-round-trips", type=int, default=6, help="the goal: write round trips of a 3-group graph")
    parser.add_argument("--self-test", action="store_true", help="inject unbatched inserts; the bench must report it")
    args = parser.parse_args()
    redis_url = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
    with configured_or_embedded_mongo(os.environ.get("MONGODB_URI")) as mongo_uri:
        counter = Counter()
        client = MongoClient(mongo_uri, event_listeners=[counter], tz_aware=True)
        db = client.get_database(f"bench_writer_{uuid.uuid4().hex[:6]}", codec_options=CODEC_OPTIONS)
        store = Store(db)
        store.ensure_indexes()
        try:
            if args.self_test:
                return self_test(store, counter, args.max_round_trips)
            return measure(store, counter, redis_url, args.max_round_trips)
        finally:
            client.drop_database(db.name)
            client.close()


if __name__ == "__main__":
    raise SystemExit(main())
