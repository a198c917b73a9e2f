"""The vocabularies every layer shares (SPEC §4): one platform code per platform, everywhere."""

from __future__ import annotations

from enum import StrEnum


class Platform(StrEnum):
    X = "x"
    TIKTOK = "tt"
    INSTAGRAM = "ig"
    YOUTUBE = "yt"
    REDDIT = "rd"
    GITHUB = "gh"
    TELEGRAM = "tg"
    WEB = "web"


class ObjectKind(StrEnum):
    """Which collection a polymorphic reference (`object` + `object_id`) points into."""

    CONTENTS = "contents"
    ACCOUNTS = "accounts"
    VENUES = "venues"


class ContentSubtype(StrEnum):
    TWEET = "tweet"
    VIDEO = "video"
    PHOTO = "photo"
    POST = "post"
    REEL = "reel"
    TV = "tv"
    STORY = "story"
    REPO = "repo"
    GIST = "gist"
    SEARCH = "search"
    INTENT = "intent"
    SHORTLINK = "shortlink"
    UNKNOWN = "unknown"
    SITE = "site"


class VenueSubtype(StrEnum):
    COMMUNITY = "community"
    SUBREDDIT = "subreddit"
    CHANNEL = "channel"
    GROUP = "group"
    PORTAL = "portal"
    SHELL = "shell"
    GUARD_GROUP = "guard_group"


class ParentRelation(StrEnum):
    """A property of the referring content: the original does not know it was quoted."""

    QUOTE = "quote"
    RETWEET = "retweet"
    FORK = "fork"


class FetchStatus(StrEnum):
    """What happened to one URL of one token (SPEC §4.1)."""

    OK = "ok"
    NOT_FOUND = "not_found"
    BLOCKED = "blocked"
    SUSPENDED = "suspended"
    INVALID = "invalid"
    EXHAUSTED = "exhausted"
    ERROR = "error"
    UNSUPPORTED = "unsupported"
    SKIPPED_PAID = "skipped_paid"


#: The one definition of "a retry can still change the outcome". Used by the retry selection
#: (`find_due_urls`: one range on `oldest_attempt.<status>` per status) and by the attempts cap alike.
RETRYABLE: frozenset[FetchStatus] = frozenset(
    {FetchStatus.ERROR, FetchStatus.UNSUPPORTED, FetchStatus.SKIPPED_PAID}
)

#: Absorbing states an operator may still reopen by hand (runbook: after a code fix or a raised cap).
OPERATOR_REOPENABLE: frozenset[FetchStatus] = frozenset({FetchStatus.INVALID, FetchStatus.EXHAUSTED})

#: Statuses the retry job has a partition for, in display order.
RETRY_PARTITIONS: tuple[FetchStatus, ...] = (
    FetchStatus.ERROR,
    FetchStatus.UNSUPPORTED,
    FetchStatus.SKIPPED_PAID,
    FetchStatus.INVALID,
    FetchStatus.EXHAUSTED,
)


def is_retryable(status: FetchStatus) -> bool:
    return status in RETRYABLE
