"""X through twitterapi.io: tweets, profiles, communities (contracts/platform-apis.md § X).

Status decisions (documented here because the contract leaves them to us):
- HTTP 401/403 (bad or revoked key) → `ProviderKeyRejected` (`unsupported`, no attempt, names
  `TWITTERAPI_API_KEY`): the target was never judged, so the URL stays retryable once the key is fixed.
- HTTP 402 → `OutOfCredit`; 429, 5xx, other 4xx, non-JSON bodies and unexpected shapes → error.
- HTTP 200 with `status: "error"` → judged by its message: "not found"/"does not exist" →
  `TargetNotFound`, "suspended" → `AccountSuspended`, "credit"/"balance" → `OutOfCredit`, anything
  else → error.
- A tweet id absent from `tweets` → `TargetNotFound`; `tweets` missing, null or not a list → error
  (an answer of unexpected shape never judges the target). A user with `unavailable: true` →
  `AccountSuspended`, unless its reason says the user does not exist (`TargetNotFound`).
- Communities are requested with `community_id` (the documented spelling); `communityId` is only
  accepted on the way back (`id`/`community_id`/`communityId` in the answer).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

from socialrec_pipeline.domain.enums import ContentSubtype, ParentRelation, Platform, VenueSubtype
from socialrec_pipeline.domain.errors import (
    AccountSuspended,
    OutOfCredit,
    ProviderError,
    ProviderKeyRejected,
    TargetNotFound,
    TransientProviderError,
)
from socialrec_pipeline.domain.graph import (
    AccountDraft,
    ContentDraft,
    ContentText,
    GraphGroup,
    Mention,
    SocialObjectGraph,
    VenueDraft,
)
from socialrec_pipeline.providers.base import (
    GenerateOptions,
    KeyedClient,
    ShapeGuardedGenerator,
    lookup_key,
)
from socialrec_pipeline.providers.http import (
    json_body,
    parse_epoch_seconds,
    parse_iso,
    raise_for_transient,
    send,
)
from socialrec_pipeline.providers.payload import (
    as_count,
    as_dict,
    as_list,
    as_number,
    int_metrics,
    nonempty_str,
    outbound_links,
    scalars,
    stripped_key,
)
from socialrec_pipeline.routing.source_types import SourceType
from socialrec_pipeline.routing.types import RoutedUrl

TWEET_METRICS = ("viewCount", "likeCount", "retweetCount", "replyCount", "quoteCount", "bookmarkCount")
USER_METRICS = ("followers", "following", "statusesCount", "favouritesCount", "mediaCount")
COMMUNITY_METRICS = ("member_count", "moderator_count")
TWEET_DATA = ("conversationId", "isReply", "inReplyToId", "inReplyToUserId", "inReplyToUsername", "lang")
USER_DATA = ("isBlueVerified", "verifiedType", "unavailableReason")
#: Quote/retweet chains are followed this deep; links are capped at depth 2 anyway (SPEC §5).
MAX_PARENT_DEPTH = 2

_MONTHS = {
    m: i for i, m in enumerate(["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"], 1)
}
_NOT_FOUND = re.compile(r"not.?found|does ?n[o']t exist|no such|no user|not exist", re.I)
_SUSPENDED = re.compile(r"suspend", re.I)
_NO_CREDIT = re.compile(r"credit|balance|insufficient", re.I)


def parse_legacy_date(value: Any) -> datetime | None:
    """`"Tue Dec 10 07:00:30 +0000 2024"` → aware UTC. Parsed by hand: `%a`/`%b` follow the locale."""
    if not isinstance(value, str):
        return None
    parts = value.split()
    if len(parts) != 6 or parts[1] not in _MONTHS:
        return None
    try:
        hour, minute, second = (int(p) for p in parts[3].split(":"))
        offset = parts[4]
        sign = -1 if offset[0] == "-" else 1
        minutes = sign * (int(offset[1:3]) * 60 + int(offset[3:5]))
        local = datetime(int(parts[5]), _MONTHS[parts[1]], int(parts[2]), hour, minute, second, tzinfo=UTC)
    except (ValueError, IndexError):
        return None
    return local - timedelta(minutes=minutes)


def _any_date(value: Any) -> datetime | None:
    """Community `created_at` has no documented format: legacy, ISO, or epoch (s or ms)."""
    parsed = parse_legacy_date(value) or parse_iso(value)
    if parsed is None and (number := as_number(value)) is not None:
        parsed = parse_epoch_seconds(number / 1000 if number > 10**11 else number)
    return parsed


def tweet_url(user_name: str | None, tweet_id: str) -> str:
    """The router's canonical form (handles lower-cased), so a later link to the same tweet matches."""
    return f"https://x.com/{user_name.lower()}/status/{tweet_id}" if user_name else f"https://x.com/i/status/{tweet_id}"


# -- client -------------------------------------------------------------------------------------


class TwitterApiClient(KeyedClient):
    """twitterapi.io over one keep-alive connection. The key travels only in `X-API-Key`."""

    credential = ("headers", "X-API-Key")

    def tweets(self, tweet_ids: list[str]) -> list[Any]:
        body = self._get("/twitter/tweets", {"tweet_ids": ",".join(tweet_ids)})
        tweets = body.get("tweets")
        if tweets is None:  # missing or null is not "no such tweet": only a list can say that
            raise TransientProviderError("twitterapi.io: answer without a `tweets` list")
        if not isinstance(tweets, list):
            raise TransientProviderError("twitterapi.io: `tweets` is not a list")
        return tweets

    def user_info(self, user_name: str) -> dict[str, Any]:
        body = self._get("/twitter/user/info", {"userName": user_name})
        user = body.get("data")
        if not isinstance(user, dict) or not user:
            raise TransientProviderError("twitterapi.io: user answer without a `data` object")
        return user

    def community_info(self, community_id: str) -> dict[str, Any]:
        body = self._get("/twitter/community/info", {"community_id": community_id})
        info = body.get("community_info")
        if not isinstance(info, dict) or not info:
            raise TransientProviderError("twitterapi.io: community answer without `community_info`")
        return info

    def _get(self, path: str, params: dict[str, str]) -> dict[str, Any]:
        response = send(self._http, "GET", path, params=params)
        code = response.status_code
        if code in (401, 403):
            raise ProviderKeyRejected(
                f"twitterapi.io rejected the API key (HTTP {code}) on {path}", setting="TWITTERAPI_API_KEY"
            )
        if code == 402:
            raise OutOfCredit(f"twitterapi.io: out of credit (HTTP 402) on {path}")
        raise_for_transient(response)
        if code != 200:
            raise TransientProviderError(f"twitterapi.io: unexpected HTTP {code} on {path}")
        body = json_body(response)
        if not isinstance(body, dict):
            raise TransientProviderError(f"twitterapi.io: {path} answered a {type(body).__name__}, not an object")
        if body.get("status") == "error":
            raise _soft_error(path, body.get("message") or body.get("msg"))
        return body


def _soft_error(path: str, message: Any) -> ProviderError:
    text = message if isinstance(message, str) else ""
    detail = f"twitterapi.io {path}: {text or 'status error without a message'}"
    if _SUSPENDED.search(text):
        return AccountSuspended(detail)
    if _NOT_FOUND.search(text):
        return TargetNotFound(detail)
    if _NO_CREDIT.search(text):
        return OutOfCredit(detail)
    return TransientProviderError(detail)


# -- mapping ------------------------------------------------------------------------------------


def user_account(user: Any, *, source_ref: str | None = None) -> AccountDraft | None:
    """A User object → account keyed by its numeric `id`; None when the id is missing."""
    user = as_dict(user)
    key = stripped_key(user.get("id"))
    if key is None:
        return None
    bio = as_dict(user.get("profile_bio"))
    entities = as_dict(bio.get("entities"))
    links: list[str] = []
    for section in ("url", "description"):
        for item in as_list(as_dict(entities.get(section)).get("urls")):
            url = nonempty_str(as_dict(item).get("expanded_url"))
            if url and url not in links:
                links.append(url)
    handle = nonempty_str(user.get("userName"))
    links = outbound_links(links, f"https://x.com/{handle}" if handle else None)
    data = scalars(user, USER_DATA)
    if source_ref:
        # Embedded in another answer rather than fetched directly: graded, not queried.
        data["source_ref"] = source_ref
    unavailable = user.get("unavailable")
    return AccountDraft(
        platform=Platform.X,
        platform_key=key,
        handle=handle,
        display_name=nonempty_str(user.get("name")),
        bio=nonempty_str(user.get("description")),
        account_created_at=parse_legacy_date(user.get("createdAt")),
        links=links,
        followers=as_count(user.get("followers")),
        unavailable=unavailable if isinstance(unavailable, bool) else None,
        metrics=int_metrics(user, USER_METRICS),
        data=data,
    )


def community_venue(info: dict[str, Any]) -> VenueDraft | None:
    key = (
        stripped_key(info.get("id")) or stripped_key(info.get("community_id")) or stripped_key(info.get("communityId"))
    )
    if key is None:
        return None
    data: dict[str, Any] = scalars(info, ("join_policy",))
    rules = [r for r in (nonempty_str(as_dict(r).get("name")) for r in as_list(info.get("rules"))) if r]
    if rules:
        data["rules"] = rules
    admin = as_dict(info.get("admin"))
    if nonempty_str(admin.get("userName")):
        data["adminHandle"] = admin["userName"]
    return VenueDraft(
        platform=Platform.X,
        subtype=VenueSubtype.COMMUNITY,
        platform_key=key,
        name=nonempty_str(info.get("name")),
        description=nonempty_str(info.get("description")),
        venue_created_at=_any_date(info.get("created_at")),
        members=as_count(info.get("member_count")),
        metrics=int_metrics(info, COMMUNITY_METRICS),
        data=data,
    )


def tweet_content(tweet: dict[str, Any]) -> ContentDraft:
    tweet_id = stripped_key(tweet.get("id"))
    if tweet_id is None:
        raise TransientProviderError("twitterapi.io: tweet without an `id`")
    entities = as_dict(tweet.get("entities"))
    url = tweet_url(nonempty_str(as_dict(tweet.get("author")).get("userName")), tweet_id)
    links = [u for u in (nonempty_str(as_dict(i).get("expanded_url")) for i in as_list(entities.get("urls"))) if u]
    links = outbound_links(links, url)
    tags = [t for t in (nonempty_str(as_dict(i).get("text")) for i in as_list(entities.get("hashtags"))) if t]
    mentions = []
    for item in as_list(entities.get("user_mentions")):
        key = stripped_key(as_dict(item).get("id_str"))
        if key:  # a mention without an id cannot be keyed: handles are renamed and reassigned
            mentions.append(Mention(platform_key=key, screen_name=nonempty_str(item.get("screen_name"))))
    return ContentDraft(
        platform=Platform.X,
        subtype=ContentSubtype.TWEET,
        platform_key=tweet_id,
        url=url,
        published_at=parse_legacy_date(tweet.get("createdAt")),
        text=ContentText(primary=nonempty_str(tweet.get("text"))),
        links=links,
        tags=tags,
        mentions=mentions,
        metrics=int_metrics(tweet, TWEET_METRICS),
        data=scalars(tweet, TWEET_DATA),
    )


def tweet_groups(tweet: dict[str, Any], *, depth: int = 0, seen: set[str] | None = None) -> list[GraphGroup]:
    """The tweet's group first, then the groups of the original it quotes or retweets."""
    seen = set() if seen is None else seen
    tweet_id = stripped_key(tweet.get("id"))
    if tweet_id is None:
        raise TransientProviderError("twitterapi.io: tweet without an `id`")
    seen.add(tweet_id)
    group = GraphGroup(
        ref=f"tweet:{tweet_id}",
        creator=user_account(tweet.get("author"), source_ref="tweet"),
        content=tweet_content(tweet),
    )
    info = as_dict(tweet.get("communityInfo"))
    if info:  # unverified field: used only when it carries an id
        group.venue = community_venue(info)
    groups = [group]
    if depth >= MAX_PARENT_DEPTH:
        return groups
    # A retweet's top-level quote belongs to the retweeted original, so the retweet wins.
    for field, relation in (("retweeted_tweet", ParentRelation.RETWEET), ("quoted_tweet", ParentRelation.QUOTE)):
        parent = as_dict(tweet.get(field))
        parent_id = stripped_key(parent.get("id"))
        if parent_id is None or parent_id in seen:
            continue
        parent_groups = tweet_groups(parent, depth=depth + 1, seen=seen)
        group.parent_ref, group.parent_relation = parent_groups[0].ref, relation
        groups.extend(parent_groups)
        break
    return groups


# -- generator ----------------------------------------------------------------------------------


class XGenerator(ShapeGuardedGenerator):
    source_types = frozenset({SourceType.X_TWEET, SourceType.X_PROFILE, SourceType.X_COMMUNITY})
    provider = "twitterapi.io"

    def __init__(self, client: TwitterApiClient) -> None:
        self._client = client

    def build(self, routed: RoutedUrl, options: GenerateOptions) -> SocialObjectGraph:
        key = lookup_key(routed, lstrip="@")
        if routed.source_type == SourceType.X_TWEET:
            return self._tweet(key)
        if routed.source_type == SourceType.X_PROFILE:
            return self._profile(key)
        if routed.source_type == SourceType.X_COMMUNITY:
            return self._community(key)
        raise self.cannot_handle(routed)

    def _tweet(self, tweet_id: str) -> SocialObjectGraph:
        match = next(
            (
                t
                for t in self._client.tweets([tweet_id])
                if isinstance(t, dict) and stripped_key(t.get("id")) == tweet_id
            ),
            None,
        )
        if match is None:
            raise TargetNotFound(f"tweet {tweet_id} is absent from the answer")
        groups = tweet_groups(match)
        return SocialObjectGraph(groups=groups, root_ref=groups[0].ref)

    def _profile(self, user_name: str) -> SocialObjectGraph:
        user = self._client.user_info(user_name)
        if user.get("unavailable") is True:
            reason = " ".join(
                s for s in (nonempty_str(user.get("unavailableReason")), nonempty_str(user.get("message"))) if s
            )
            if _NOT_FOUND.search(reason) and not _SUSPENDED.search(reason):
                raise TargetNotFound(f"x user {user_name}: {reason}")
            raise AccountSuspended(
                f"x user {user_name}: {reason or 'unavailable'}", platform_key=stripped_key(user.get("id"))
            )
        account = user_account(user)
        if account is None:
            raise TransientProviderError(f"x user {user_name}: answer without an `id`")
        return SocialObjectGraph.single(GraphGroup(ref=f"account:{account.platform_key}", creator=account))

    def _community(self, community_id: str) -> SocialObjectGraph:
        info = self._client.community_info(community_id)
        venue = community_venue(info)
        if venue is None:
            raise TransientProviderError(f"x community {community_id}: answer without an `id`")
        group = GraphGroup(
            ref=f"community:{venue.platform_key}",
            venue=venue,
            creator=user_account(info.get("creator"), source_ref="community"),
        )
        return SocialObjectGraph.single(group)
