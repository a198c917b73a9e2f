"""GitHub REST v3 stand-in: repositories (with a fork), users, organisations and gists in the
documented shapes."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from socialrec_pipeline.sandbox.fixture_server import FixtureServer, Reply, Request

#: The sandbox's GitHub token (`GITHUB_TOKEN` in its environment); any other bearer token gets 401.
DEMO_TOKEN = "sandbox-github-token"


def owner(login: str = "pumpdev", owner_id: int = 583231, kind: str = "User") -> dict[str, Any]:
    return {"login": login, "id": owner_id, "type": kind, "html_url": f"https://github.com/{login}",
            "site_admin": False}


def repo(full_name: str = "pumpdev/pump-sdk", repo_id: int = 700_001, *, parent: dict[str, Any] | None = None,
         **extra: Any) -> dict[str, Any]:
    login = full_name.split("/")[0]
    payload: dict[str, Any] = {
        "id": repo_id,
        "name": full_name.split("/")[1],
        "full_name": full_name,
        "owner": owner(login, repo_id + 1),
        "private": False,
        "html_url": f"https://github.com/{full_name}",
        "description": "SDK for the PUMP token",
        "fork": parent is not None,
        "homepage": "https://pump.example",
        "language": "TypeScript",
        "created_at": "2024-11-02T10:15:00Z",
        "updated_at": "2024-12-01T08:00:00Z",
        "pushed_at": "2024-12-03T09:30:00Z",
        "stargazers_count": 42,
        "watchers_count": 42,
        "forks_count": 5,
        "open_issues_count": 1,
        "subscribers_count": 3,
        "topics": ["solana", "memecoin"],
        "archived": False,
        "default_branch": "main",
    }
    if parent is not None:
        payload["parent"] = parent
        payload["source"] = parent.get("source", parent)
    payload.update(extra)
    return payload


def user(login: str = "pumpdev", **extra: Any) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "login": login, "id": 583231, "type": "User", "name": "Pump Dev", "company": None,
        "blog": "https://pump.example", "location": None, "bio": "building on solana",
        "twitter_username": "pumpdev_x", "public_repos": 12, "public_gists": 1, "followers": 77,
        "following": 4, "created_at": "2021-03-04T05:06:07Z", "updated_at": "2024-12-01T00:00:00Z",
    }
    payload.update(extra)
    return payload


def org(login: str = "solana-labs", **extra: Any) -> dict[str, Any]:
    """`GET /orgs/{org}`: an organisation's profile (its text is `description`, not `bio`)."""
    payload: dict[str, Any] = {
        "login": login, "id": 9_000_001, "type": "Organization", "name": "Solana Labs",
        "description": "Tools for the Solana ecosystem", "blog": "https://solanalabs.example",
        "twitter_username": "solanalabs", "public_repos": 140, "public_gists": 0, "followers": 5200,
        "following": 0, "created_at": "2018-02-20T17:11:40Z", "updated_at": "2024-11-30T00:00:00Z",
        "html_url": f"https://github.com/{login}",
    }
    payload.update(extra)
    return payload


def gist(gist_id: str = "aa5a315d61ae9438b18d", *, with_owner: bool = True) -> dict[str, Any]:
    return {
        "id": gist_id,
        "html_url": f"https://gist.github.com/{gist_id}",
        "description": "airdrop checker",
        "public": True,
        "created_at": "2024-12-05T12:00:00Z",
        "updated_at": "2024-12-06T12:00:00Z",
        "owner": owner() if with_owner else None,
        "files": {"check.py": {"filename": "check.py", "type": "application/x-python", "language": "Python",
                               "raw_url": "https://gist.githubusercontent.com/x/check.py", "size": 321,
                               "truncated": False, "content": "print(1)"}},
        "comments": 2,
    }


class GitHubFixtures:
    """With `token`, a request carrying another bearer token gets GitHub's 401 "Bad credentials"
    (a request without one is served, as GitHub serves unauthenticated calls)."""

    def __init__(self, token: str | None = None) -> None:
        self.token = token
        self.repos: dict[str, dict[str, Any]] = {}
        self.users: dict[str, dict[str, Any]] = {}
        self.gists: dict[str, dict[str, Any]] = {}
        self.orgs: dict[str, dict[str, Any]] = {}

    def register(self, server: FixtureServer, prefix: str = "") -> GitHubFixtures:
        for kind, table in (("repos", self.repos), ("users", self.users), ("gists", self.gists), ("orgs", self.orgs)):
            start = len(prefix) + len(kind) + 2
            server.route_prefix("GET", f"{prefix}/{kind}/", self._guarded(table, start))
        return self

    def _guarded(self, table: dict[str, dict[str, Any]], start: int) -> Callable[[Request], Reply]:
        def handler(request: Request) -> Reply:
            auth = request.headers.get("authorization")
            if self.token is not None and auth is not None and auth != f"Bearer {self.token}":
                return Reply.json({"message": "Bad credentials", "documentation_url": "https://docs.github.com/rest",
                                   "status": "401"}, status=401)
            return self._answer(table, request.path[start:])

        return handler

    @staticmethod
    def _answer(table: dict[str, dict[str, Any]], key: str) -> Reply:
        found = table.get(key)
        if found is None:
            return Reply.json({"message": "Not Found", "documentation_url": "https://docs.github.com/rest",
                               "status": "404"}, status=404)
        return Reply.json(copy.deepcopy(found))


def demo_fixtures(token: str | None = None) -> GitHubFixtures:
    """The demo's repositories, users and gists; `github` is the user the doctor's probe reads. With
    `token` (the sandbox passes DEMO_TOKEN), another bearer token is refused."""
    fixtures = GitHubFixtures(token=token)
    upstream = repo("solana-labs/token-kit", 500_000, description="token kit")
    upstream["owner"] = owner("solana-labs", 9_000_001, "Organization")
    fixtures.repos["pumpdev/pump-sdk"] = repo(parent=upstream)
    fixtures.repos["solana-labs/token-kit"] = upstream
    fixtures.users["pumpdev"] = user()
    fixtures.orgs["solana-labs"] = org()
    fixtures.gists["aa5a315d61ae9438b18d"] = gist()
    fixtures.users["github"] = user("github", id=9_919, type="Organization", name="GitHub", bio=None)
    return fixtures
