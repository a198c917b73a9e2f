"""`socialrec route URL [URL ...]`: one JSON object per input, for operators (SPEC §3).

With no URLs, each stdin line is one input. Unroutable input prints the same keys with nulls. Never
crashes on input: undecodable bytes are kept as escapes, and a routing bug shows up as an `error` key
on that one line.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterable, Iterator, Sequence
from typing import IO

from socialrec_pipeline.routing.route import route_strict

_FIELDS = ("canonical_url", "source_type", "source_key", "object", "platform", "subtype")


def route_record(text: str) -> dict[str, object]:
    record: dict[str, object] = {"input": text, **dict.fromkeys(_FIELDS)}
    try:
        routed = route_strict(text)
    except Exception as exc:  # noqa: BLE001 - one bad line must not end the listing
        record["error"] = f"{type(exc).__name__}: {exc}"
        return record
    if routed is not None:
        record.update(routed.as_json())
    return record


def _stdin_lines(stdin: IO[str]) -> Iterator[str]:
    # Read bytes when we can so invalid UTF-8 cannot raise mid-stream; keep it as surrogate escapes.
    buffer = getattr(stdin, "buffer", None)
    source: Iterable[str]
    if buffer is not None and hasattr(buffer, "readline"):
        source = io.TextIOWrapper(buffer, encoding="utf-8", errors="surrogateescape", newline=None)
    else:
        source = stdin
    for line in source:
        yield line.rstrip("\r\n")


def run_route(urls: Sequence[str], stdin: IO[str], stdout: IO[str]) -> int:
    inputs: Iterable[str] = urls if urls else _stdin_lines(stdin)
    try:
        for text in inputs:
            # ensure_ascii: lone surrogates and control characters come out as \u escapes.
            stdout.write(json.dumps(route_record(str(text)), ensure_ascii=True) + "\n")
        stdout.flush()
    except BrokenPipeError:  # `socialrec route ... | head` is normal use
        return 0
    return 0
