"""Which provider metrics we keep, per platform and object kind (SPEC §4 `metric_series`).

Keys are the providers' ORIGINAL names (a metric keeps its platform meaning, so
`viewCount` on X and on YouTube are never merged into one field). Anything not listed is dropped
at write time, so a provider adding a field can never grow the series documents silently.

Keyed by platform × object kind rather than by subtype: within one platform and kind the
providers do not reuse a name with a different meaning, and the writer always knows both.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from socialrec_pipeline.domain.enums import ObjectKind, Platform

_C, _A, _V = ObjectKind.CONTENTS, ObjectKind.ACCOUNTS, ObjectKind.VENUES

METRIC_SPEC: dict[tuple[Platform, ObjectKind], frozenset[str]] = {
    # X: tweets, users, communities (twitterapi.io field names)
    (Platform.X, _C): frozenset(
        {"viewCount", "likeCount", "retweetCount", "replyCount", "quoteCount", "bookmarkCount"}
    ),
    (Platform.X, _A): frozenset(
        {"followers", "following", "statusesCount", "favouritesCount", "mediaCount"}
    ),
    (Platform.X, _V): frozenset({"member_count", "moderator_count"}),
    # GitHub: repos and gists are both contents; users/orgs are accounts
    (Platform.GITHUB, _C): frozenset(
        {
            "stargazers_count",
            "forks_count",
            "watchers_count",
            "subscribers_count",
            "open_issues_count",
            "comments",  # gists
        }
    ),
    (Platform.GITHUB, _A): frozenset({"followers", "following", "public_repos", "public_gists"}),
    # YouTube: videos are contents, channels are accounts
    (Platform.YOUTUBE, _C): frozenset({"viewCount", "likeCount", "commentCount"}),
    (Platform.YOUTUBE, _A): frozenset({"subscriberCount", "videoCount", "viewCount"}),
    # Telegram preview pages: "N subscribers" (channel) or "N members, M online" (group)
    (Platform.TELEGRAM, _V): frozenset({"members", "subscribers", "online"}),
    # Telegram bot pages: "N monthly users" (users and bots are accounts, not venues)
    (Platform.TELEGRAM, _A): frozenset({"monthly_users"}),
    # TikTok (Apify): videos and authorMeta
    (Platform.TIKTOK, _C): frozenset(
        {"playCount", "diggCount", "shareCount", "commentCount", "collectCount"}
    ),
    (Platform.TIKTOK, _A): frozenset({"fans", "following", "heart", "video"}),
    # Instagram (Apify): posts and profiles
    (Platform.INSTAGRAM, _C): frozenset(
        {"likesCount", "commentsCount", "videoViewCount", "videoPlayCount"}
    ),
    (Platform.INSTAGRAM, _A): frozenset({"followersCount", "followsCount", "postsCount"}),
    # Reddit: posts, subreddits, users
    (Platform.REDDIT, _C): frozenset({"score", "upvote_ratio", "num_comments"}),
    (Platform.REDDIT, _V): frozenset({"subscribers"}),
    (Platform.REDDIT, _A): frozenset({"total_karma", "link_karma", "comment_karma"}),
    # Websites have no metrics: every (web, *) pair is absent, so everything is dropped.
}

#: Instagram reports a hidden like count as -1; storing it would read as a real (negative) value.
_INSTAGRAM_HIDDEN = -1


def known_metric_keys(platform: Platform, object_kind: ObjectKind) -> frozenset[str]:
    return METRIC_SPEC.get((Platform(platform), ObjectKind(object_kind)), frozenset())


def _is_number(value: Any) -> bool:
    # bool is an int subclass; a flag is not a metric.
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return math.isfinite(value)


def pick_known_metrics(
    platform: Platform, object_kind: ObjectKind, metrics: Mapping[str, Any]
) -> dict[str, int | float]:
    """The whitelisted, numeric subset of `metrics`, in the provider's own key names.

    Non-numeric values (including numeric strings: providers convert, see platform-apis.md) and
    Instagram's -1 "hidden" marker are dropped rather than stored as something they are not.
    """
    allowed = known_metric_keys(platform, object_kind)
    picked: dict[str, int | float] = {}
    for key, value in metrics.items():
        if key not in allowed or not _is_number(value):
            continue
        if Platform(platform) is Platform.INSTAGRAM and value == _INSTAGRAM_HIDDEN:
            continue
        picked[key] = value
    return picked
