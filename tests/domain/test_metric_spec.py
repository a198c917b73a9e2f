"""METRIC_SPEC whitelists provider metric names per platform × object kind."""

from __future__ import annotations

import math

import pytest

from socialrec_pipeline.domain.enums import ObjectKind, Platform
from socialrec_pipeline.domain.metric_spec import METRIC_SPEC, pick_known_metrics

C, A, V = ObjectKind.CONTENTS, ObjectKind.ACCOUNTS, ObjectKind.VENUES


@pytest.mark.parametrize(
    ("platform", "kind", "metrics"),
    [
        (Platform.X, A, {"followers": 10, "following": 2}),
        (Platform.GITHUB, A, {"followers": 3}),
        (Platform.YOUTUBE, A, {"subscriberCount": 1000}),
        (Platform.TIKTOK, A, {"fans": 55}),
        (Platform.INSTAGRAM, A, {"followersCount": 77}),
        (Platform.REDDIT, A, {"total_karma": 12}),
    ],
)
def test_account_follower_counts_survive_the_whitelist(platform, kind, metrics):
    assert pick_known_metrics(platform, kind, metrics) == metrics


def test_keeps_original_names_and_drops_unknown_keys():
    picked = pick_known_metrics(
        Platform.X, C, {"viewCount": 5, "likeCount": 1, "views": 9, "lang": "en"}
    )
    assert picked == {"viewCount": 5, "likeCount": 1}


@pytest.mark.parametrize("value", ["12", None, True, math.nan, math.inf, [1], {"n": 1}])
def test_drops_non_numeric_values(value):
    assert pick_known_metrics(Platform.YOUTUBE, C, {"viewCount": value}) == {}


def test_instagram_hidden_minus_one_is_dropped_not_stored():
    picked = pick_known_metrics(Platform.INSTAGRAM, C, {"likesCount": -1, "commentsCount": 4})
    assert picked == {"commentsCount": 4}


def test_minus_one_elsewhere_is_a_value():
    assert pick_known_metrics(Platform.REDDIT, C, {"score": -1}) == {"score": -1}


def test_floats_are_kept():
    assert pick_known_metrics(Platform.REDDIT, C, {"upvote_ratio": 0.93}) == {"upvote_ratio": 0.93}


def test_web_has_no_metrics():
    assert not any(platform is Platform.WEB for platform, _ in METRIC_SPEC)
    assert pick_known_metrics(Platform.WEB, C, {"viewCount": 1}) == {}


def test_same_name_means_different_things_per_kind():
    # YouTube viewCount exists for a video and for a channel, each under its own kind.
    assert "viewCount" in METRIC_SPEC[(Platform.YOUTUBE, C)]
    assert "viewCount" in METRIC_SPEC[(Platform.YOUTUBE, A)]
    assert pick_known_metrics(Platform.X, V, {"member_count": 8, "followers": 1}) == {"member_count": 8}


def test_accepts_plain_strings_for_platform_and_kind():
    assert pick_known_metrics("gh", "contents", {"stargazers_count": 3}) == {"stargazers_count": 3}
