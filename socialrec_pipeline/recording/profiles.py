"""Stored accounts and venues seen while recording (SPEC §5): is a stored profile fresh enough to
skip a fetch, and flagging an account a platform says is suspended or deleted."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime, timedelta

from pymongo.errors import PyMongoError

from socialrec_pipeline.domain.enums import ObjectKind, Platform
from socialrec_pipeline.domain.models.identities import has_fresh_profile
from socialrec_pipeline.routing.types import RoutedUrl
from socialrec_pipeline.store.store import Store

log = logging.getLogger(__name__)


def profile_is_fresh(
    store: Store,
    clock: Callable[[], datetime],
    max_age: timedelta,
    kind: ObjectKind,
    platform: Platform,
    platform_key: str,
) -> bool:
    """True when the stored row holds a full profile younger than `max_age`.
    An account flagged unavailable is never fresh: every sighting re-checks it."""
    if not max_age:
        return False
    repository = store.accounts if kind == ObjectKind.ACCOUNTS else store.venues
    try:
        row = repository.find_by_platform_key(platform, platform_key)
    except PyMongoError as exc:  # cannot tell: fetch (the write will meet the same outage)
        log.info("profile freshness of %s %s/%s unknown: %s", kind, platform, platform_key, exc)
        return False
    return row is not None and has_fresh_profile(row, clock(), max_age)


def flag_unavailable(store: Store, routed: RoutedUrl, at: datetime, platform_key: str | None = None) -> int:
    """A profile URL answered "suspended or deleted": flag the stored account it names
    (`moderation.unavailable`, with the time). By the key the answer gave when it gave one;
    else by the URL's key, as the account key (platforms keyed by name) or as the latest
    handle of stored accounts (X, TikTok, ...). Never creates a row; never raises."""
    platform = routed.platform
    key = (routed.source_key or "").strip().strip("/").lstrip("@")
    if platform is None or routed.object != "accounts" or not (key or platform_key):
        return 0
    try:
        if platform_key and store.accounts.mark_unavailable(Platform(platform), platform_key, at):
            return 1
        marked = 0
        for row in store.accounts.find_current_holders(Platform(platform), key) if key else []:
            marked += store.accounts.mark_unavailable(row.platform, row.platform_key, at)
        if not marked and key:
            marked += store.accounts.mark_unavailable(Platform(platform), key, at)
        return marked
    except PyMongoError as exc:
        log.warning("could not flag %s unavailable: %s", routed.canonical_url, exc)
        return 0
