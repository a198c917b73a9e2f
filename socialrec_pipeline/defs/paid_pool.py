"""The `paid_social_api` pool, for every paid call of every job.

Every paid call runs in a step of an op with `pool=PAID_POOL` (Dagster's op concurrency, public
API): the step holds one slot of the pool for its whole run (`HeldPaidSlot`), so the pool's limit
(`concurrency.pools.default_limit` in dagster.yaml) caps concurrent paid calls across all runs and
jobs, the claims show on the pool's page in the UI, and a run whose worker died has its slots freed
by run monitoring (`free_slots_after_run_end_seconds`).

- `record_token_job` routes URLs written on a paid platform to `record_paid_url`; a short link in
  `record_url` whose target turns out to be paid is deferred to the same op
  (`record_paid_url_resolved`).
- `retry_job` and `metric_refresh_job` hand each paid call of their free pass to `retry_paid_url` /
  `refresh_paid_metric`.
- `reconcile_job` hands each token whose recording makes a paid call, whole, to
  `reconcile_paid_token` (its sequential paid calls share the step's slot).

Steps outside the pool make no paid call (`DeferPaidCalls`, or `NoPaidSlot`). An instance whose
storage has no global concurrency (an ephemeral test instance) caps nothing, as for any pooled op.
"""

PAID_POOL = "paid_social_api"
