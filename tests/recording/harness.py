"""Wiring for processor/reconcile/retry tests: fixture upstream + real Redis + real Mongo."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from socialrec_pipeline.domain.enums import ContentSubtype, Platform
from socialrec_pipeline.domain.graph import ContentDraft, GraphGroup, SocialObjectGraph
from socialrec_pipeline.providers.base import GeneratorRegistry
from socialrec_pipeline.recording.locks import TokenLocks, UnknownTokenCache
from socialrec_pipeline.recording.processor import TokenRecorder
from socialrec_pipeline.recording.settings import RecordingSettings
from socialrec_pipeline.recording.soltracker import SolTrackerClient
from socialrec_pipeline.routing.source_types import SourceType
from socialrec_pipeline.sandbox.fixture_server import FixtureServer
from socialrec_pipeline.sandbox.soltracker import SolTrackerFixture

from .graphs import FixedGenerator, tweet, x_account


def tweet_graph(routed) -> SocialObjectGraph:
    key = routed.source_key
    return SocialObjectGraph.single(GraphGroup(ref="t", creator=x_account(f"author-{key}"), content=tweet(key)))


def site_graph(routed) -> SocialObjectGraph:
    return SocialObjectGraph.single(
        GraphGroup(
            ref="s", content=ContentDraft(platform=Platform.WEB, subtype=ContentSubtype.SITE, url=routed.canonical_url)
        )
    )


def default_generators():
    return [
        FixedGenerator({SourceType.X_TWEET}, build=tweet_graph),
        FixedGenerator({SourceType.WEBSITE}, build=site_graph, external=False),
    ]


@dataclass
class Harness:
    server: FixtureServer
    upstream: SolTrackerFixture
    client: SolTrackerClient
    locks: TokenLocks
    unknown: UnknownTokenCache
    recorder: TokenRecorder
    generators: list

    def soltracker_calls(self) -> int:
        return len(self.server.calls("/api/v1/tokens"))


def build(store, redis_client, clock=None, generators=None, settings=None, timeout_s=5.0, prefix=None) -> Harness:
    server = FixtureServer().start()
    upstream = SolTrackerFixture(api_key="k-secret")
    upstream.install(server)
    client = SolTrackerClient(server.url, "k-secret", timeout_s=timeout_s)
    ns = prefix or f"t-{uuid.uuid4().hex[:8]}:"
    locks = TokenLocks(redis_client, ttl_s=(settings or RecordingSettings()).lock_ttl_s, prefix=ns + "social-record:")
    unknown = UnknownTokenCache(redis_client, ttl_s=300, prefix=ns + "unknown:")
    gens = default_generators() if generators is None else generators
    recorder = TokenRecorder(
        store, client, locks, unknown, GeneratorRegistry(gens), settings or RecordingSettings(), clock
    )
    return Harness(server, upstream, client, locks, unknown, recorder, gens)
