"""The op pools' limits, set explicitly in the Dagster instance.

`concurrency.pools.default_limit` in dagster.yaml already caps every pool, but Deployment →
Concurrency shows "No pool limits configured" until a pool's limit is set in the instance. This
sets each pool of this code location to that same default (or to the limit given), in one process:
`socialrec pool-limits`, run by scripts/run.sh before Dagster starts (docker-compose and Helm:
docs/operations-ui.md). Idempotent.
"""

from __future__ import annotations

from typing import Any

from socialrec_pipeline.defs.paid_pool import PAID_POOL
from socialrec_pipeline.defs.reconcile import RECONCILE_POOL

#: paid_social_api: every paid social-API call of every job (defs/paid_pool.py);
#: reconcile: reconcile_window's listing step (reconcile_free_pass), two hours at a time.
POOLS = (PAID_POOL, RECONCILE_POOL)


def configured_default_limit(instance: Any) -> int | None:
    """`concurrency.pools.default_limit` of the instance's dagster.yaml, if it sets one."""
    pools = (instance.get_settings("concurrency") or {}).get("pools") or {}
    return pools.get("default_limit")


def set_pool_limits(instance: Any, limit: int | None = None) -> dict[str, int]:
    """Set every pool of `POOLS` to `limit`, else to the instance's default limit; returns what was set."""
    if limit is None:
        limit = configured_default_limit(instance)
    if limit is None:
        raise ValueError("no --limit given and dagster.yaml sets no concurrency.pools.default_limit")
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
        raise ValueError(f"a pool limit is a whole number ≥ 0, got {limit!r}")
    storage = instance.event_log_storage
    if not storage.supports_global_concurrency_limits:
        raise ValueError(f"this instance's event log storage ({type(storage).__name__}) has no pool limits")
    for pool in POOLS:
        storage.set_concurrency_slots(pool, limit)
    return dict.fromkeys(POOLS, limit)
