"""Every relative link and #anchor in README.md and docs/*.md points at a file and a heading that exist."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

_FENCE = re.compile(r"^(```|~~~).*?^\1", re.M | re.S)
_INLINE_CODE = re.compile(r"`[^`\n]*`")
_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.M)


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(markdown: str) -> set[str]:
    found: set[str] = set()
    for heading in _HEADING.findall(_FENCE.sub("", markdown)):
        base = slug(heading)
        name, n = base, 0
        while name in found:  # a repeated heading gets -1, -2, …
            n += 1
            name = f"{base}-{n}"
        found.add(name)
    return found


def links(markdown: str) -> list[str]:
    prose = _INLINE_CODE.sub("", _FENCE.sub("", markdown))
    return _LINK.findall(prose)


def broken_links(document: Path) -> list[str]:
    broken = []
    for target in links(document.read_text()):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto: — not checked offline
            continue
        path_part, _, anchor = target.partition("#")
        path = (document.parent / path_part).resolve() if path_part else document
        if not path.exists():
            broken.append(f"{target}: no such file")
        elif anchor and path.suffix == ".md" and anchor not in anchors(path.read_text()):
            broken.append(f"{target}: no heading with that anchor in {path.name}")
    return broken


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_and_anchor_resolves(document):
    assert broken_links(document) == []


def test_the_readme_links_every_page_under_docs():
    linked = {target.partition("#")[0] for target in links((ROOT / "README.md").read_text())}
    pages = {f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md")}
    assert pages - linked == set()


def test_slugs_follow_the_github_rules():
    assert slug("Burst throughput (`bench/burst.py`)") == "burst-throughput-benchburstpy"
    assert slug("Launch-time settings: the launch gate") == "launch-time-settings-the-launch-gate"
    assert anchors("# A\n## A\n```\n# not a heading\n```\n") == {"a", "a-1"}


def test_a_missing_file_or_anchor_is_reported(tmp_path):
    (tmp_path / "other.md").write_text("# Present\n")
    page = tmp_path / "page.md"
    page.write_text(
        "[ok](other.md#present) [gone](missing.md) [bad anchor](other.md#absent) [self](#nowhere)\n"
        "`[in code](ignored.md)` [web](https://example.com/x)\n# Page\n"
    )
    assert broken_links(page) == [
        "missing.md: no such file",
        "other.md#absent: no heading with that anchor in other.md",
        "#nowhere: no heading with that anchor in page.md",
    ]
