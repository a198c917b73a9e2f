"""`socialrec doctor`: every dependency of a deployment checked for real, one row per check.

Each check is one function `(DoctorContext) -> Finding`: `ok`, `warn` (records, but something is
missing or degraded) or `fail` (runs will fail or record nothing). `run_checks` runs them in
parallel threads, each bounded by its own timeout, and never raises: a check that crashes or hangs
is a `fail` row saying so.

Configuration is read only through the code location's own readers: the resource map of
`bound_resources_from_env()` (every endpoint and key, with their defaults) and the recording settings of
`RecordingSettingsResource` (the strict `SOCIALREC_*` parser). So the doctor sees exactly what a
run would see. Secret values never reach a row: keys show as "set"/"unset", and every known secret
is masked in the text of a finding (an error message quoting a URL, say).

Calls made, each the cheapest the contracts allow (docs/doctor.md):
- SolTracker: `GET /api/v1/tokens/{address}` for one well-known mint (a 404 still proves the key).
- GitHub (with a token): `GET /users/{login}`; urlscan (with a key): one domain search. The
  contract documents no GitHub `/rate_limit` nor urlscan quota endpoint, so the doctor uses these
  documented free calls instead.
- Apify: no call (the contract documents no free Apify call; every actor run is billed). X: no
  call (every twitterapi.io call is billed). YouTube: one `channels` call, only with `spend_quota`.
- Telegram and Reddit: one public page.

The checks live by concern: `infra.py` (MongoDB, Redis, RabbitMQ), `providers.py` (SolTracker and
the platforms), `dagster_checks.py` (the Dagster instance and the gates); `core.py` holds the row
and the context. This module lists them (`CHECKS`), runs them and renders the verdict.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict

from socialrec_pipeline.defs.doctor.core import (
    DEFAULT_TIMEOUT_S,
    HEARTBEAT_FRESH_S,
    STATUSES,
    ConfigMissing,
    DoctorContext,
    Finding,
    Status,
    first_line,
)
from socialrec_pipeline.defs.doctor.dagster_checks import (
    check_dagster_daemon,
    check_dagster_instigators,
    check_dagster_storage,
    check_gates,
    check_paid_pool,
)
from socialrec_pipeline.defs.doctor.infra import (
    check_mongodb,
    check_mongodb_indexes,
    check_rabbitmq,
    check_rabbitmq_binding,
    check_redis,
    check_retry_queue,
    management_endpoint,
)
from socialrec_pipeline.defs.doctor.providers import (
    check_apify,
    check_github,
    check_reddit,
    check_soltracker,
    check_telegram,
    check_urlscan,
    check_x,
    check_youtube,
)

__all__ = [
    "CHECKS",
    "DEFAULT_TIMEOUT_S",
    "HEARTBEAT_FRESH_S",
    "STATUSES",
    "ConfigMissing",
    "DoctorContext",
    "Finding",
    "Status",
    "check_apify",
    "check_dagster_daemon",
    "check_dagster_instigators",
    "check_dagster_storage",
    "check_gates",
    "check_github",
    "check_mongodb",
    "check_mongodb_indexes",
    "check_paid_pool",
    "check_rabbitmq",
    "check_rabbitmq_binding",
    "check_reddit",
    "check_redis",
    "check_retry_queue",
    "check_soltracker",
    "check_telegram",
    "check_urlscan",
    "check_x",
    "check_youtube",
    "management_endpoint",
    "exit_code",
    "first_blocker",
    "headline",
    "render_json",
    "render_table",
    "run_checks",
]

CHECKS: tuple[Callable[[DoctorContext], Finding], ...] = (
    check_mongodb,
    check_mongodb_indexes,
    check_retry_queue,
    check_redis,
    check_rabbitmq,
    check_rabbitmq_binding,
    check_soltracker,
    check_x,
    check_github,
    check_youtube,
    check_telegram,
    check_reddit,
    check_apify,
    check_urlscan,
    check_dagster_storage,
    check_dagster_daemon,
    check_dagster_instigators,
    check_paid_pool,
    check_gates,
)


def _row_name(check: Callable[..., Finding]) -> str:
    return check.__name__.removeprefix("check_").replace("_", ".", 1) if check.__name__ else "?"


def run_checks(
    ctx: DoctorContext | None = None, checks: Sequence[Callable[[DoctorContext], Finding]] = CHECKS
) -> list[Finding]:
    """Every check in its own thread, each bounded by `ctx.timeout_s`; rows in `checks` order."""
    ctx = ctx or DoctorContext()
    results: list[Finding | None] = [None] * len(checks)

    def run(i: int, check: Callable[[DoctorContext], Finding]) -> None:
        try:
            results[i] = check(ctx)
        except Exception as exc:
            results[i] = Finding(_row_name(check), "fail", f"check crashed: {type(exc).__name__}: {first_line(exc)}")

    threads = [threading.Thread(target=run, args=(i, c), daemon=True, name=f"doctor-{i}") for i, c in enumerate(checks)]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + ctx.timeout_s
    for thread in threads:
        thread.join(max(deadline - time.monotonic(), 0))
    secrets = ctx.secrets()
    rows = []
    for check, result in zip(checks, results, strict=True):
        if result is None:
            result = Finding(_row_name(check), "fail", f"timed out after {ctx.timeout_s:.0f} s")
        rows.append(result.masked(secrets))
    return rows


# -- verdict and rendering -------------------------------------------------------------------------


def exit_code(rows: Sequence[Finding]) -> int:
    """0 when nothing fails, 1 on a failure."""
    return 1 if any(r.status == "fail" for r in rows) else 0


def first_blocker(rows: Sequence[Finding]) -> Finding | None:
    """The first failing row, else the first warning, else None."""
    for status in ("fail", "warn"):
        for row in rows:
            if row.status == status:
                return row
    return None


def headline(rows: Sequence[Finding]) -> str:
    """One line: `down: soltracker — key refused, set SOL_TRACKER_API_KEY to a valid key`."""
    counts = {s: sum(r.status == s for r in rows) for s in STATUSES}
    blocker = first_blocker(rows)
    tally = f"{counts['ok']} ok, {counts['warn']} warn, {counts['fail']} fail"
    if blocker is None:
        return f"ready: {tally}"
    verdict = "down" if blocker.status == "fail" else "degraded"
    todo = f", {blocker.action}" if blocker.action else ""
    return f"{verdict}: {blocker.check} — {blocker.finding}{todo} ({tally})"


def render_table(rows: Sequence[Finding], *, problems_only: bool = False) -> str:
    """The table (one row per check, then the one-line verdict); `problems_only` leaves ok rows out."""
    shown = [r for r in rows if r.status != "ok"] if problems_only else list(rows)
    widths = (max((len(r.check) for r in rows), default=5), 4)
    lines = [f"{'check':<{widths[0]}}  {'':<{widths[1]}}  finding (→ what to do)"] if shown else []
    for r in shown:
        lines.append(f"{r.check:<{widths[0]}}  {r.status:<{widths[1]}}  {r.finding}")
        if r.action and r.status != "ok":
            lines.append(f"{'':<{widths[0]}}  {'':<{widths[1]}}  → {r.action}")
    if shown:
        lines.append("")
    lines.append(headline(rows))
    return "\n".join(lines)


def render_json(rows: Sequence[Finding]) -> str:
    return json.dumps(
        {"exit_code": exit_code(rows), "headline": headline(rows), "checks": [asdict(r) for r in rows]}, indent=2
    )
