"""The code location's resources pointed at the loopback stand-ins: one place for the tests and the
benchmarks that run jobs against them (every provider, SolTracker and a real Mongo and Redis)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import dagster as dg

from socialrec_pipeline.defs.resources import (
    ApifyResource,
    GeneratorsResource,
    GitHubResource,
    MongoResource,
    RecordingSettingsResource,
    RedditResource,
    RedisResource,
    SolTrackerResource,
    TelegramResource,
    UrlscanResource,
    XApiResource,
    YouTubeResource,
)
from socialrec_pipeline.sandbox.platforms import apify


def stand_in_resources(
    url_of: Callable[[str], str],
    *,
    mongo_uri: str,
    database: str,
    redis_url: str,
    soltracker_key: str | dg.EnvVar,
    x_key: str | dg.EnvVar,
    youtube_key: str | None = None,
    recording: RecordingSettingsResource | None = None,
) -> dict[str, Any]:
    """`url_of(service)` is the base URL of each stand-in (one server for all, or one each), for
    `soltracker`, `x`, `github`, `youtube`, `telegram`, `apify`, `reddit` and `urlscan`.
    Apify uses the stand-in's demo token; YouTube is called only when `youtube_key` is given."""
    return {
        "mongo": MongoResource(uri=mongo_uri, database=database),
        "redis": RedisResource(url=redis_url),
        "soltracker": SolTrackerResource(base_url=url_of("soltracker"), api_key=soltracker_key),
        "recording": recording or RecordingSettingsResource(),
        "generators": GeneratorsResource(
            x=XApiResource(base_url=url_of("x"), api_key=x_key),
            github=GitHubResource(base_url=url_of("github")),
            youtube=YouTubeResource(base_url=url_of("youtube"), api_key=youtube_key),
            telegram=TelegramResource(base_url=url_of("telegram")),
            apify=ApifyResource(base_url=url_of("apify"), token=apify.DEMO_TOKEN),
            reddit=RedditResource(base_url=url_of("reddit")),
            urlscan=UrlscanResource(base_url=url_of("urlscan")),
        ),
    }
