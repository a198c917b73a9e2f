"""The generator registry assembled from the provider clients (one client per provider).

Each provider resource (`defs/resources.py`) builds its own client, or `None` when its key is
missing; this module only assembles the registry from them. A provider without a client is not
registered: its URLs are recorded `unsupported` (retryable, no attempt counted) instead of failing
every call with 401 and burning attempts. Short links are resolved by a guarded resolver and handed
to the registered generator of their target, after the target passes the same gate as any other URL.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from socialrec_pipeline.providers.apify import ApifyClient
from socialrec_pipeline.providers.base import GeneratorRegistry
from socialrec_pipeline.providers.github import GitHubClient, GitHubGenerator
from socialrec_pipeline.providers.instagram import InstagramGenerator
from socialrec_pipeline.providers.reddit import RedditClient, RedditGenerator
from socialrec_pipeline.providers.shortlinks import ShortLinkGenerator, ShortLinkResolver
from socialrec_pipeline.providers.telegram import TelegramGenerator, TelegramPreviewClient
from socialrec_pipeline.providers.telegram_bot import TelegramBotClient
from socialrec_pipeline.providers.tiktok import TikTokGenerator
from socialrec_pipeline.providers.url_only import UrlOnlyGenerator
from socialrec_pipeline.providers.web import UrlscanClient, WebGenerator
from socialrec_pipeline.providers.x import TwitterApiClient, XGenerator
from socialrec_pipeline.providers.youtube import YouTubeClient, YouTubeGenerator
from socialrec_pipeline.routing import route
from socialrec_pipeline.routing.gate import GateSettings

#: Builds the short-link resolver. The code location uses the guarded resolver as is; tests, the
#: sandbox and `bench/cost.py` replace it with one whose sockets go to a loopback stand-in
#: (`socialrec_pipeline.sandbox.shortlinks.loopback_resolver`), with every guard still applied.
resolver_factory: Callable[[], ShortLinkResolver] | None = None


@dataclass(frozen=True)
class ProviderClients:
    """One client per provider; `None` = the provider has no key and is not called."""

    telegram: TelegramPreviewClient
    github: GitHubClient
    reddit: RedditClient
    urlscan: UrlscanClient | None = None
    #: Optional enrichment of Telegram public names (numeric chat id); None = not called.
    telegram_bot: TelegramBotClient | None = None
    youtube: YouTubeClient | None = None
    x: TwitterApiClient | None = None
    apify: ApifyClient | None = None


def build_registry(clients: ProviderClients, gate_settings: GateSettings) -> GeneratorRegistry:
    registry = GeneratorRegistry()
    registry.register(UrlOnlyGenerator())
    registry.register(WebGenerator(clients.urlscan))
    registry.register(RedditGenerator(clients.reddit))
    registry.register(TelegramGenerator(clients.telegram, clients.telegram_bot))
    registry.register(GitHubGenerator(clients.github))
    if clients.youtube is not None:
        registry.register(YouTubeGenerator(clients.youtube))
    if clients.x is not None:
        registry.register(XGenerator(clients.x))
    if clients.apify is not None:
        registry.register(TikTokGenerator(clients.apify))
        registry.register(InstagramGenerator(clients.apify))
    resolver = resolver_factory() if resolver_factory is not None else ShortLinkResolver()
    registry.register(ShortLinkGenerator(resolver, route, registry, gate_settings))
    return registry
