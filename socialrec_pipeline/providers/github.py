"""GitHub REST v3: repositories, users/organisations, gists (contracts/platform-apis.md § GitHub).

Decisions:
- Accounts are keyed by `login`, repositories by `full_name`, gists by `id`, all
  lower-cased like the router's keys and canonical URLs (GitHub resolves names case-insensitively);
  the spelling GitHub returns stays in `handle` / `data.full_name`, the numeric `id` in `data.id`.
- A fork's direct `parent` becomes its own group; the fork's group points at it with
  `parent_relation: fork`. The network root (`source`) is recorded only as `data.source`.
- A repo or gist answer carries its owner only as `owner {login, id, type}`: the owner's profile
  (`/users/{login}`, or `/orgs/{login}` for an Organization) is fetched once in the same step,
  unless `options.needs_profile` says the stored row already has a fresh one. A failed profile
  fetch never fails the URL: the thin owner is recorded and the next observation tries again.
- 404 → not found; 451, or 403 whose body carries `block` → blocked; 403/429 with
  `x-ratelimit-remaining: 0`, other 403s (bad token, secondary limits), 5xx → error. A 301 (renamed
  repository) is followed once, and only to a path under the configured base URL.
"""

from __future__ import annotations

import logging
from typing import Any

import httpx

from socialrec_pipeline.domain.enums import ContentSubtype, ObjectKind, ParentRelation, Platform
from socialrec_pipeline.domain.errors import (
    ProviderError,
    TargetBlocked,
    TargetNotFound,
    TransientProviderError,
)
from socialrec_pipeline.domain.graph import (
    AccountDraft,
    ContentDraft,
    ContentText,
    DeclaredHandle,
    GraphGroup,
    SocialObjectGraph,
)
from socialrec_pipeline.providers.base import (
    GenerateOptions,
    ShapeGuardedGenerator,
    lookup_key,
)
from socialrec_pipeline.providers.http import (
    DEFAULT_TIMEOUT,
    build_client,
    json_body,
    json_or_none,
    parse_iso,
    send,
)
from socialrec_pipeline.providers.payload import (
    as_count,
    as_dict,
    as_list,
    int_metrics,
    outbound_links,
    scalars,
    stripped_str,
)
from socialrec_pipeline.routing.source_types import SourceType
from socialrec_pipeline.routing.types import RoutedUrl

log = logging.getLogger(__name__)

REPO_METRICS = ("stargazers_count", "forks_count", "watchers_count", "subscribers_count", "open_issues_count")
USER_METRICS = ("followers", "following", "public_repos", "public_gists")
REPO_DATA = ("id", "fork", "archived", "language", "default_branch")
#: Provider times kept in `data` under GitHub's own names, stored as aware UTC datetimes (SPEC §4:
#: every timestamp is one); a value that does not parse is left out rather than stored as text.
REPO_TIMES = ("pushed_at", "updated_at")
GIST_TIMES = ("updated_at",)


def times(source: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    parsed = {k: parse_iso(source.get(k)) for k in keys}
    return {k: v for k, v in parsed.items() if v is not None}


class GitHubClient:
    """GitHub REST v3. The token (optional) travels only in the Authorization header."""

    def __init__(
        self,
        base_url: str,
        token: str | None = None,
        *,
        timeout: httpx.Timeout | float = DEFAULT_TIMEOUT,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        headers = {"Accept": "application/vnd.github+json", "X-GitHub-Api-Version": "2022-11-28"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        self._base = base_url.rstrip("/")
        self._http = build_client(base_url, headers=headers, timeout=timeout, transport=transport)

    def __repr__(self) -> str:
        return f"GitHubClient({self._base!r})"

    def close(self) -> None:
        self._http.close()

    def get(self, path: str) -> dict[str, Any]:
        response = send(self._http, "GET", path)
        if response.status_code in (301, 302, 307, 308):
            location = response.headers.get("location", "")
            if not location.startswith(self._base + "/"):
                raise TransientProviderError(f"GitHub {path}: redirect outside the API refused")
            response = send(self._http, "GET", location[len(self._base):])
        _raise_for_status(path, response)
        body = json_body(response)
        if not isinstance(body, dict):
            raise TransientProviderError(f"GitHub {path}: answered a {type(body).__name__}, not an object")
        return body


def _raise_for_status(path: str, response: httpx.Response) -> None:
    code = response.status_code
    if code == 200:
        return
    if code == 404:
        raise TargetNotFound(f"GitHub {path}: 404")
    if code == 451:
        raise TargetBlocked(f"GitHub {path}: unavailable for legal reasons (451)")
    if code in (403, 429):
        if response.headers.get("x-ratelimit-remaining") == "0":
            reset = response.headers.get("x-ratelimit-reset", "?")
            raise TransientProviderError(f"GitHub {path}: rate limited until {reset}")
        if code == 403:
            body = json_or_none(response)
            if isinstance(body, dict) and body.get("block") is not None:
                reason = stripped_str(as_dict(body["block"]).get("reason"))
                raise TargetBlocked(f"GitHub {path}: access blocked ({reason})")
    raise TransientProviderError(f"GitHub {path}: HTTP {code}")


def owner_account(owner: Any, *, source_ref: str) -> AccountDraft | None:
    """An embedded `owner {login, id, type}` → account keyed by `login`; None without a login."""
    owner = as_dict(owner)
    login = stripped_str(owner.get("login"))
    if login is None:
        return None
    data: dict[str, Any] = {"source_ref": source_ref}
    if isinstance(owner.get("id"), int):
        data["id"] = owner["id"]
    if stripped_str(owner.get("type")):
        data["account_type"] = owner["type"]
    return AccountDraft(platform=Platform.GITHUB, platform_key=login.lower(), handle=login, data=data)


def repo_content(repo: dict[str, Any]) -> ContentDraft:
    full_name = stripped_str(repo.get("full_name"))
    if full_name is None or "/" not in full_name:
        raise TransientProviderError("GitHub repo answer without a `full_name`")
    homepage = stripped_str(repo.get("homepage"))
    data = {**scalars(repo, REPO_DATA), **times(repo, REPO_TIMES), "full_name": full_name}
    source = stripped_str(as_dict(repo.get("source")).get("full_name"))
    if source:
        data["source"] = source
    return ContentDraft(
        platform=Platform.GITHUB,
        subtype=ContentSubtype.REPO,
        platform_key=full_name.lower(),
        url=f"https://github.com/{full_name.lower()}",
        published_at=parse_iso(repo.get("created_at")),
        text=ContentText(primary=stripped_str(repo.get("description"))),
        links=outbound_links([homepage] if homepage else [], f"https://github.com/{full_name.lower()}"),
        tags=[t for t in (stripped_str(t) for t in as_list(repo.get("topics"))) if t],
        metrics=int_metrics(repo, REPO_METRICS),
        data=data,
    )


def repo_group(repo: dict[str, Any]) -> GraphGroup:
    content = repo_content(repo)
    return GraphGroup(
        ref=f"repo:{content.platform_key}", content=content, creator=owner_account(repo.get("owner"), source_ref="repo")
    )


def user_account(user: dict[str, Any]) -> AccountDraft:
    """`/users/{login}` or `/orgs/{org}` (an organisation's text is its `description`)."""
    login = stripped_str(user.get("login"))
    if login is None:
        raise TransientProviderError("GitHub user answer without a `login`")
    twitter = stripped_str(user.get("twitter_username"))
    blog = stripped_str(user.get("blog"))
    data = scalars(user, ("id",))
    if stripped_str(user.get("type")):
        data["account_type"] = user["type"]
    return AccountDraft(
        platform=Platform.GITHUB,
        platform_key=login.lower(),
        handle=login,
        display_name=stripped_str(user.get("name")),
        bio=stripped_str(user.get("bio")) or stripped_str(user.get("description")),
        links=outbound_links([blog] if blog else [], f"https://github.com/{login.lower()}"),
        declared_handles=[DeclaredHandle(platform=Platform.X, value=twitter.lstrip("@"))] if twitter else [],
        followers=as_count(user.get("followers")),
        account_created_at=parse_iso(user.get("created_at")),
        metrics=int_metrics(user, USER_METRICS),
        # The profile answered: the account exists and is not suspended (SPEC §5 moderation).
        unavailable=False,
        data=data,
    )


def gist_group(gist: dict[str, Any]) -> GraphGroup:
    gist_id = stripped_str(gist.get("id"))
    if gist_id is None:
        raise TransientProviderError("GitHub gist answer without an `id`")
    gist_id = gist_id.lower()
    # Older gist answers name the author `user` rather than `owner`: read either.
    owner = owner_account(gist.get("owner"), source_ref="gist") or owner_account(gist.get("user"), source_ref="gist")
    files = []
    for name, meta in as_dict(gist.get("files")).items():
        meta = as_dict(meta)
        files.append({"filename": stripped_str(meta.get("filename")) or name, **scalars(meta, ("language", "size"))})
    data: dict[str, Any] = {**scalars(gist, ("public",)), **times(gist, GIST_TIMES), "files": files}
    return GraphGroup(
        ref=f"gist:{gist_id}",
        creator=owner,
        content=ContentDraft(
            platform=Platform.GITHUB,
            subtype=ContentSubtype.GIST,
            platform_key=gist_id,
            # Without an owner the path still needs a user segment: `gist.github.com/{id}` alone
            # routes to a GitHub user, so anonymous gists use GitHub's own `anonymous` placeholder.
            url=f"https://gist.github.com/{owner.platform_key if owner else 'anonymous'}/{gist_id}",
            published_at=parse_iso(gist.get("created_at")),
            text=ContentText(primary=stripped_str(gist.get("description"))),
            metrics=int_metrics(gist, ("comments",)),
            data=data,
        ),
    )


class GitHubGenerator(ShapeGuardedGenerator):
    source_types = frozenset({SourceType.GITHUB_REPO, SourceType.GITHUB_USER, SourceType.GITHUB_GIST})
    provider = "GitHub"

    def __init__(self, client: GitHubClient) -> None:
        self._client = client

    def build(self, routed: RoutedUrl, options: GenerateOptions) -> SocialObjectGraph:
        key = lookup_key(routed, strip="/")
        if routed.source_type == SourceType.GITHUB_REPO:
            return self._complete_owners(self._repo(key), options)
        if routed.source_type == SourceType.GITHUB_USER:
            account = user_account(self._client.get(f"/users/{key}"))
            return SocialObjectGraph.single(GraphGroup(ref=f"account:{account.platform_key}", creator=account))
        if routed.source_type == SourceType.GITHUB_GIST:
            # `gist.github.com/{user}/{id}`: the id alone names the gist.
            gist = gist_group(self._client.get(f"/gists/{key.rsplit('/', 1)[-1]}"))
            return self._complete_owners(SocialObjectGraph.single(gist), options)
        raise self.cannot_handle(routed)

    def _complete_owners(self, graph: SocialObjectGraph, options: GenerateOptions) -> SocialObjectGraph:
        """Replace each embedded owner by its full profile (one call per distinct owner)."""
        profiles: dict[str, AccountDraft] = {}
        for group in graph.groups:
            owner = group.creator
            if owner is None or "source_ref" not in owner.data or not owner.platform_key:
                continue
            if owner.platform_key not in profiles:
                if not options.needs_profile(ObjectKind.ACCOUNTS, Platform.GITHUB, owner.platform_key):
                    continue
                profiles[owner.platform_key] = self._profile(owner)
            group.creator = profiles[owner.platform_key]
        return graph

    def _profile(self, owner: AccountDraft) -> AccountDraft:
        login = owner.handle or owner.platform_key
        path = f"/orgs/{login}" if owner.data.get("account_type") == "Organization" else f"/users/{login}"
        try:
            profile = user_account(self._client.get(path))
        except ProviderError as exc:
            log.info("GitHub owner profile %s not fetched (%s); the embedded owner is kept", path, exc)
            return owner
        if profile.platform_key != owner.platform_key:  # a renamed account answers under its new login
            return owner
        return profile

    def _repo(self, key: str) -> SocialObjectGraph:
        if key.count("/") != 1:
            raise TargetNotFound(f"{key!r} is not owner/name", external_call_made=False)
        repo = self._client.get(f"/repos/{key}")
        root = repo_group(repo)
        groups = [root]
        parent = as_dict(repo.get("parent"))
        if stripped_str(parent.get("full_name")):  # only forks carry `parent`
            parent_group = repo_group(parent)
            if parent_group.ref != root.ref:
                root.parent_ref, root.parent_relation = parent_group.ref, ParentRelation.FORK
                groups.append(parent_group)
        return SocialObjectGraph(groups=groups, root_ref=root.ref)
