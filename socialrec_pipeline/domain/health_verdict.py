"""The one-line verdict of `recording_health`: `healthy`, `degraded` or `down`, with the reason.

A pure function of what the asset already read, so the rule is testable without Dagster:

- **down** when the deployment cannot record: the latest `deployment_ready` evaluation failed with a
  `fail` row (its headline names the first blocker: "down: soltracker — key refused, set
  SOL_TRACKER_API_KEY …"), or `keeping_up` is red (work waits and nothing was recorded for hours).
- **degraded** when it records but something needs a look: `deployment_ready` warned, a figure could
  not be read (unknown is not healthy), `deployment_ready` never ran in this instance, tokens gave up
  after every relaunch, or a provider failed at least `ERROR_RATE_DEGRADED` of its calls in the last
  hour (at least `ERROR_RATE_MIN_ATTEMPTS` of them).
- **healthy** otherwise.

The first reason found, in that order, is the one given: what blocks recording before what slows it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

Verdict = Literal["healthy", "degraded", "down"]

#: A provider failing this share of its calls in the last hour makes the deployment degraded …
ERROR_RATE_DEGRADED = 0.5
#: … once it made at least this many (one failed call in two is noise).
ERROR_RATE_MIN_ATTEMPTS = 5
#: The doctor's tally at the end of its headline, dropped from the verdict's sentence.
_TALLY = re.compile(r"\s*\(\d+ ok, \d+ warn, \d+ fail\)\s*$")


@dataclass(frozen=True)
class Readiness:
    """The latest `deployment_ready` evaluation: passed, `fail` row (ERROR) or not, its headline."""

    passed: bool
    blocking: bool
    headline: str


@dataclass(frozen=True)
class ProviderFigures:
    platform: str
    attempts: int
    errors: int


def health_verdict(
    keeping_up: tuple[str, str],
    unknown: Mapping[str, str],
    readiness: Readiness | None,
    *,
    inbox_stuck: int = 0,
    providers: tuple[ProviderFigures, ...] = (),
) -> tuple[Verdict, str]:
    """(verdict, one sentence). `keeping_up` is the check's ("ok" | "stalled" | "unknown", why)."""
    state, why = keeping_up
    if readiness is not None and not readiness.passed and readiness.blocking:
        return "down", _doctor_sentence(readiness.headline, "down")
    if state == "stalled":
        return "down", f"nothing is being recorded: {why}"
    if readiness is not None and not readiness.passed:
        return "degraded", _doctor_sentence(readiness.headline, "degraded")
    if unknown:
        names = ", ".join(sorted(unknown))
        return "degraded", f"could not read {names}, so the health is not known for sure (see unknown_figures)"
    if readiness is None:
        return "degraded", "the deployment checks (deployment_ready) have not run yet; they run within a minute"
    if inbox_stuck > 0:
        return "degraded", (
            f"{inbox_stuck} token(s) gave up after every relaunch: see the stuck-tokens table on record_inbox"
        )
    failing = [
        p for p in providers if p.attempts >= ERROR_RATE_MIN_ATTEMPTS and p.errors / p.attempts >= ERROR_RATE_DEGRADED
    ]
    if failing:
        worst = max(failing, key=lambda p: p.errors / p.attempts)
        return "degraded", (
            f"{worst.platform} failed {worst.errors} of {worst.attempts} calls in the last hour: "
            "see the per-provider table and the failed URLs' detail"
        )
    return "healthy", f"recording keeps up ({why})"


def _doctor_sentence(headline: str, verdict: Verdict) -> str:
    """The doctor's headline without its own `down: ` / `degraded: ` prefix nor its tally."""
    text = _TALLY.sub("", headline.strip())
    for prefix in ("down:", "degraded:", "ready:"):
        if text.startswith(prefix):
            text = text[len(prefix) :].strip()
    return text or f"deployment_ready reports the deployment {verdict}"
