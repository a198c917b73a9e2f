"""The code location's resources: endpoints through `EnvVar`, recording settings from the deployment's
environment only (run config cannot set them), both resolved at run time."""

from __future__ import annotations

import pytest

from socialrec_pipeline.defs.resources import resources_from_env
from socialrec_pipeline.domain.enums import Platform
from socialrec_pipeline.providers.shortlinks import ShortLinkGenerator
from socialrec_pipeline.recording.settings import ENV_NAMES, RecordingSettings, SettingError


def resolved(resource):
    """What a run sees: the settings read from the environment when the run asks."""
    return resource.source


def test_every_recording_setting_can_be_set_from_the_environment(monkeypatch):
    for name in ENV_NAMES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SOCIALREC_PAID_PLATFORMS", "tt,ig,rd")
    monkeypatch.setenv("SOCIALREC_LOCK_TTL_S", "300")
    monkeypatch.setenv("SOCIALREC_RETRY_LIMIT", "7")

    settings = resolved(resources_from_env()["recording"]).settings()

    assert settings.paid_platforms == frozenset({Platform.TIKTOK, Platform.INSTAGRAM, Platform.REDDIT})
    assert settings.lock_ttl_s == 300 and settings.retry_limit == 7
    assert settings.af_threshold == RecordingSettings().af_threshold  # unset → the typed default
    assert RecordingSettings(**{f: getattr(settings, f) for f in ENV_NAMES.values()}) == settings


def test_the_value_is_read_when_a_run_starts_not_when_the_code_loads(monkeypatch):
    monkeypatch.setenv("SOCIALREC_RETRY_LIMIT", "7")
    recording = resources_from_env()["recording"]
    assert recording.source.from_environment  # nothing of the value is kept in the definitions
    monkeypatch.setenv("SOCIALREC_RETRY_LIMIT", "9")
    assert resolved(recording).settings().retry_limit == 9


def test_a_malformed_setting_fails_closed(monkeypatch):
    monkeypatch.setenv("SOCIALREC_PAID_PLATFORMS", "")
    monkeypatch.setenv("SOCIALREC_AF_THRESHOLD", "3")  # below the floor: never lowers the threshold
    with pytest.raises(SettingError):
        resolved(resources_from_env()["recording"]).settings()


def test_a_registry_build_closes_the_clients_it_opened():
    from socialrec_pipeline.defs.resources import (  # noqa: I001
        ApifyResource,
        GeneratorsResource,
        GitHubResource,
        RedditResource,
        TelegramResource,
        UrlscanResource,
        XApiResource,
        YouTubeResource,
    )
    from socialrec_pipeline.routing.gate import GateSettings

    generators = GeneratorsResource(
        x=XApiResource(api_key="k"), github=GitHubResource(), youtube=YouTubeResource(api_key="k"),
        telegram=TelegramResource(), apify=ApifyResource(token="t"), reddit=RedditResource(),
        urlscan=UrlscanResource(api_key="k"),
    )  # fmt: skip
    registry = generators.registry(GateSettings())
    shortlinks = next(g for g in registry.supported.values() if isinstance(g, ShortLinkGenerator))
    opened = [shortlinks._resolver._http, *(c._http for c in vars(generators._clients).values() if hasattr(c, "_http"))]
    assert len(opened) > 3 and not any(client.is_closed for client in opened)
    generators.registry(GateSettings(enable_paid=True))  # a new build closes the previous one
    assert all(client.is_closed for client in opened)
    generators.close()
    assert generators._registry is None
