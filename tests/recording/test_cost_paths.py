"""`TokenRecorder.fetch`, the one place paid calls go through: a short link is judged by its
resolved target (gate, paid slot, credit guard), on the recording and the metric refresh paths."""

from __future__ import annotations

import contextlib
from datetime import UTC, datetime, timedelta

import pytest

from socialrec_pipeline.domain.enums import ContentSubtype, Platform
from socialrec_pipeline.domain.events import TokenFlowEvent
from socialrec_pipeline.domain.graph import AccountDraft, ContentDraft, GraphGroup, SocialObjectGraph
from socialrec_pipeline.providers.shortlinks import ShortLinkGenerator
from socialrec_pipeline.recording.metric_refresh import MetricRefreshService
from socialrec_pipeline.recording.settings import RecordingSettings
from socialrec_pipeline.routing import route
from socialrec_pipeline.routing.source_types import SourceType
from socialrec_pipeline.sandbox.shortlinks import loopback_resolver, register_short_link
from socialrec_pipeline.sandbox.soltracker import upstream_token

from . import harness
from .graphs import FixedGenerator

VIDEO = "https://www.tiktok.com/@moonkol/video/7350000000000000001"


class CountingSlots:
    """Paid slots that record what ran inside them."""

    def __init__(self) -> None:
        self.held: list[str] = []
        self.inside = False

    @contextlib.contextmanager
    def slot(self, label: str):
        self.held.append(label)
        self.inside = True
        try:
            yield
        finally:
            self.inside = False


def video_graph(routed) -> SocialObjectGraph:
    creator = AccountDraft(
        platform=Platform.TIKTOK, platform_key="6800000000000000042", handle="moonkol", metrics={"fans": 10}
    )
    content = ContentDraft(
        platform=Platform.TIKTOK,
        subtype=ContentSubtype.VIDEO,
        platform_key=routed.source_key,
        url=routed.canonical_url,
        metrics={"playCount": 5},
    )
    return SocialObjectGraph.single(GraphGroup(ref="v", creator=creator, content=content))


@pytest.fixture
def env(store, redis_client):
    slots = CountingSlots()
    calls_inside: list[bool] = []
    tiktok = FixedGenerator(
        {SourceType.TIKTOK_VIDEO}, build=lambda r: calls_inside.append(slots.inside) or video_graph(r)
    )
    h = harness.build(store, redis_client, generators=[tiktok], settings=RecordingSettings(enable_paid=True))
    register_short_link(h.server, "/TkVid01", VIDEO)
    resolver = loopback_resolver(h.server.url)
    h.recorder.registry.register(ShortLinkGenerator(resolver, route, h.recorder.registry))
    h.recorder.paid_slots = slots
    yield h, tiktok, slots, calls_inside
    resolver.close()
    h.server.stop()


def test_a_short_link_to_a_paid_target_is_called_inside_a_paid_slot(env, store, address):
    h, tiktok, slots, calls_inside = env
    h.upstream.put(upstream_token(address, twitter="https://t.co/TkVid01"))
    result = h.recorder.record_token(
        TokenFlowEvent.model_validate({"tokenAddress": address, "totalInvestedAlphaFinders": 6}), owner="w"
    )
    assert result.statuses == {"ok": 1}
    assert tiktok.calls == ["https://tiktok.com/@moonkol/video/7350000000000000001"]
    assert slots.held == tiktok.calls and calls_inside == [True]


def test_metric_refresh_of_a_short_link_takes_the_same_path(env, store, address, clock):
    h, tiktok, slots, calls_inside = env
    h.upstream.put(upstream_token(address, twitter="https://t.co/TkVid01"))
    h.recorder.record_token(
        TokenFlowEvent.model_validate({"tokenAddress": address, "totalInvestedAlphaFinders": 6}), owner="w"
    )
    slots.held.clear()
    calls_inside.clear()
    h.recorder.credit_guard.mark_exhausted("test")
    later = datetime.now(UTC) + timedelta(hours=2)  # past the minimum interval between points
    result = MetricRefreshService(store, h.recorder, clock=lambda: later).run(timedelta(days=1), budget=10)
    assert len(tiktok.calls) == 1 and slots.held == []  # held back by the guard: no slot, no call
    assert result.skipped["credit_exhausted"] == 1
