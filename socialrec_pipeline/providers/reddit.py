"""Reddit through its JSON API (free, rate-limited): posts, subreddits, users.

With a client id + secret the client takes an app-only bearer token (client credentials) and
caches it until shortly before it expires; without them it calls the public `.json` endpoints
anonymously. Share links (`/r/{sub}/s/{id}`) are resolved by the short-link resolver before
they reach `reddit_post` (`redd.it/{id}` routes straight to the post); searches are URL-only (providers/url_only.py).

A post answer names its author and subreddit only: their profiles (`/user/{name}/about.json`,
`/r/{sub}/about.json`) are fetched once in the same step, unless `options.needs_profile` says the
stored row already has a fresh one. A suspended author is recorded with `unavailable: true`; any
other failed profile fetch keeps the embedded copy (`data.source_ref: post`) and never fails the URL.

Answer → status: 404 (incl. `{"reason": "banned"}`) → not_found; 403 with `reason` private /
quarantined / gated → blocked; any other 403 (Reddit's anti-bot wall, a bad User-Agent) is our
side → error; 401 → token dropped, one retry with a fresh token, then error; 429 / 5xx → error.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

import httpx

from socialrec_pipeline.domain.enums import ContentSubtype, ObjectKind, Platform, VenueSubtype
from socialrec_pipeline.domain.errors import (
    AccountSuspended,
    ProviderError,
    TargetBlocked,
    TargetNotFound,
    TransientProviderError,
)
from socialrec_pipeline.domain.graph import (
    AccountDraft,
    ContentDraft,
    ContentText,
    GraphGroup,
    SocialObjectGraph,
    VenueDraft,
)
from socialrec_pipeline.providers.base import GenerateOptions, unexpected_shape_is_error
from socialrec_pipeline.providers.http import (
    DEFAULT_TIMEOUT,
    as_int,
    build_client,
    json_body,
    json_or_none,
    parse_epoch_seconds,
    raise_for_transient,
    send,
)
from socialrec_pipeline.providers.payload import as_count, first_str, int_metrics, numbers, outbound_links, present
from socialrec_pipeline.routing.source_types import SourceType
from socialrec_pipeline.routing.types import RoutedUrl

log = logging.getLogger(__name__)

_BLOCK_REASONS = frozenset({"private", "quarantined", "gated"})
#: Renew this long before the token's stated expiry, so a request never carries a dying token.
_TOKEN_MARGIN_S = 60.0
_POST_ID = re.compile(r"/comments/([a-z0-9]{1,12})(?:/|$)", re.IGNORECASE)
_SAFE_NAME = re.compile(r"^[A-Za-z0-9_-]{1,32}$")
_URL_IN_TEXT = re.compile(r"https?://[^\s)\]>\"'<]+")
_DELETED_AUTHORS = frozenset({"[deleted]", "[removed]"})


class RedditClient:
    """`RedditClient(base_url, auth_base_url=…, client_id=None, client_secret=None)`."""

    def __init__(
        self,
        base_url: str,
        *,
        auth_base_url: str = "https://www.reddit.com",
        client_id: str | None = None,
        client_secret: str | None = None,
        timeout: httpx.Timeout | float = DEFAULT_TIMEOUT,
        transport: httpx.BaseTransport | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._client = build_client(base_url, timeout=timeout, transport=transport)
        self._auth = (
            build_client(auth_base_url, timeout=timeout, transport=transport) if client_id and client_secret else None
        )
        self._credentials = (client_id or "", client_secret or "")
        self._clock = clock
        self._token: str | None = None
        self._token_expires = 0.0
        self._lock = threading.Lock()

    def close(self) -> None:
        self._client.close()
        if self._auth is not None:
            self._auth.close()

    # -- token -------------------------------------------------------------------------------
    def _bearer(self) -> str | None:
        if self._auth is None:
            return None
        with self._lock:
            if self._token is None or self._clock() >= self._token_expires:
                self._token, lifetime = self._fetch_token()
                self._token_expires = self._clock() + max(lifetime - _TOKEN_MARGIN_S, 0.0)
            return self._token

    def _fetch_token(self) -> tuple[str, float]:
        assert self._auth is not None
        response = send(
            self._auth,
            "POST",
            "/api/v1/access_token",
            data={"grant_type": "client_credentials"},
            auth=self._credentials,
        )
        if response.status_code != 200:
            # Never echo the body: a misconfigured proxy could reflect the credentials.
            raise TransientProviderError(f"Reddit token endpoint answered HTTP {response.status_code}")
        body = json_body(response)
        token = first_str(body.get("access_token")) if isinstance(body, dict) else None
        lifetime = as_int(body.get("expires_in")) if isinstance(body, dict) else None
        if token is None:
            raise TransientProviderError("Reddit token endpoint answered without access_token")
        return token, float(lifetime if lifetime and lifetime > 0 else 3600)

    def _drop_token(self) -> None:
        with self._lock:
            self._token = None

    # -- API ---------------------------------------------------------------------------------
    def get_json(self, path: str) -> Any:
        """GET one `.json` endpoint; maps error answers to typed failures."""
        for attempt in (1, 2):
            token = self._bearer()
            headers = {"Authorization": f"bearer {token}"} if token else {}
            # raw_json=1: otherwise Reddit HTML-escapes &, <, > inside JSON strings (legacy).
            response = send(self._client, "GET", path, params={"raw_json": "1"}, headers=headers)
            if response.status_code == 401 and token and attempt == 1:
                self._drop_token()  # revoked or expired early: one fresh token, then give up
                continue
            return self._decode(path, response)
        raise TransientProviderError(f"GET {path}: HTTP 401 with a fresh token")  # pragma: no cover

    @staticmethod
    def _decode(path: str, response: httpx.Response) -> Any:
        raise_for_transient(response)
        status = response.status_code
        if status in (403, 404):
            body = json_or_none(response)
            reason = body.get("reason") if isinstance(body, dict) else None
            if status == 404:
                raise TargetNotFound(f"GET {path}: HTTP 404" + (f" ({reason})" if isinstance(reason, str) else ""))
            if isinstance(reason, str) and reason in _BLOCK_REASONS:
                raise TargetBlocked(f"GET {path}: {reason}")
            raise TransientProviderError(f"GET {path}: HTTP 403 without a target reason")
        if status != 200:
            raise TransientProviderError(f"GET {path}: HTTP {status}")
        return json_body(response)


def _post_id(routed: RoutedUrl) -> str | None:
    match = _POST_ID.search(routed.canonical_url)
    if match:
        return match.group(1).lower()
    key = routed.source_key or ""
    return key.lower() if re.fullmatch(r"[a-z0-9]{1,12}", key, re.IGNORECASE) else None


def _name_from(routed: RoutedUrl, marker: str) -> str | None:
    """`/r/{sub}` or `/user/{name}` from the canonical URL, else the route's source key."""
    match = re.search(rf"/{marker}/([^/?#]+)", routed.canonical_url)
    name = match.group(1) if match else (routed.source_key or "").split("/")[-1]
    name = name.removeprefix("r/").removeprefix("u/")
    return name if _SAFE_NAME.match(name) else None


def _data_of(thing: Any, kind: str) -> dict[str, Any]:
    if not isinstance(thing, dict) or thing.get("kind") != kind or not isinstance(thing.get("data"), dict):
        raise TransientProviderError(f"Reddit answer is not a {kind} thing")
    return thing["data"]


def post_group(post: dict[str, Any], routed: RoutedUrl) -> GraphGroup:
    key = first_str(post.get("id"))
    if key is None:
        raise TransientProviderError("Reddit post without an id")
    links: list[str] = []
    target = first_str(post.get("url"))
    permalink = first_str(post.get("permalink")) or ""
    if target and not (permalink and target.rstrip("/").endswith(permalink.rstrip("/"))):
        links.append(target)  # a link post points somewhere; a self post's url is its own permalink
    body = first_str(post.get("selftext"))
    for found in _URL_IN_TEXT.findall(body or ""):
        if found not in links:
            links.append(found)
    # A gallery's `reddit.com/gallery/{id}` and a poll's `reddit.com/poll/{id}` are the post itself.
    links = outbound_links(links, routed.canonical_url, f"https://reddit.com/comments/{key.lower()}")
    data: dict[str, Any] = {}
    for name in ("name", "permalink", "over_18", "removed_by_category"):
        if isinstance(post.get(name), (str, bool)) and present(post[name]):  # "" is absent
            data[name] = post[name]
    content = ContentDraft(
        platform=Platform.REDDIT,
        subtype=ContentSubtype.POST,
        platform_key=key,
        url=routed.canonical_url,
        published_at=parse_epoch_seconds(post.get("created_utc")),
        text=ContentText(primary=first_str(post.get("title")), body=body),
        links=links,
        metrics=numbers(post, ("score", "upvote_ratio", "num_comments")),
        data=data,
    )
    author = first_str(post.get("author"))
    creator = None
    if author and author not in _DELETED_AUTHORS:
        # Usernames are immutable and never reassigned: the name is the key.
        creator = AccountDraft(
            platform=Platform.REDDIT, platform_key=author, handle=author, data={"source_ref": "post"}
        )
    sub = first_str(post.get("subreddit"))
    venue = (
        VenueDraft(
            platform=Platform.REDDIT,
            subtype=VenueSubtype.SUBREDDIT,
            platform_key=sub.lower(),
            name=sub,
            data={"source_ref": "post"},
        )
        if sub
        else None
    )
    return GraphGroup(ref="root", creator=creator, venue=venue, content=content)


def subreddit_venue(about: dict[str, Any]) -> VenueDraft:
    slug = first_str(about.get("display_name"))
    if slug is None:
        raise TransientProviderError("Reddit subreddit without display_name")
    data: dict[str, Any] = {"display_name": slug}
    for name in ("id", "name", "subreddit_type", "over18", "quarantine"):
        if isinstance(about.get(name), (str, bool)) and present(about[name]):  # "" is absent
            data[name] = about[name]
    subscribers = as_count(about.get("subscribers"))
    return VenueDraft(
        platform=Platform.REDDIT,
        subtype=VenueSubtype.SUBREDDIT,
        platform_key=slug.lower(),  # the slug is immutable; Reddit matches it case-insensitively
        name=first_str(about.get("title")) or slug,
        description=first_str(about.get("public_description")),
        venue_created_at=parse_epoch_seconds(about.get("created_utc")),
        members=subscribers,
        metrics={"subscribers": subscribers} if subscribers is not None else {},
        data=data,
    )


def user_account(about: Any) -> AccountDraft:
    if isinstance(about, dict) and isinstance(about.get("data"), dict) and about["data"].get("is_suspended") is True:
        raise AccountSuspended("Reddit account is suspended", platform_key=first_str(about["data"].get("name")))
    if isinstance(about, dict) and about.get("is_suspended") is True:  # (unverified) bare form
        raise AccountSuspended("Reddit account is suspended", platform_key=first_str(about.get("name")))
    user = _data_of(about, "t2")
    name = first_str(user.get("name"))
    if name is None:
        raise TransientProviderError("Reddit user without a name")
    profile = user.get("subreddit")
    if not isinstance(profile, dict):
        profile = {}
    return AccountDraft(
        platform=Platform.REDDIT,
        platform_key=name,
        handle=name,
        account_created_at=parse_epoch_seconds(user.get("created_utc")),
        display_name=first_str(profile.get("title")),
        bio=first_str(profile.get("public_description")),
        metrics=int_metrics(user, ("total_karma", "link_karma", "comment_karma")),
        unavailable=False,  # the profile answered: not suspended (SPEC §5 moderation)
        data={"id": user["id"]} if first_str(user.get("id")) else {},
    )


class RedditGenerator:
    source_types = frozenset({SourceType.REDDIT_POST, SourceType.REDDIT_SUBREDDIT, SourceType.REDDIT_USER})
    makes_external_calls = True

    def __init__(self, client: RedditClient) -> None:
        self._client = client

    def generate(self, routed: RoutedUrl, options: GenerateOptions, observed_at: datetime) -> SocialObjectGraph:
        with unexpected_shape_is_error("Reddit"):
            graph = self._graph(routed)
            if routed.source_type is SourceType.REDDIT_POST:
                self._complete_post(graph.groups[0], options)
            return graph

    def _complete_post(self, group: GraphGroup, options: GenerateOptions) -> None:
        """The post's author and subreddit as full profiles (one call each, when not fresh)."""
        author = group.creator
        if (
            author is not None
            and author.platform_key
            and options.needs_profile(ObjectKind.ACCOUNTS, Platform.REDDIT, author.platform_key)
        ):
            group.creator = self._author_profile(author)
        venue = group.venue
        if (
            venue is not None
            and venue.platform_key
            and options.needs_profile(ObjectKind.VENUES, Platform.REDDIT, venue.platform_key)
        ):
            group.venue = self._subreddit_profile(venue)

    def _author_profile(self, author: AccountDraft) -> AccountDraft:
        name = author.platform_key or ""
        if not _SAFE_NAME.match(name):
            return author
        try:
            profile = user_account(self._client.get_json(f"/user/{name}/about.json"))
        except AccountSuspended:
            return author.model_copy(update={"unavailable": True})
        except ProviderError as exc:
            log.info("Reddit author profile u/%s not fetched (%s); the embedded author is kept", name, exc)
            return author
        return profile if profile.platform_key == author.platform_key else author

    def _subreddit_profile(self, venue: VenueDraft) -> VenueDraft:
        name = venue.name or venue.platform_key or ""
        if not _SAFE_NAME.match(name):
            return venue
        try:
            profile = subreddit_venue(_data_of(self._client.get_json(f"/r/{name}/about.json"), "t5"))
        except ProviderError as exc:
            log.info("Reddit subreddit profile r/%s not fetched (%s); the embedded one is kept", name, exc)
            return venue
        return profile if profile.platform_key == venue.platform_key else venue

    def _graph(self, routed: RoutedUrl) -> SocialObjectGraph:
        if routed.source_type is SourceType.REDDIT_POST:
            post_id = _post_id(routed)
            if post_id is None:
                raise TransientProviderError("Reddit post URL without a post id", external_call_made=False)
            answer = self._client.get_json(f"/comments/{post_id}.json")
            if not isinstance(answer, list) or not answer:
                raise TransientProviderError("Reddit post answer is not [Listing, Listing]")
            children = _data_of(answer[0], "Listing").get("children")
            if not isinstance(children, list):
                raise TransientProviderError("Reddit post listing without children")
            if not children:
                raise TargetNotFound(f"Reddit post {post_id} not in its listing")
            return SocialObjectGraph.single(post_group(_data_of(children[0], "t3"), routed))
        if routed.source_type is SourceType.REDDIT_SUBREDDIT:
            sub = _name_from(routed, "r")
            if sub is None:
                raise TransientProviderError("Reddit subreddit URL without a name", external_call_made=False)
            about = self._client.get_json(f"/r/{sub}/about.json")
            return SocialObjectGraph.single(GraphGroup(ref="root", venue=subreddit_venue(_data_of(about, "t5"))))
        name = _name_from(routed, "user") or _name_from(routed, "u")
        if name is None:
            raise TransientProviderError("Reddit user URL without a name", external_call_made=False)
        about = self._client.get_json(f"/user/{name}/about.json")
        return SocialObjectGraph.single(GraphGroup(ref="root", creator=user_account(about)))
