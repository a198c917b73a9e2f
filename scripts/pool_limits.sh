#!/usr/bin/env bash
# Set the op pools' limits explicitly in the Dagster instance of $DAGSTER_HOME, so Deployment →
# Concurrency lists them: `concurrency.pools.default_limit` in dagster.yaml applies the same
# limit, but the page shows "No pool limits configured" until a limit is set. Idempotent; run by
# scripts/run.sh before Dagster starts (docker-compose and Helm: docs/operations-ui.md).
#   paid_social_api: every paid social-API call of every job (defs/paid_pool.py)
#   reconcile: reconcile_window's listing step (reconcile_free_pass), two hours at a time
# POOL_LIMIT (default 2) is the same number as default_limit in dagster.yaml.
set -euo pipefail
DAGSTER="${DAGSTER:-$(cd "$(dirname "$0")/.." && pwd)/.venv/bin/dagster}"
: "${DAGSTER_HOME:?set DAGSTER_HOME}"
cd "$DAGSTER_HOME"
for pool in paid_social_api reconcile; do
  "$DAGSTER" instance concurrency set "$pool" "${POOL_LIMIT:-2}" >/dev/null
done
echo "==> pool limits: paid_social_api=${POOL_LIMIT:-2} reconcile=${POOL_LIMIT:-2} (Deployment → Concurrency)"
