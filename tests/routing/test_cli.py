"""`socialrec route`: JSON lines, one per input, args or stdin; never crashes."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

from socialrec_pipeline.routing.cli import run_route

KEYS = {"input", "canonical_url", "source_type", "source_key", "object", "platform", "subtype"}
SOCIALREC = Path(sys.executable).with_name("socialrec")


def _run(urls: list[str], stdin_text: str = "") -> list[dict[str, object]]:
    out = io.StringIO()
    assert run_route(urls, stdin=io.StringIO(stdin_text), stdout=out) == 0
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_one_object_per_argument_with_all_keys() -> None:
    rows = _run(["x.com/kolguy", "kolguy", "https://x.com@evil.example/", "https://www.reddit.com/r/solana/s/AbCdEf1234"])
    assert len(rows) == 4
    assert all(set(r) >= KEYS for r in rows)
    assert rows[0] == {
        "input": "x.com/kolguy", "canonical_url": "https://x.com/kolguy", "source_type": "x_profile",
        "source_key": "kolguy", "object": "accounts", "platform": "x", "subtype": None,
    }
    assert rows[1] == {"input": "kolguy", **dict.fromkeys(KEYS - {"input"})}
    assert rows[2]["source_type"] is None
    assert rows[3]["source_type"] == "reddit_share"


def test_stdin_mode_reads_one_url_per_line() -> None:
    rows = _run([], "https://youtu.be/dQw4w9WgXcQ\n\nt.me/s/durov\r\njavascript:alert(1)\n")
    assert [r["source_type"] for r in rows] == ["youtube_video", None, "telegram_channel", None]
    assert rows[2]["input"] == "t.me/s/durov"


def test_hostile_inputs_do_not_crash() -> None:
    nasty = ["", " ", "\x00", "\udcff", "x" * 10_000, "https://[::1", "http://999.999.999.999", "ｈｔｔｐｓ://ｘ.com/a"]
    rows = _run(nasty)
    assert len(rows) == len(nasty)


def _cli(args: list[str], stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([str(SOCIALREC), "route", *args], input=stdin, capture_output=True, timeout=120)


def test_subprocess_arguments() -> None:
    out = _cli(["https://twitter.com/KolGuy/status/123?s=20", "https://github.com/Foo/Bar.git", "not a url"])
    assert out.returncode == 0, out.stderr
    rows = [json.loads(line) for line in out.stdout.decode().splitlines()]
    assert [(r["source_type"], r["source_key"]) for r in rows] == [
        ("x_tweet", "123"),
        ("github_repo", "foo/bar"),
        (None, None),
    ]
    assert rows[0]["canonical_url"] == "https://x.com/kolguy/status/123"


def test_subprocess_stdin_with_invalid_utf8() -> None:
    out = _cli([], b"https://discord.gg/kolguy\n\xff\xfe\x00garbage\nhttps://www.instagram.com/p/C1a2B3c4D5e/\n")
    assert out.returncode == 0, out.stderr
    rows = [json.loads(line) for line in out.stdout.decode().splitlines()]
    assert [r["source_type"] for r in rows] == ["discord_invite", None, "instagram_post"]
    assert all(set(r) >= KEYS for r in rows)
