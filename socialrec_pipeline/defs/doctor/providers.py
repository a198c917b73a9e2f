"""Doctor checks of the upstream (SolTracker) and of every platform provider, each with the
cheapest call its contract allows (or none when every call is billed).
"""

from __future__ import annotations

import contextlib
from typing import Any

from socialrec_pipeline.defs.doctor.core import (
    PROBE_ADDRESS,
    PROBE_DOMAIN,
    PROBE_GITHUB_LOGIN,
    PROBE_YOUTUBE_CHANNEL,
    ConfigMissing,
    DoctorContext,
    Finding,
    first_line,
    http_client,
    set_or_unset,
)
from socialrec_pipeline.defs.resources import paid_account_scope
from socialrec_pipeline.domain.errors import ProviderKeyRejected, ProviderQuotaExceeded, TargetBlocked, TargetNotFound
from socialrec_pipeline.providers.http import send
from socialrec_pipeline.recording.locks import PaidCreditGuard
from socialrec_pipeline.recording.settings import SettingError
from socialrec_pipeline.recording.soltracker import UpstreamConfigError, UpstreamUnavailable

# -- upstream and providers ------------------------------------------------------------------------


def check_soltracker(ctx: DoctorContext) -> Finding:
    """The base URL answers and the key is accepted (one token lookup: the cheapest call)."""
    name = "soltracker"
    try:
        resource = ctx.resource("soltracker")
    except ConfigMissing as exc:
        return Finding(name, "fail", f"not configured: {exc}", "set SOL_TRACKER_BASE_URL and SOL_TRACKER_API_KEY")
    key = f"key {set_or_unset(resource.api_key)}"
    try:
        with resource.client() as client:
            client.get_token(PROBE_ADDRESS)
    except UpstreamConfigError as exc:
        refused = "refused" in str(exc)
        return Finding(
            name,
            "fail",
            f"{key}; key refused" if refused else f"{key}; {first_line(exc)}",
            "set SOL_TRACKER_API_KEY to a valid key" if refused else "check SOL_TRACKER_BASE_URL",
        )
    except UpstreamUnavailable as exc:
        return Finding(name, "fail", f"{key}; unreachable ({first_line(exc)})", "check SOL_TRACKER_BASE_URL")
    except Exception as exc:
        return Finding(name, "warn", f"{key}; unexpected answer ({first_line(exc)})", "check SOL_TRACKER_BASE_URL")
    return Finding(name, "ok", f"{key}; reachable, key accepted (GET /api/v1/tokens/{{address}})")


def _generators(ctx: DoctorContext) -> Any:
    return ctx.resource("generators")


def check_x(ctx: DoctorContext) -> Finding:
    name = "provider.x"
    x = _generators(ctx).x
    if not x.api_key:
        return Finding(
            name,
            "warn",
            "key unset: X URLs are recorded `unsupported` (retried once a key is set)",
            "set TWITTERAPI_API_KEY",
        )
    return Finding(name, "ok", "key set; not verified (every twitterapi.io call is billed)")


def check_github(ctx: DoctorContext) -> Finding:
    name = "provider.github"
    gh = _generators(ctx).github
    if not gh.token:
        return Finding(
            name,
            "warn",
            "token unset: unauthenticated, 60 requests/hour (GitHub URLs fail with `error` past it)",
            "set GITHUB_TOKEN",
        )
    headers = {"Accept": "application/vnd.github+json", "Authorization": f"Bearer {gh.token}"}
    try:
        with http_client(gh.base_url, ctx.timeout_s, headers=headers) as http:
            response = send(http, "GET", f"/users/{PROBE_GITHUB_LOGIN}")
    except Exception as exc:
        return Finding(name, "warn", f"token set; unreachable ({first_line(exc)})", "check GITHUB_API_BASE_URL")
    remaining = response.headers.get("x-ratelimit-remaining")
    if response.status_code == 401:
        return Finding(name, "fail", "token set; token refused (HTTP 401)", "set GITHUB_TOKEN to a valid token")
    if remaining == "0":
        return Finding(name, "warn", "token set; rate limit exhausted", "wait for the reset, or another GITHUB_TOKEN")
    if response.status_code >= 500 or response.status_code == 429:
        return Finding(name, "warn", f"token set; HTTP {response.status_code}", "check GITHUB_API_BASE_URL")
    rate = f", {remaining} requests left this hour" if remaining else ""
    return Finding(name, "ok", f"token set; accepted{rate}")


def check_youtube(ctx: DoctorContext) -> Finding:
    name = "provider.youtube"
    yt = _generators(ctx).youtube
    if not yt.api_key:
        return Finding(
            name,
            "warn",
            "key unset: YouTube URLs are recorded `unsupported` (retried once a key is set)",
            "set YOUTUBE_API_KEY",
        )
    if not ctx.spend_quota:
        return Finding(name, "ok", "key set; not verified (a call costs quota: `socialrec doctor --spend-quota`)")
    client = yt.client()
    try:
        client.channels(id=PROBE_YOUTUBE_CHANNEL)
    except ProviderKeyRejected:
        return Finding(name, "fail", "key set; key refused", "set YOUTUBE_API_KEY to a valid key")
    except ProviderQuotaExceeded:
        return Finding(name, "warn", "key set; daily quota exhausted", "wait for the quota reset (midnight Pacific)")
    except Exception as exc:
        return Finding(name, "warn", f"key set; {first_line(exc)}", "check YOUTUBE_API_BASE_URL")
    finally:
        client.close()
    return Finding(name, "ok", "key set; accepted (1 quota unit spent)")


def check_telegram(ctx: DoctorContext) -> Finding:
    name = "provider.telegram"
    tg = _generators(ctx).telegram
    try:
        with http_client(tg.base_url, ctx.timeout_s) as http:
            response = send(http, "GET", "/telegram")
    except Exception as exc:
        return Finding(
            name,
            "warn",
            f"public pages unreachable ({first_line(exc)}): Telegram URLs are recorded `error`",
            "check TELEGRAM_BASE_URL and outbound HTTPS",
        )
    if response.status_code >= 500 or response.status_code == 429:
        return Finding(name, "warn", f"public pages answer HTTP {response.status_code}", "check TELEGRAM_BASE_URL")
    return Finding(name, "ok", "no key needed; public pages reachable")


def check_reddit(ctx: DoctorContext) -> Finding:
    name = "provider.reddit"
    rd = _generators(ctx).reddit
    credentials = f"client credentials {set_or_unset(rd.client_id and rd.client_secret)}"
    client = rd.client()
    try:
        client.get_json("/r/reddit/about.json")
    except (TargetNotFound, TargetBlocked):
        pass  # an answer about the page: the endpoint is reachable, and any credentials were taken
    except Exception as exc:
        message = first_line(exc)
        if "token endpoint answered HTTP 401" in message:
            return Finding(
                name,
                "fail",
                f"{credentials}; credentials refused",
                "set REDDIT_CLIENT_ID and REDDIT_CLIENT_SECRET to a valid app's, or unset both (public JSON)",
            )
        return Finding(
            name,
            "warn",
            f"{credentials}; unreachable ({message}): Reddit URLs are recorded `error`",
            "check REDDIT_BASE_URL and outbound HTTPS",
        )
    finally:
        client.close()
    return Finding(name, "ok", f"{credentials}; {'OAuth API' if rd.client_id else 'public JSON'} reachable")


def check_apify(ctx: DoctorContext) -> Finding:
    name = "provider.apify"
    apify = _generators(ctx).apify
    try:
        paid = ctx.settings().enable_paid
    except SettingError:
        paid = False
    if not apify.token:
        if paid:
            return Finding(
                name,
                "warn",
                "token unset while SOCIALREC_ENABLE_PAID is on: TikTok/Instagram URLs are recorded `unsupported`",
                "set APIFY_TOKEN",
            )
        return Finding(name, "ok", "token unset; TikTok/Instagram are `skipped_paid` while the paid gate is off")
    guard = ""
    with contextlib.suppress(Exception):
        state = PaidCreditGuard(ctx.resource("redis").client(), scope=paid_account_scope(apify.base_url, apify.token))
        described = state.state()
        if described:
            return Finding(
                name,
                "warn",
                f"token set; paid credit guard {described.describe()}: no paid call runs",
                "top up the Apify account, then `socialrec paid-credit reset`",
            )
        guard = "; credit guard clear"
    return Finding(
        name,
        "ok",
        f"token set{guard}; not verified (the contract documents no free Apify call; every actor run is billed)",
    )


def check_urlscan(ctx: DoctorContext) -> Finding:
    name = "provider.urlscan"
    us = _generators(ctx).urlscan
    if not us.api_key:
        return Finding(name, "ok", "key unset; websites are recorded from the URL alone (enrichment is optional)")
    try:
        with http_client(us.base_url, ctx.timeout_s, headers={"API-Key": us.api_key}) as http:
            response = send(http, "GET", "/api/v1/search/", params={"q": f"page.domain:{PROBE_DOMAIN}"})
    except Exception as exc:
        return Finding(name, "warn", f"key set; unreachable ({first_line(exc)})", "check URLSCAN_BASE_URL")
    if response.status_code in (401, 403):
        return Finding(
            name, "fail", f"key set; key refused (HTTP {response.status_code})", "set URLSCAN_API_KEY to a valid key"
        )
    if response.status_code == 429:
        return Finding(name, "warn", "key set; search quota spent (HTTP 429)", "wait for urlscan's quota reset")
    if response.status_code != 200:
        return Finding(name, "warn", f"key set; HTTP {response.status_code}", "check URLSCAN_BASE_URL")
    return Finding(name, "ok", "key set; accepted (one domain search)")
