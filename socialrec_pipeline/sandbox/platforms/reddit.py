"""Canned Reddit JSON API answers in the documented shapes, for tests and the offline demo.

`register_reddit(server)` serves the app-only token endpoint and the `.json` endpoints for one
known post, subreddit and user; unknown subreddits answer 404 `{"reason": "banned"}`, and
`r/privatesub` answers 403 `{"reason": "private"}`.
"""

from __future__ import annotations

import base64
import copy
from typing import Any

from socialrec_pipeline.sandbox.fixture_server import FixtureServer, Reply, Request

DEMO_CLIENT_ID = "demo-client-id"
DEMO_CLIENT_SECRET = "demo-client-secret"
DEMO_ACCESS_TOKEN = "demo-reddit-bearer"

_POST: dict[str, Any] = {
    "id": "1abcde",
    "name": "t3_1abcde",
    "title": "$MOON just launched on Solana",
    "selftext": "Contract on https://moon.example/ca and chart below",
    "url": "https://www.reddit.com/r/solana/comments/1abcde/moon_just_launched_on_solana/",
    "permalink": "/r/solana/comments/1abcde/moon_just_launched_on_solana/",
    "score": 42,
    "upvote_ratio": 0.87,
    "num_comments": 9,
    "created_utc": 1733814030.0,
    "author": "moon_dev",
    "subreddit": "solana",
    "over_18": False,
    "removed_by_category": None,
}

_SUBREDDIT: dict[str, Any] = {
    "id": "2qh1i",
    "name": "t5_2qh1i",
    "display_name": "solana",
    "title": "Solana",
    "public_description": "The Solana subreddit",
    "subscribers": 250000,
    "created_utc": 1520000000.0,
    "subreddit_type": "public",
    "over18": False,
    "quarantine": False,
}

_USER: dict[str, Any] = {
    "name": "moon_dev",
    "id": "abc123",
    "created_utc": 1700000000.0,
    "total_karma": 1520,
    "link_karma": 900,
    "comment_karma": 620,
    "subreddit": {"public_description": "building $MOON", "title": "Moon Dev"},
}


def post_fields(**overrides: Any) -> dict[str, Any]:
    post = copy.deepcopy(_POST)
    post.update(overrides)
    return post


def post_listing(**overrides: Any) -> list[dict[str, Any]]:
    """`[Listing(post), Listing(comments)]` as `GET /comments/{id}.json` answers."""
    post = {"kind": "t3", "data": post_fields(**overrides)}
    comments = {"kind": "Listing", "data": {"children": [], "after": None, "before": None}}
    return [{"kind": "Listing", "data": {"children": [post], "after": None, "before": None}}, comments]


def subreddit_about(**overrides: Any) -> dict[str, Any]:
    data = copy.deepcopy(_SUBREDDIT)
    data.update(overrides)
    return {"kind": "t5", "data": data}


def user_about(**overrides: Any) -> dict[str, Any]:
    data = copy.deepcopy(_USER)
    data.update(overrides)
    return {"kind": "t2", "data": data}


def suspended_user(name: str = "moon_dev") -> dict[str, Any]:
    return {"kind": "t2", "data": {"name": name, "is_suspended": True}}


def banned() -> Reply:
    return Reply.json({"reason": "banned", "message": "Not Found", "error": 404}, status=404)


def restricted(reason: str = "private") -> Reply:
    return Reply.json({"reason": reason, "message": "Forbidden", "error": 403}, status=403)


def token_reply(token: str = DEMO_ACCESS_TOKEN, expires_in: int = 86400) -> Reply:
    return Reply.json({"access_token": token, "token_type": "bearer", "expires_in": expires_in, "scope": "*"})


def register_token_endpoint(
    server: FixtureServer,
    *,
    client_id: str = DEMO_CLIENT_ID,
    client_secret: str = DEMO_CLIENT_SECRET,
    token: str = DEMO_ACCESS_TOKEN,
    expires_in: int = 86400,
) -> None:
    expected = "Basic " + base64.b64encode(f"{client_id}:{client_secret}".encode()).decode()

    def handler(request: Request) -> Reply:
        if request.headers.get("authorization") != expected or b"grant_type=client_credentials" not in request.body:
            return Reply.json({"message": "Unauthorized", "error": 401}, status=401)
        return token_reply(token, expires_in)

    server.route("POST", "/api/v1/access_token", handler)


def register_reddit(server: FixtureServer, *, token: str | None = None) -> None:
    """The demo data set. With `token`, API calls without `Authorization: bearer {token}` get 401."""

    def guarded(reply: Reply) -> Any:
        def handler(request: Request) -> Reply:
            if token is not None and request.headers.get("authorization") != f"bearer {token}":
                return Reply.json({"message": "Unauthorized", "error": 401}, status=401)
            return reply

        return handler

    server.route("GET", "/comments/1abcde.json", guarded(Reply.json(post_listing())))
    server.route("GET", "/r/solana/about.json", guarded(Reply.json(subreddit_about())))
    server.route("GET", "/r/privatesub/about.json", guarded(restricted("private")))
    server.route_prefix("GET", "/r/", guarded(banned()))
    server.route("GET", "/user/moon_dev/about.json", guarded(Reply.json(user_about())))
    server.route("GET", "/user/gone_dev/about.json", guarded(Reply.json(suspended_user("gone_dev"))))
    if token is not None:
        register_token_endpoint(server, token=token)
