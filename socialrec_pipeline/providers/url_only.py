"""Generators that build a graph from the URL alone (no request leaves the process).

Searches (`x_search`, `tiktok_search`, `reddit_search`) → `contents(search)` keyed by the query:
`platform_key` = the query, `url` = the canonical URL, `text.primary` = the query. A Reddit search
restricted to a subreddit keeps the subreddit in `data.subreddit`; the key stays the query
(SPEC §3.4), so one query searched in two subreddits resolves to one row.

Intents (`x_intent`) → `contents(intent)` keyed by the canonical URL: an intent is an action, and
its text is neither unique nor short, while the canonical URL already keeps exactly the
parameters that identify the action. `text.primary` = the prefilled `text`; `url` → `links`;
`hashtags` → `tags`; action, `screen_name`, `user_id`, `tweet_id`, `via` → `data` (handles alone
cannot key an account or a mention: handles are renamed and reassigned, ids are not).

Source types that stay UNREGISTERED, so they are recorded `unsupported` (retryable, zero calls,
attempts unchanged), and why:

- `x_unknown`, `tiktok_unknown`, `instagram_unknown`, `youtube_unknown`, `reddit_unknown`,
  `github_unknown`, `telegram_unknown`: the router could not place the path; recording them `ok`
  would be absorbing, while `unsupported` lets a later router fix reach them (retry re-routes every
  URL).
- `discord_invite`: no Discord provider and no Discord platform code yet (SPEC §4).
- `instagram_story`: the Instagram actor cannot fetch stories (they need a logged-in session).
- `x_shortlink`, `tiktok_shortlink`, `reddit_share`: not URL-only: the short-link resolver follows
  them and hands the target to its generator.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any
from urllib.parse import parse_qs, urlsplit

from socialrec_pipeline.domain.enums import ContentSubtype
from socialrec_pipeline.domain.errors import TargetNotFound
from socialrec_pipeline.domain.graph import ContentDraft, ContentText, GraphGroup, SocialObjectGraph
from socialrec_pipeline.providers.base import GenerateOptions
from socialrec_pipeline.routing.source_types import SourceType, source_type_info
from socialrec_pipeline.routing.types import RoutedUrl

SEARCH_TYPES = frozenset({SourceType.X_SEARCH, SourceType.TIKTOK_SEARCH, SourceType.REDDIT_SEARCH})
_INTENT_DATA = ("screen_name", "user_id", "tweet_id", "via")


def _params(url: str) -> dict[str, str]:
    parts = urlsplit(url)
    return {k: v[0] for k, v in parse_qs(parts.query, keep_blank_values=False).items() if v and v[0].strip()}


def _search(routed: RoutedUrl) -> ContentDraft:
    # The canonical URL keeps `q` (SPEC §3.1); the route's source key is the same query.
    query = (_params(routed.canonical_url).get("q") or routed.source_key or "").strip()
    if not query:
        raise TargetNotFound("search URL without a query", external_call_made=False)
    data: dict[str, Any] = {}
    if routed.source_type is SourceType.REDDIT_SEARCH:
        segments = [s for s in urlsplit(routed.canonical_url).path.split("/") if s]
        if len(segments) >= 2 and segments[0] == "r":
            data["subreddit"] = segments[1].lower()
    return ContentDraft(
        platform=routed.platform,
        subtype=ContentSubtype.SEARCH,
        platform_key=query,
        url=routed.canonical_url,
        text=ContentText(primary=query),
        data=data,
    )


def _intent(routed: RoutedUrl) -> ContentDraft:
    url = routed.canonical_url
    params = _params(url)
    segments = [s for s in urlsplit(url).path.split("/") if s]
    data: dict[str, Any] = {"intent": segments[1] if len(segments) >= 2 else None}
    data.update({name: params[name] for name in _INTENT_DATA if name in params})
    link = params.get("url")
    tags = [t.strip().lstrip("#") for t in params.get("hashtags", "").split(",") if t.strip().lstrip("#")]
    return ContentDraft(
        platform=routed.platform,
        subtype=ContentSubtype.INTENT,
        platform_key=url,
        url=url,
        text=ContentText(primary=params.get("text")),
        links=[link] if link and link.startswith(("http://", "https://")) else [],
        tags=tags,
        data={k: v for k, v in data.items() if v is not None},
    )


class UrlOnlyGenerator:
    source_types = SEARCH_TYPES | {SourceType.X_INTENT}
    makes_external_calls = False

    def generate(self, routed: RoutedUrl, options: GenerateOptions, observed_at: datetime) -> SocialObjectGraph:
        if source_type_info(routed.source_type).subtype == ContentSubtype.SEARCH:
            content = _search(routed)
        else:
            content = _intent(routed)
        return SocialObjectGraph.single(GraphGroup(ref="root", content=content))
