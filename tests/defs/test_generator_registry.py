"""The code location's registry covers every source type, or leaves it unsupported on purpose."""

from __future__ import annotations

from socialrec_pipeline.defs.resources import (
    ApifyResource,
    GeneratorsResource,
    GitHubResource,
    RedditResource,
    TelegramResource,
    UrlscanResource,
    XApiResource,
    YouTubeResource,
)
from socialrec_pipeline.providers.shortlinks import ShortLinkGenerator
from socialrec_pipeline.recording.settings import RecordingSettings
from socialrec_pipeline.routing.source_types import SourceType

#: Deliberately unregistered (reasons in providers/url_only.py and docs/generators.md).
DELIBERATELY_UNSUPPORTED = {
    SourceType.X_UNKNOWN,
    SourceType.TIKTOK_UNKNOWN,
    SourceType.INSTAGRAM_UNKNOWN,
    SourceType.YOUTUBE_UNKNOWN,
    SourceType.REDDIT_UNKNOWN,
    SourceType.GITHUB_UNKNOWN,
    SourceType.TELEGRAM_UNKNOWN,
    SourceType.DISCORD_INVITE,
    SourceType.INSTAGRAM_STORY,
}


def generators(**keys) -> GeneratorsResource:
    return GeneratorsResource(
        x=XApiResource(base_url="http://127.0.0.1:9", api_key=keys.get("x")),
        github=GitHubResource(base_url="http://127.0.0.1:9"),
        youtube=YouTubeResource(base_url="http://127.0.0.1:9", api_key=keys.get("yt")),
        telegram=TelegramResource(base_url="http://127.0.0.1:9", bot_token=keys.get("tg_bot")),
        apify=ApifyResource(base_url="http://127.0.0.1:9", token=keys.get("apify")),
        reddit=RedditResource(base_url="http://127.0.0.1:9"),
        urlscan=UrlscanResource(base_url="http://127.0.0.1:9"),
    )


def test_every_source_type_has_a_generator_or_a_written_reason():
    gate = RecordingSettings().gate_settings()
    registry = generators(x="k", yt="k", apify="k").registry(gate)
    supported = set(registry.supported)
    assert supported | DELIBERATELY_UNSUPPORTED == set(SourceType)
    assert not supported & DELIBERATELY_UNSUPPORTED


def test_short_links_are_resolved_and_gated_with_the_recording_gate():
    gate = RecordingSettings(enable_paid=False).gate_settings()
    registry = generators(x="k").registry(gate)
    for short in (SourceType.X_SHORTLINK, SourceType.TIKTOK_SHORTLINK, SourceType.REDDIT_SHARE):
        generator = registry.for_source_type(short)
        assert isinstance(generator, ShortLinkGenerator)
        assert generator._settings == gate


def test_providers_without_keys_are_left_unregistered_so_their_urls_stay_retryable():
    registry = generators().registry(RecordingSettings().gate_settings())
    assert registry.for_source_type(SourceType.X_TWEET) is None
    assert registry.for_source_type(SourceType.YOUTUBE_VIDEO) is None
    assert registry.for_source_type(SourceType.TIKTOK_VIDEO) is None
    # Keyless providers are always there.
    assert registry.for_source_type(SourceType.GITHUB_REPO) is not None
    assert registry.for_source_type(SourceType.REDDIT_POST) is not None
    assert registry.for_source_type(SourceType.WEBSITE) is not None


def test_each_provider_resource_builds_its_own_client_and_none_without_its_key():
    keyed = generators(x="k", yt="k", apify="k").clients()
    assert keyed.x is not None and keyed.youtube is not None and keyed.apify is not None
    bare = generators().clients()
    assert (bare.x, bare.youtube, bare.apify, bare.urlscan) == (None, None, None, None)
    assert bare.github is not None and bare.telegram is not None and bare.reddit is not None


def test_the_registry_module_does_not_import_the_resources_module():
    """One direction only: resources build clients and ask generators.py to assemble them."""
    import ast
    from pathlib import Path

    import socialrec_pipeline.defs.generators as module

    tree = ast.parse(Path(module.__file__).read_text())
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert "socialrec_pipeline.defs.resources" not in imported
    nested = [n for f in ast.walk(tree) if isinstance(f, ast.FunctionDef) for n in ast.walk(f)
              if isinstance(n, (ast.Import, ast.ImportFrom))]
    assert nested == []


def test_the_telegram_bot_client_exists_only_with_a_token():
    assert generators().clients().telegram_bot is None
    assert generators(tg_bot="123:secret").clients().telegram_bot is not None


def test_the_bot_token_is_bound_as_an_env_var_never_as_a_value(monkeypatch):
    import dagster as dg

    from socialrec_pipeline.defs.resources import bound_resources_from_env

    monkeypatch.delenv("TELEGRAM_BOT_TOKEN", raising=False)
    assert bound_resources_from_env()["generators"].telegram.bot_token is None
    monkeypatch.setenv("TELEGRAM_BOT_TOKEN", "123:secret")
    bound = bound_resources_from_env()["generators"].telegram.bot_token
    assert isinstance(bound, dg.EnvVar) and bound.env_var_name == "TELEGRAM_BOT_TOKEN"
