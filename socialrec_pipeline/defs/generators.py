"""The generator registry built from the provider resources (one client per provider).

A provider whose key is missing is not registered: its URLs are recorded `unsupported`
(retryable, no attempt counted) instead of failing every call with 401 and burning attempts.
Short links are resolved by a guarded resolver and handed to the registered generator of their
target, after the target passes the same gate as any other URL.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from socialrec_pipeline.providers.base import GeneratorRegistry

if TYPE_CHECKING:
    from socialrec_pipeline.defs.resources import GeneratorsResource
    from socialrec_pipeline.routing.gate import GateSettings


#: Builds the short-link resolver. The code location uses the guarded resolver as is; tests, the
#: sandbox and `bench/cost.py` replace it with one whose sockets go to a loopback stand-in
#: (`socialrec_pipeline.sandbox.shortlinks.loopback_resolver`), with every guard still applied.
resolver_factory: Callable[[], Any] | None = None


def build_registry(resources: "GeneratorsResource", gate_settings: "GateSettings") -> GeneratorRegistry:
    from socialrec_pipeline.providers.apify import ApifyClient
    from socialrec_pipeline.providers.github import GitHubClient, GitHubGenerator
    from socialrec_pipeline.providers.instagram import InstagramGenerator
    from socialrec_pipeline.providers.reddit import RedditClient, RedditGenerator
    from socialrec_pipeline.providers.shortlinks import ShortLinkGenerator, ShortLinkResolver
    from socialrec_pipeline.providers.telegram import TelegramGenerator, TelegramPreviewClient
    from socialrec_pipeline.providers.tiktok import TikTokGenerator
    from socialrec_pipeline.providers.url_only import UrlOnlyGenerator
    from socialrec_pipeline.providers.web import UrlscanClient, WebGenerator
    from socialrec_pipeline.providers.x import TwitterApiClient, XGenerator
    from socialrec_pipeline.providers.youtube import YouTubeClient, YouTubeGenerator

    registry = GeneratorRegistry()
    registry.register(UrlOnlyGenerator())
    urlscan = resources.urlscan
    registry.register(WebGenerator(UrlscanClient(urlscan.base_url, urlscan.api_key) if urlscan.api_key else None))
    reddit = resources.reddit
    registry.register(
        RedditGenerator(
            RedditClient(
                reddit.base_url,
                client_id=reddit.client_id,
                client_secret=reddit.client_secret,
            )
        )
    )
    registry.register(TelegramGenerator(TelegramPreviewClient(resources.telegram.base_url)))
    registry.register(GitHubGenerator(GitHubClient(resources.github.base_url, resources.github.token)))
    if resources.youtube.api_key:
        registry.register(YouTubeGenerator(YouTubeClient(resources.youtube.base_url, resources.youtube.api_key)))
    if resources.x.api_key:
        registry.register(XGenerator(TwitterApiClient(resources.x.base_url, resources.x.api_key)))
    if resources.apify.token:
        apify = ApifyClient(resources.apify.base_url, resources.apify.token)
        registry.register(TikTokGenerator(apify))
        registry.register(InstagramGenerator(apify))
    from socialrec_pipeline.routing import route

    resolver = resolver_factory() if resolver_factory is not None else ShortLinkResolver()
    registry.register(ShortLinkGenerator(resolver, route, registry, gate_settings))
    return registry
