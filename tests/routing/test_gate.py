"""The gate: paid → skipped_paid, community off → unsupported, no generator → unsupported; fail closed."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from socialrec_pipeline.domain.enums import FetchStatus, Platform
from socialrec_pipeline.routing import GateSettings, GateSettingsError, SourceType, gate, route

ALL = set(SourceType)


def _r(url: str):  # type: ignore[no-untyped-def]
    r = route(url)
    assert r is not None
    return r


def test_defaults_are_closed() -> None:
    s = GateSettings()
    assert (s.enable_paid, s.enable_community) == (False, False)
    assert s.paid_platforms == {Platform.TIKTOK, Platform.INSTAGRAM}


@pytest.mark.parametrize(
    "url",
    ["https://www.tiktok.com/@kolguy/video/7301234567890123456", "https://vm.tiktok.com/ZMhvqR7Y9/",
     "https://www.tiktok.com/foryou", "https://www.instagram.com/p/C1a2B3c4D5e/", "https://instagram.com/kolguy"],
)
def test_paid_platform_is_skipped_while_paid_is_off(url: str) -> None:
    d = gate(_r(url), GateSettings(), ALL)
    assert (d.allowed, d.status) == (False, FetchStatus.SKIPPED_PAID)
    assert "paid" in d.reason


def test_paid_comes_first_even_without_a_generator() -> None:
    d = gate(_r("https://www.tiktok.com/@kolguy"), GateSettings(), set())
    assert d.status is FetchStatus.SKIPPED_PAID


def test_paid_on_lets_paid_platforms_through() -> None:
    d = gate(_r("https://www.tiktok.com/@kolguy"), GateSettings(enable_paid=True), ALL)
    assert d.allowed and d.status is None


def test_paid_platform_set_is_configurable() -> None:
    s = GateSettings(paid_platforms=frozenset({Platform.REDDIT}))
    assert gate(_r("https://www.reddit.com/r/solana"), s, ALL).status is FetchStatus.SKIPPED_PAID
    assert gate(_r("https://www.tiktok.com/@kolguy"), s, ALL).allowed


def test_community_is_unsupported_while_off() -> None:
    r = _r("https://x.com/i/communities/1781234567890123456")
    d = gate(r, GateSettings(), ALL)
    assert (d.allowed, d.status, d.reason) == (False, FetchStatus.UNSUPPORTED, "community fetching disabled")
    assert gate(r, GateSettings(enable_community=True), ALL).allowed


def test_no_generator_is_unsupported() -> None:
    r = _r("https://discord.gg/kolguy")
    d = gate(r, GateSettings(), {SourceType.X_TWEET})
    assert (d.allowed, d.status) == (False, FetchStatus.UNSUPPORTED)
    assert "discord_invite" in d.reason


def test_supported_may_be_a_callable_or_a_container() -> None:
    r = _r("https://x.com/kolguy")
    assert gate(r, GateSettings(), lambda st: st is SourceType.X_PROFILE).allowed
    assert not gate(r, GateSettings(), lambda st: False).allowed
    assert gate(r, GateSettings(), [SourceType.X_PROFILE]).allowed
    assert gate(r, GateSettings(), frozenset({"x_profile"})).allowed  # StrEnum members equal their values


def test_unrouted_input_is_unsupported() -> None:
    d = gate(None, GateSettings(), ALL)
    assert (d.allowed, d.status) == (False, FetchStatus.UNSUPPORTED)


def test_missing_settings_object_means_defaults() -> None:
    assert gate(_r("https://www.instagram.com/kolguy"), None, ALL).status is FetchStatus.SKIPPED_PAID


def test_settings_given_as_mapping_are_validated_strictly() -> None:
    with pytest.raises(ValidationError):
        gate(_r("https://www.instagram.com/kolguy"), {"enable_paid": "yes"}, ALL)  # type: ignore[arg-type]


@pytest.mark.parametrize("value", ["yes", "on", "enabled", "2", "", " ", "tru", "TRUE!", "None"])
def test_strict_bools_reject_everything_else(value: str) -> None:
    with pytest.raises(GateSettingsError, match="SOCIALREC_ENABLE_PAID"):
        GateSettings.from_env({"SOCIALREC_ENABLE_PAID": value})
    with pytest.raises(GateSettingsError, match="SOCIALREC_ENABLE_COMMUNITY"):
        GateSettings.from_env({"SOCIALREC_ENABLE_COMMUNITY": value})


@pytest.mark.parametrize(
    ("value", "expected"),
    [("true", True), ("TRUE", True), (" 1 ", True), ("false", False), ("0", False), ("False", False)],
)
def test_strict_bools_accept_true_false_1_0(value: str, expected: bool) -> None:
    assert GateSettings.from_env({"SOCIALREC_ENABLE_PAID": value}).enable_paid is expected


def test_from_env_missing_keys_are_closed_defaults() -> None:
    s = GateSettings.from_env({})
    assert s == GateSettings()
    assert not s.enable_paid


def test_paid_platforms_from_env() -> None:
    s = GateSettings.from_env({"SOCIALREC_PAID_PLATFORMS": "tt, ig,rd"})
    assert s.paid_platforms == {Platform.TIKTOK, Platform.INSTAGRAM, Platform.REDDIT}
    for bad in ("", " , ", "tiktok", "tt,instagram"):
        with pytest.raises(GateSettingsError, match="SOCIALREC_PAID_PLATFORMS"):
            GateSettings.from_env({"SOCIALREC_PAID_PLATFORMS": bad})


def test_settings_model_rejects_non_bool_and_unknown_fields() -> None:
    with pytest.raises(ValidationError):
        GateSettings(enable_paid="true")  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        GateSettings(enable_paid=1)  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        GateSettings(enable_piad=True)  # type: ignore[call-arg]
    with pytest.raises(ValidationError):
        GateSettings(paid_platforms=frozenset())


def test_malformed_env_never_opens_paid() -> None:
    for value in ("yes", "true ish", "t", "on"):
        with pytest.raises(GateSettingsError):
            GateSettings.from_env({"SOCIALREC_ENABLE_PAID": value, "SOCIALREC_ENABLE_COMMUNITY": "false"})
