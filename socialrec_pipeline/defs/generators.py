"""The generator registry built from the provider resources (one client per provider).

A provider whose key is missing is not registered: its URLs are recorded `unsupported`
(retryable, no attempt counted) instead of failing every call with 401 and burning attempts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from socialrec_pipeline.providers.base import GeneratorRegistry

if TYPE_CHECKING:
    from socialrec_pipeline.defs.resources import GeneratorsResource


def build_registry(resources: "GeneratorsResource") -> GeneratorRegistry:
    from socialrec_pipeline.providers.apify import ApifyClient
    from socialrec_pipeline.providers.github import GitHubClient, GitHubGenerator
    from socialrec_pipeline.providers.instagram import InstagramGenerator
    from socialrec_pipeline.providers.reddit import RedditClient, RedditGenerator
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
    registry.register(RedditGenerator(RedditClient(resources.reddit.base_url)))
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
    return registry
