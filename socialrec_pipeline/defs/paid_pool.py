"""The `paid_social_api` pool, for every paid call of every job.

`record_token_job` routes URLs written on a paid platform to `record_paid_url`, an op in the pool:
the step holds a slot for its whole run (`HeldPaidSlot`). Every other paid call — a short link in
`record_url` whose target turns out to be paid, and the paid calls of `reconcile_job`, `retry_job`
and `metric_refresh_job`, which run inside one op each — claims a slot of the same pool around the
one call (`PoolPaidSlots`), through the same instance storage Dagster's executor uses for op pools.
So the pool's limit (`concurrency.pools.default_limit` in dagster.yaml) caps concurrent paid calls
across all runs and jobs, and the claims show on the pool's page in the UI like any step's.

An instance without global concurrency support (an ephemeral test instance) enforces no pool, for
these claims exactly as for pooled ops.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Iterator

import dagster as dg
from dagster._core.execution.plan.instance_concurrency_context import InstanceConcurrencyContext

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
        self._run = context.run
        self._step = context.get_step_execution_context().step.key
        self._pool = pool
        self._wait_s = SLOT_WAIT_S if wait_s is None else wait_s
        self._log = context.log
        self.claims = 0

    @contextlib.contextmanager
    def slot(self, label: str) -> Iterator[None]:
        # A key of its own per call: the slot table holds one claim per (run, step key).
        key = f"{self._step}:paid:{uuid.uuid4().hex[:8]}"
        with InstanceConcurrencyContext(self._instance, self._run) as claims:
            deadline = time.monotonic() + self._wait_s
            waited = False
            while not claims.claim(self._pool, key):
                if time.monotonic() >= deadline:
                    raise PaidSlotUnavailable(
                        f"{label}: no slot of the {self._pool} pool within {self._wait_s:.0f} s (no call made)"
                    )
                if not waited:
                    self._log.info(f"{label}: waiting for a slot of the {self._pool} pool")
                    waited = True
                time.sleep(_POLL_S)
            self.claims += 1
            try:
                yield
            finally:
                claims.free_step(key)
