"""Dagster resources: every endpoint and secret arrives through `EnvVar`, resolved at run time.

`EnvVar` values never appear in run config, tags, logs or the UI. A variable that is unset when
the code location loads falls back to the documented default (the real provider's base URL, or no
key); only its *presence* is checked at import, never its value.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Iterator, Mapping
from typing import Any

import dagster as dg
import redis
from pydantic import Field, PrivateAttr
from pymongo import MongoClient
from pymongo.database import Database

from socialrec_pipeline.defs.generators import ProviderClients, build_registry
from socialrec_pipeline.defs.launch_gate import RESOURCE_SETTINGS, LaunchRefused, resource_refusals
from socialrec_pipeline.providers.apify import ApifyClient
from socialrec_pipeline.providers.base import GeneratorRegistry
from socialrec_pipeline.providers.github import GitHubClient
from socialrec_pipeline.providers.reddit import RedditClient
from socialrec_pipeline.providers.telegram import TelegramPreviewClient
from socialrec_pipeline.providers.telegram_bot import TelegramBotClient
from socialrec_pipeline.providers.web import UrlscanClient
from socialrec_pipeline.providers.x import TwitterApiClient
from socialrec_pipeline.providers.youtube import YouTubeClient
from socialrec_pipeline.recording.locks import open_redis
from socialrec_pipeline.recording.settings import ENV_NAMES, RecordingSettings, SettingError
from socialrec_pipeline.recording.soltracker import SolTrackerClient
from socialrec_pipeline.routing.gate import GateSettings
from socialrec_pipeline.store.client import open_client, open_database
from socialrec_pipeline.store.store import Store
from socialrec_pipeline.stream.broker import EXCHANGE, queue_name_for
from socialrec_pipeline.stream.inbox import RecordInbox

# -- helpers -----------------------------------------------------------------------------------


def env_or(name: str, default: Any) -> Any:
    """`EnvVar(name)` when the variable is set, else the literal default (for optional settings).

    Only presence is checked here; the value is read by Dagster when a run (or tick) initialises
    the resource. Presence is decided per process at import: the code server, the daemon and every
    run worker import the definitions themselves, so a variable added to the deployment takes
    effect once those processes restart (a code location reload restarts the code server).
    """
    return dg.EnvVar(name) if name in os.environ else default


def field_default(resource: type[dg.ConfigurableResource], field: str) -> Any:
    """A resource field's declared default: each default is written once, on the field."""
    return resource.model_fields[field].default


_CLIENTS: dict[str, MongoClient] = {}
_INDEXED: set[tuple[str, str]] = set()
_PROCESS_LOCK = threading.Lock()


# -- infrastructure ----------------------------------------------------------------------------


class MongoResource(dg.ConfigurableResource):
    """MongoDB (or the local SecantusDB). One client per process; indexes ensured once per process."""

    uri: str = Field(description="MongoDB connection string (MONGODB_URI; may hold credentials, never shown).")
    database: str = Field(default="socialrec", description="Database name (MONGODB_DATABASE).")

    def db(self) -> Database:
        with _PROCESS_LOCK:
            client = _CLIENTS.get(self.uri)
            if client is None:
                client = _CLIENTS[self.uri] = open_client(self.uri)
        db = open_database(client, self.database)
        key = (self.uri, self.database)
        if key not in _INDEXED:
            Store(db).ensure_indexes()
            RecordInbox(db).ensure_indexes()
            with _PROCESS_LOCK:
                _INDEXED.add(key)
        return db

    def store(self) -> Store:
        return Store(self.db())


class RedisResource(dg.ConfigurableResource):
    """Redis: token locks, the unknown-token cache and the paid out-of-credit flag."""

    url: str = Field(default="redis://127.0.0.1:6379/0", description="Redis URL (REDIS_URL).")

    def client(self) -> redis.Redis:
        return open_redis(self.url)


class RabbitMQResource(dg.ConfigurableResource):
    """The broker carrying `token.flow`, and which of our queues this environment consumes."""

    url: str = Field(default="amqp://guest:guest@127.0.0.1:5672/%2F", description="AMQP URL (RABBITMQ_URL).")
    env: str = Field(
        default="dev",
        description="SOCIALREC_ENV: `prod` consumes af-social-scanner.token-flow.social-sync, any other "
        "value the same name + `.{env}`; `sandbox` also tags runs sandbox=true.",
    )
    exchange: str = Field(
        default=EXCHANGE,
        description="Topic exchange the queue is bound to with `token.flow` (RABBITMQ_EXCHANGE; "
        "only tests, benchmarks and the sandbox change it, so their events reach no other consumer's queue).",
    )
    management_url: str | None = Field(
        default=None,
        description="RabbitMQ management API (RABBITMQ_MANAGEMENT_URL; default http://<AMQP host>:15672, same "
        "user): only `socialrec doctor` uses it, to see the queue's binding.",
    )

    @property
    def queue(self) -> str:
        return queue_name_for(self.env)

    @property
    def is_sandbox(self) -> bool:
        env = self.env.strip()
        return env == "sandbox" or env.startswith("sandbox-")


class SolTrackerResource(dg.ConfigurableResource):
    """The upstream token service: one lookup per streamed token, paged listings for reconcile."""

    base_url: str = Field(description="SolTracker base URL (SOL_TRACKER_BASE_URL).")
    api_key: str = Field(description="Sent as x-api-key (SOL_TRACKER_API_KEY; secret, never shown).")
    af_group_ids: str = Field(
        default="", description="Comma-separated alpha-finder groups reconcile asks for (AF_GROUP_IDS); empty = all."
    )

    def client(self) -> SolTrackerClient:
        return SolTrackerClient(self.base_url, self.api_key)

    def group_ids(self) -> list[str]:
        return [g.strip() for g in self.af_group_ids.split(",") if g.strip()]


# -- recording settings ------------------------------------------------------------------------


class RecordingSettingsSource:
    """What an op or the sensor receives as `recording`: `settings()` parses the values when a run
    or tick asks, strictly (a malformed value raises and never opens the paid gate or lowers the
    threshold). In the code location the values are the process environment, read at that moment."""

    def __init__(self, values: Mapping[str, str] | None) -> None:
        #: `None` = the process environment (`SOCIALREC_*`), read on every `settings()` call.
        self._values = None if values is None else dict(values)

    @property
    def from_environment(self) -> bool:
        return self._values is None

    def settings(self) -> RecordingSettings:
        if self._values is None:
            return RecordingSettings.from_env({name: os.environ.get(name, "") for name in ENV_NAMES})
        return RecordingSettings.from_env({name: self._values.get(field, "") for name, field in ENV_NAMES.items()})


class RecordingSettingsResource(dg.ResourceDefinition):
    """Recording switches and limits (`SOCIALREC_*`): **deploy-time only**.

    They govern money and data (the paid gate, the paid platform list, the AF threshold, max
    attempts, the retry interval, ...), so they are not Dagster config: the resource never reads
    run config, and a run config that sets any of them
    (`resources: {recording: {config: {enable_paid: true}}}`) is refused before the run starts
    by the launch gate, naming the variable to set instead (defs/launch_gate.py). A
    `ConfigurableResource` field bound to an `EnvVar` would be a default that run config can
    override, which is how a Launchpad value once opened the paid gate; the other resources are
    therefore bound through `deploy_only` below.

    `from_environment()` (the code location) reads the process environment whenever a run or tick
    asks for the settings; tests pass field values (`RecordingSettingsResource(enable_paid="true")`),
    as strings parsed exactly like the environment's.
    """

    def __init__(self, **values: str) -> None:
        self._init(values)

    def _init(self, values: Mapping[str, str] | None) -> None:
        unknown = sorted(set(values or {}) - set(ENV_NAMES.values()))
        if unknown:
            raise TypeError(f"unknown recording settings {unknown}; known: {sorted(ENV_NAMES.values())}")
        source = RecordingSettingsSource(values)

        def init(context: dg.InitResourceContext) -> RecordingSettingsSource:
            refuse_resource_config("recording", context.resource_config)
            return source

        super().__init__(
            resource_fn=init,
            config_schema=DEPLOY_ONLY_SCHEMA,
            description="SOCIALREC_* recording settings, read from the deployment's environment when a run "
            "starts. Deploy-time only: run config cannot set them.",
        )
        self.source = source

    @classmethod
    def from_environment(cls) -> RecordingSettingsResource:
        """The code location's binding: the process environment, read at run (or tick) time."""
        resource = cls.__new__(cls)
        resource._init(None)
        return resource

    def settings(self) -> RecordingSettings:
        """The settings this resource gives a run (parsed now)."""
        return self.source.settings()


# -- platform providers (one resource each) ----------------------------------------------------


class XApiResource(dg.ConfigurableResource):
    """X through twitterapi.io. Without a key X URLs are recorded `unsupported` (retryable)."""

    base_url: str = Field(default="https://api.twitterapi.io", description="TWITTERAPI_BASE_URL.")
    api_key: str | None = Field(default=None, description="TWITTERAPI_API_KEY (secret); unset = X not called.")

    def client(self) -> TwitterApiClient | None:
        return TwitterApiClient(self.base_url, self.api_key) if self.api_key else None


class GitHubResource(dg.ConfigurableResource):
    """GitHub REST v3; works without a token at a lower rate limit."""

    base_url: str = Field(default="https://api.github.com", description="GITHUB_API_BASE_URL.")
    token: str | None = Field(default=None, description="GITHUB_TOKEN (secret, optional).")

    def client(self) -> GitHubClient:
        return GitHubClient(self.base_url, self.token)


class YouTubeResource(dg.ConfigurableResource):
    """YouTube Data API v3. Without a key YouTube URLs are recorded `unsupported` (retryable)."""

    base_url: str = Field(default="https://www.googleapis.com/youtube/v3", description="YOUTUBE_API_BASE_URL.")
    api_key: str | None = Field(default=None, description="YOUTUBE_API_KEY (secret); unset = YouTube not called.")

    def client(self) -> YouTubeClient | None:
        return YouTubeClient(self.base_url, self.api_key) if self.api_key else None


class TelegramResource(dg.ConfigurableResource):
    """Telegram public preview pages (no key); with a bot token, also the Bot API's `getChat` for
    the numeric chat id and type of public names (unset = not called, nothing changes)."""

    base_url: str = Field(default="https://t.me", description="TELEGRAM_BASE_URL.")
    bot_api_base_url: str = Field(default="https://api.telegram.org", description="TELEGRAM_BOT_API_BASE_URL.")
    bot_token: str | None = Field(default=None, description="TELEGRAM_BOT_TOKEN (secret, optional).")

    def client(self) -> TelegramPreviewClient:
        return TelegramPreviewClient(self.base_url)

    def bot_client(self) -> TelegramBotClient | None:
        return TelegramBotClient(self.bot_api_base_url, self.bot_token) if self.bot_token else None


class ApifyResource(dg.ConfigurableResource):
    """Apify actors for TikTok and Instagram (paid: called only with SOCIALREC_ENABLE_PAID=true)."""

    base_url: str = Field(default="https://api.apify.com", description="APIFY_BASE_URL.")
    token: str | None = Field(default=None, description="APIFY_TOKEN (secret); unset = TikTok/Instagram not called.")

    def client(self) -> ApifyClient | None:
        return ApifyClient(self.base_url, self.token) if self.token else None

    def credit_scope(self) -> str:
        """The credit guard's scope: the paid account (base URL + token), as a digest.

        Out of credit is a property of the account, so every step, run and job using it shares one
        flag, and a deployment switched to another account is not held back by the old one's."""
        return paid_account_scope(self.base_url, self.token)


def paid_account_scope(base_url: str, token: str | None) -> str:
    return "apify:" + hashlib.sha256(f"{base_url.rstrip('/')}\n{token or ''}".encode()).hexdigest()[:16]


#: The OAuth API host, the default base URL when client credentials are configured.
REDDIT_OAUTH_BASE_URL = "https://oauth.reddit.com"


class RedditResource(dg.ConfigurableResource):
    """Without client credentials the public `.json` endpoints of www.reddit.com are used; with
    them, the OAuth API (`oauth.reddit.com`) with an app-only bearer token."""

    base_url: str = Field(default="https://www.reddit.com", description="REDDIT_BASE_URL.")
    client_id: str | None = Field(default=None, description="REDDIT_CLIENT_ID (optional).")
    client_secret: str | None = Field(default=None, description="REDDIT_CLIENT_SECRET (secret, optional).")

    def client(self) -> RedditClient:
        return RedditClient(self.base_url, client_id=self.client_id, client_secret=self.client_secret)


class UrlscanResource(dg.ConfigurableResource):
    """Optional website enrichment; without a key websites are URL-only rows."""

    base_url: str = Field(default="https://urlscan.io", description="URLSCAN_BASE_URL.")
    api_key: str | None = Field(default=None, description="URLSCAN_API_KEY (secret, optional).")

    def client(self) -> UrlscanClient | None:
        return UrlscanClient(self.base_url, self.api_key) if self.api_key else None


class GeneratorsResource(dg.ConfigurableResource):
    """The platform API clients (X, GitHub, YouTube, Telegram, Apify, Reddit, urlscan) the URL
    steps call; a provider without its key is left out and its URLs are recorded `unsupported`."""

    x: XApiResource
    github: GitHubResource
    youtube: YouTubeResource
    telegram: TelegramResource
    apify: ApifyResource
    reddit: RedditResource
    urlscan: UrlscanResource

    _registry: tuple[GateSettings, GeneratorRegistry] | None = PrivateAttr(default=None)
    _clients: ProviderClients | None = PrivateAttr(default=None)

    def clients(self) -> ProviderClients:
        return ProviderClients(
            telegram=self.telegram.client(),
            telegram_bot=self.telegram.bot_client(),
            github=self.github.client(),
            reddit=self.reddit.client(),
            urlscan=self.urlscan.client(),
            youtube=self.youtube.client(),
            x=self.x.client(),
            apify=self.apify.client(),
        )

    def registry(self, gate_settings: GateSettings) -> GeneratorRegistry:
        """The registry for these providers; short links are gated with `gate_settings`."""
        if self._registry is None or self._registry[0] != gate_settings:
            self.close()  # the previous registry's HTTP clients
            self._clients = self.clients()
            self._registry = (gate_settings, build_registry(self._clients, gate_settings))
        return self._registry[1]

    def close(self) -> None:
        """Close the HTTP clients of the registry built last (the run's teardown calls it)."""
        if self._registry is not None:
            self._registry[1].close()
        if self._clients is not None:
            for client in vars(self._clients).values():
                if client is not None:
                    client.close()
        self._registry = self._clients = None


# -- deployment-only binding -------------------------------------------------------------------

#: The run-config schema of every resource of the code location: optional and ignored. Anything set
#: under `resources.<key>.config` is refused by the launch gate before the run is queued (with the
#: variable to change) and again by the resource when a run initialises it, so no launch-time value
#: ever reaches a resource. (An empty schema would refuse too, in Dagster's generic words.)
DEPLOY_ONLY_SCHEMA = dg.Field(
    dg.Permissive(),
    is_required=False,
    description="Deploy-time only: every field is an environment variable of the deployment "
    "(docs/configuration.md). A launch that sets anything here is refused.",
)


def refuse_resource_config(key: str, config: Any) -> None:
    refusals = resource_refusals(key, config)
    if refusals:
        raise LaunchRefused(refusals)


def resolve_env(resource: dg.ConfigurableResource) -> dg.ConfigurableResource:
    """A copy of `resource` with each `EnvVar` field read from the environment now (nested too)."""
    values: dict[str, Any] = {}
    for name in type(resource).model_fields:
        value = getattr(resource, name)
        # `EnvVar` and `EnvVar.int(...)` (an int subclass, not an `EnvVar`) both name their variable.
        if isinstance(value, dg.EnvVar) or hasattr(value, "env_var_name"):
            if value.env_var_name not in os.environ:
                raise SettingError(f"{value.env_var_name} is not set in this process's environment; set it in the "
                                   "deployment (docs/configuration.md) and restart or reload.")
            value = value.get_value()
        elif isinstance(value, dg.ConfigurableResource):
            value = resolve_env(value)
        values[name] = value
    return type(resource)(**values)


def deploy_only(key: str, resource: dg.ConfigurableResource) -> dg.ResourceDefinition:
    """`resource` bound without run config: its fields come from the deployment only."""

    def init(context: dg.InitResourceContext) -> Iterator[dg.ConfigurableResource]:
        refuse_resource_config(key, context.resource_config)
        value = resolve_env(resource)
        try:
            yield value
        finally:  # the run (or tick) is over: close what the resource opened
            close = getattr(value, "close", None)
            if callable(close):
                close()

    settings = ", ".join(sorted(set(RESOURCE_SETTINGS[key].values())))
    doc = (type(resource).__doc__ or "").strip().splitlines()[0]
    return dg.ResourceDefinition(
        resource_fn=init,
        config_schema=DEPLOY_ONLY_SCHEMA,
        description=f"{doc} Deploy-time only, from {settings}.",
    )


# -- one place that binds everything to the environment -----------------------------------------


def bound_resources_from_env() -> dict[str, dg.ConfigurableResource]:
    """Every infrastructure and provider resource bound to its environment variables (before
    `deploy_only` wraps it): what the deployment sets, readable by tests and the setup checks."""
    generators = GeneratorsResource(
        x=XApiResource(
            base_url=env_or("TWITTERAPI_BASE_URL", field_default(XApiResource, "base_url")),
            api_key=env_or("TWITTERAPI_API_KEY", None),
        ),
        github=GitHubResource(
            base_url=env_or("GITHUB_API_BASE_URL", field_default(GitHubResource, "base_url")),
            token=env_or("GITHUB_TOKEN", None),
        ),
        youtube=YouTubeResource(
            base_url=env_or("YOUTUBE_API_BASE_URL", field_default(YouTubeResource, "base_url")),
            api_key=env_or("YOUTUBE_API_KEY", None),
        ),
        telegram=TelegramResource(
            base_url=env_or("TELEGRAM_BASE_URL", field_default(TelegramResource, "base_url")),
            bot_api_base_url=env_or(
                "TELEGRAM_BOT_API_BASE_URL", field_default(TelegramResource, "bot_api_base_url")
            ),
            bot_token=env_or("TELEGRAM_BOT_TOKEN", None),
        ),
        apify=ApifyResource(
            base_url=env_or("APIFY_BASE_URL", field_default(ApifyResource, "base_url")),
            token=env_or("APIFY_TOKEN", None),
        ),
        reddit=RedditResource(
            base_url=env_or(
                "REDDIT_BASE_URL",
                REDDIT_OAUTH_BASE_URL
                if os.environ.get("REDDIT_CLIENT_ID")
                else field_default(RedditResource, "base_url"),
            ),
            client_id=env_or("REDDIT_CLIENT_ID", None),
            client_secret=env_or("REDDIT_CLIENT_SECRET", None),
        ),
        urlscan=UrlscanResource(
            base_url=env_or("URLSCAN_BASE_URL", field_default(UrlscanResource, "base_url")),
            api_key=env_or("URLSCAN_API_KEY", None),
        ),
    )
    return {
        "mongo": MongoResource(
            uri=dg.EnvVar("MONGODB_URI"), database=env_or("MONGODB_DATABASE", field_default(MongoResource, "database"))
        ),
        "redis": RedisResource(url=env_or("REDIS_URL", field_default(RedisResource, "url"))),
        "rabbitmq": RabbitMQResource(
            url=env_or("RABBITMQ_URL", field_default(RabbitMQResource, "url")),
            env=env_or("SOCIALREC_ENV", field_default(RabbitMQResource, "env")),
            exchange=env_or("RABBITMQ_EXCHANGE", field_default(RabbitMQResource, "exchange")),
            management_url=env_or("RABBITMQ_MANAGEMENT_URL", None),
        ),
        "soltracker": SolTrackerResource(
            base_url=dg.EnvVar("SOL_TRACKER_BASE_URL"),
            api_key=dg.EnvVar("SOL_TRACKER_API_KEY"),
            af_group_ids=env_or("AF_GROUP_IDS", field_default(SolTrackerResource, "af_group_ids")),
        ),
        "generators": generators,
    }


def resources_from_env() -> dict[str, Any]:
    """The resource map of the code location (names are the op/sensor parameter names)."""
    return {
        **{key: deploy_only(key, resource) for key, resource in bound_resources_from_env().items()},
        "recording": RecordingSettingsResource.from_environment(),
    }


#: How ops and the sensor declare the `recording` resource (its value is a `RecordingSettingsSource`).
RecordingSettingsParam = dg.ResourceParam[RecordingSettingsSource]
