"""The `paid_social_api` pool, for every paid call of every job.

`record_token_job` routes URLs written on a paid platform to `record_paid_url`, an op in the pool:
the step holds a slot for its whole run (`HeldPaidSlot`). A short link in `record_url` whose target
turns out to be paid is deferred to the same op (`record_paid_url_resolved`); `retry_job` and
`metric_refresh_job` hand each paid call to `retry_paid_url` / `refresh_paid_metric`, also in the
pool. The paid calls of `reconcile_job`, which run inside one op, still claim a slot of the same
pool around the one call (`PoolPaidSlots`), in the instance's concurrency table that Dagster's
executor claims op pool slots in, keyed by the run: so the pool's limit
(`concurrency.pools.default_limit` in dagster.yaml) caps concurrent paid calls across all runs and
jobs, the claims show on the pool's page in the UI like any step's, and a run whose worker died has
its slots freed by run monitoring (`free_slots_after_run_end_seconds`) like its pooled steps'.

Only the `DagsterInstance` object is used (its `event_log_storage` concurrency methods), no module
of `dagster._`. An instance whose storage has no global concurrency (an ephemeral test instance)
caps nothing, for these claims as for pooled ops: the step says so once in its log.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Iterator

import dagster as dg

from socialrec_pipeline.recording.paid import PaidSlotUnavailable

PAID_POOL = "paid_social_api"
#: How long one paid call may wait for a slot before its URL is recorded `error` (no call made,
#: no attempt counted; the retry schedule takes it up again).
SLOT_WAIT_S = 600.0
_POLL_S = 0.25


class PoolPaidSlots:
    """Claims one slot of the paid pool around each paid call of a step that is not in the pool."""

    def __init__(
        self, context: dg.OpExecutionContext, pool: str = PAID_POOL, *, wait_s: float | None = None
    ) -> None:
        self._instance = context.instance
        self._run_id = context.run_id
        self._step = context.get_step_execution_context().step.key
        self._pool = pool
        self._wait_s = SLOT_WAIT_S if wait_s is None else wait_s
        self._log = context.log
        self._initialized = False
        self.claims = 0

    def _enforced(self) -> bool:
        storage = self._instance.event_log_storage
        if not storage.supports_global_concurrency_limits:
            if not self._initialized:
                self._log.warning(
                    f"this Dagster instance's storage has no global concurrency: the {self._pool} pool "
                    "caps nothing here (use the deployment's dagster.yaml)"
                )
                self._initialized = True
            return False
        if not self._initialized:
            # The pool takes the instance's default limit unless an operator set one (as for op pools).
            storage.initialize_concurrency_limit_to_default(self._pool)
            self._initialized = True
        return True

    @contextlib.contextmanager
    def slot(self, label: str) -> Iterator[None]:
        if not self._enforced():
            self.claims += 1
            yield
            return
        storage = self._instance.event_log_storage
        # A key of its own per call: the slot table holds one claim per (run, step key).
        key = f"{self._step}:paid:{uuid.uuid4().hex[:8]}"
        deadline = time.monotonic() + self._wait_s
        waited = False
        try:
            while not storage.claim_concurrency_slot(self._pool, self._run_id, key, 0).is_claimed:
                if time.monotonic() >= deadline:
                    raise PaidSlotUnavailable(
                        f"{label}: no slot of the {self._pool} pool within {self._wait_s:.0f} s (no call made)"
                    )
                if not waited:
                    self._log.info(f"{label}: waiting for a slot of the {self._pool} pool")
                    waited = True
                time.sleep(_POLL_S)
            self.claims += 1
            yield
        finally:  # the claim, or the pending claim the wait left in the table
            storage.free_concurrency_slot_for_step(self._run_id, key)
