#!/usr/bin/env bash
# Starts one warm run worker (a Celery worker of socialrec_pipeline.defs.run_workers): it takes runs
# from SOCIALREC_CELERY_RUN_QUEUE and executes each in a prefork child that already imported Dagster
# and the code location. Started by run.sh; on other machines, start it with the deployment's
# environment (DAGSTER_HOME, MONGODB_URI, REDIS_URL, RABBITMQ_URL, the SOCIALREC_CELERY_* settings).
#
#   SOCIALREC_RUN_WORKER_CONCURRENCY   runs at once in this worker (default 2, one per core here); at
#                                      rest the worker keeps one child and forks the others on demand
#   SOCIALREC_RUN_WORKER_NAME          the worker's name (default runs-$SOCIALREC_ENV)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
: "${SOCIALREC_CELERY_RUN_QUEUE:?set SOCIALREC_CELERY_RUN_QUEUE (docs/configuration.md)}"
concurrency="${SOCIALREC_RUN_WORKER_CONCURRENCY:-2}"
case "$concurrency" in
  ''|*[!0-9]*|0) echo "SOCIALREC_RUN_WORKER_CONCURRENCY must be a positive integer: $concurrency" >&2; exit 2 ;;
esac
# --autoscale: a child is a fork of the already-warm parent, so one forked on demand starts at once;
# idle children beyond one are stopped again (~150 MiB each at rest).
# --without-gossip/--without-mingle: workers never talk to each other (nothing here needs it).
exec "$ROOT/.venv/bin/celery" -A socialrec_pipeline.defs.run_workers worker \
  -Q "$SOCIALREC_CELERY_RUN_QUEUE" --autoscale="$concurrency,1" --prefetch-multiplier=1 \
  -n "${SOCIALREC_RUN_WORKER_NAME:-runs-${SOCIALREC_ENV:-dev}}@%h" \
  --without-gossip --without-mingle -l "${SOCIALREC_RUN_WORKER_LOG_LEVEL:-WARNING}"
