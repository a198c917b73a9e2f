"""Dagster resources: every endpoint and secret arrives through `EnvVar`, resolved at run time.

`EnvVar` values never appear in run config, tags, logs or the UI. A variable that is unset when
the code location loads falls back to the documented default (the real provider's base URL, or no
key); only its *presence* is checked at import, never its value.
"""

from __future__ import annotations

import os
import threading
from typing import Any

import dagster as dg
from pydantic import PrivateAttr

from socialrec_pipeline.store.client import open_client, open_database
from socialrec_pipeline.stream.broker import EXCHANGE, queue_name_for

# -- helpers -----------------------------------------------------------------------------------


def env_or(name: str, default: Any) -> Any:
    """`EnvVar(name)` when the variable is set, else the literal default (for optional settings).

    Only presence is checked here; the value is read by Dagster when a run (or tick) initialises
    the resource. Presence is decided per process at import: the code server, the daemon and every
    run worker import the definitions themselves, so a variable added to the deployment takes
    effect once those processes restart (a code location reload restarts the code server).
    """
    return dg.EnvVar(name) if name in os.environ else default


_CLIENTS: dict[str, Any] = {}
_INDEXED: set[tuple[str, str]] = set()
_PROCESS_LOCK = threading.Lock()


# -- infrastructure ----------------------------------------------------------------------------


class MongoResource(dg.ConfigurableResource):
    """MongoDB (or the local SecantusDB). One client per process; indexes ensured once per process."""

    uri: str
    database: str = "socialrec"

    def db(self):
        with _PROCESS_LOCK:
            client = _CLIENTS.get(self.uri)
            if client is None:
                client = _CLIENTS[self.uri] = open_client(self.uri)
        db = open_database(client, self.database)
        key = (self.uri, self.database)
        if key not in _INDEXED:
            from socialrec_pipeline.store.store import Store
            from socialrec_pipeline.stream.inbox import RecordInbox

            Store(db).ensure_indexes()
            RecordInbox(db).ensure_indexes()
            with _PROCESS_LOCK:
                _INDEXED.add(key)
        return db

    def store(self):
        from socialrec_pipeline.store.store import Store

        return Store(self.db())


class RedisResource(dg.ConfigurableResource):
    url: str = "redis://127.0.0.1:6379/0"

    def client(self):
        from socialrec_pipeline.recording.locks import open_redis

        return open_redis(self.url)


class RabbitMQResource(dg.ConfigurableResource):
    """The broker carrying `token.flow`, and which of our queues this environment consumes."""

    url: str = "amqp://guest:guest@127.0.0.1:5672/%2F"
    env: str = "dev"
    #: The producer's exchange. Only tests, benchmarks and the sandbox set another one, so their
    #: events never reach the queues of other consumers on the same broker.
    exchange: str = EXCHANGE

    @property
    def queue(self) -> str:
        return queue_name_for(self.env)

    @property
    def is_sandbox(self) -> bool:
        return self.env.strip() == "sandbox"


class SolTrackerResource(dg.ConfigurableResource):
    base_url: str
    api_key: str
    #: Comma-separated alpha-finder groups the reconcile asks for; empty = all groups.
    af_group_ids: str = ""

    def client(self):
        from socialrec_pipeline.recording.soltracker import SolTrackerClient

        return SolTrackerClient(self.base_url, self.api_key)

    def group_ids(self) -> list[str]:
        return [g.strip() for g in self.af_group_ids.split(",") if g.strip()]


# -- recording settings ------------------------------------------------------------------------


class RecordingSettingsResource(dg.ConfigurableResource):
    """Every `RecordingSettings` value as an environment string (`SOCIALREC_*`), parsed strictly:
    a malformed value raises (the run or tick fails) instead of opening a gate or lowering the
    threshold. Empty means "the typed default of `RecordingSettings`", so each default has one home.
    """

    af_threshold: str = ""
    enable_paid: str = ""
    enable_community: str = ""
    #: Comma-separated platform codes treated as paid (default `tt,ig`).
    paid_platforms: str = ""
    max_attempts: str = ""
    retry_min_interval_minutes: str = ""
    retry_limit: str = ""
    reconcile_page_limit: str = ""
    lock_ttl_s: str = ""
    unknown_token_ttl_s: str = ""

    def settings(self):
        from socialrec_pipeline.recording.settings import ENV_NAMES, RecordingSettings

        return RecordingSettings.from_env({name: getattr(self, field) for name, field in ENV_NAMES.items()})

    @classmethod
    def from_environment(cls) -> "RecordingSettingsResource":
        """One `EnvVar` per `SOCIALREC_*` setting that is set (see `env_or`)."""
        from socialrec_pipeline.recording.settings import ENV_NAMES

        return cls(**{field: env_or(name, "") for name, field in ENV_NAMES.items()})


# -- platform providers (one resource each) ----------------------------------------------------


class XApiResource(dg.ConfigurableResource):
    base_url: str = "https://api.twitterapi.io"
    api_key: str | None = None


class GitHubResource(dg.ConfigurableResource):
    base_url: str = "https://api.github.com"
    token: str | None = None


class YouTubeResource(dg.ConfigurableResource):
    base_url: str = "https://www.googleapis.com/youtube/v3"
    api_key: str | None = None


class TelegramResource(dg.ConfigurableResource):
    base_url: str = "https://t.me"


class ApifyResource(dg.ConfigurableResource):
    base_url: str = "https://api.apify.com"
    token: str | None = None


class RedditResource(dg.ConfigurableResource):
    """Without client credentials the public `.json` endpoints of www.reddit.com are used; with
    them, the OAuth API (`oauth.reddit.com`) with an app-only bearer token."""

    base_url: str = "https://www.reddit.com"
    client_id: str | None = None
    client_secret: str | None = None


class UrlscanResource(dg.ConfigurableResource):
    base_url: str = "https://urlscan.io"
    api_key: str | None = None


class GeneratorsResource(dg.ConfigurableResource):
    """Builds the source-type → generator registry from the provider resources."""

    x: XApiResource
    github: GitHubResource
    youtube: YouTubeResource
    telegram: TelegramResource
    apify: ApifyResource
    reddit: RedditResource
    urlscan: UrlscanResource

    _registry: Any = PrivateAttr(default=None)

    def registry(self, gate_settings):
        """The registry for these providers; short links are gated with `gate_settings`."""
        if self._registry is None or self._registry[0] != gate_settings:
            from socialrec_pipeline.defs.generators import build_registry

            self._registry = (gate_settings, build_registry(self, gate_settings))
        return self._registry[1]


# -- one place that binds everything to the environment -----------------------------------------


def resources_from_env() -> dict[str, Any]:
    """The resource map of the code location (names are the op/sensor parameter names)."""
    generators = GeneratorsResource(
        x=XApiResource(
            base_url=env_or("TWITTERAPI_BASE_URL", "https://api.twitterapi.io"),
            api_key=env_or("TWITTERAPI_API_KEY", None),
        ),
        github=GitHubResource(
            base_url=env_or("GITHUB_API_BASE_URL", "https://api.github.com"),
            token=env_or("GITHUB_TOKEN", None),
        ),
        youtube=YouTubeResource(
            base_url=env_or("YOUTUBE_API_BASE_URL", "https://www.googleapis.com/youtube/v3"),
            api_key=env_or("YOUTUBE_API_KEY", None),
        ),
        telegram=TelegramResource(base_url=env_or("TELEGRAM_BASE_URL", "https://t.me")),
        apify=ApifyResource(
            base_url=env_or("APIFY_BASE_URL", "https://api.apify.com"),
            token=env_or("APIFY_TOKEN", None),
        ),
        reddit=RedditResource(
            base_url=env_or(
                "REDDIT_BASE_URL",
                "https://oauth.reddit.com" if os.environ.get("REDDIT_CLIENT_ID") else "https://www.reddit.com",
            ),
            client_id=env_or("REDDIT_CLIENT_ID", None),
            client_secret=env_or("REDDIT_CLIENT_SECRET", None),
        ),
        urlscan=UrlscanResource(
            base_url=env_or("URLSCAN_BASE_URL", "https://urlscan.io"),
            api_key=env_or("URLSCAN_API_KEY", None),
        ),
    )
    return {
        "mongo": MongoResource(uri=dg.EnvVar("MONGODB_URI"), database=env_or("MONGODB_DATABASE", "socialrec")),
        "redis": RedisResource(url=env_or("REDIS_URL", "redis://127.0.0.1:6379/0")),
        "rabbitmq": RabbitMQResource(
            url=env_or("RABBITMQ_URL", "amqp://guest:guest@127.0.0.1:5672/%2F"),
            env=env_or("SOCIALREC_ENV", "dev"),
            exchange=env_or("RABBITMQ_EXCHANGE", EXCHANGE),
        ),
        "soltracker": SolTrackerResource(
            base_url=dg.EnvVar("SOL_TRACKER_BASE_URL"),
            api_key=dg.EnvVar("SOL_TRACKER_API_KEY"),
            af_group_ids=env_or("AF_GROUP_IDS", ""),
        ),
        "recording": RecordingSettingsResource.from_environment(),
        "generators": generators,
    }
