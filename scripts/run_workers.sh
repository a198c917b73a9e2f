#!/usr/bin/env bash
# Starts one warm run worker (a Celery worker of socialrec_pipeline.defs.run_workers): it takes runs
# from SOCIALREC_CELERY_RUN_QUEUE and executes each in a prefork child that already imported Dagster
# and the code location. Started by run.sh; on other machines, start it with the deployment's
# environment (DAGSTER_HOME, MONGODB_URI, REDIS_URL, RABBITMQ_URL, the SOCIALREC_CELERY_* settings).
#
#   SOCIALREC_RUN_WORKER_CONCURRENCY   runs at once in this worker (default 2, one per core here); at
#                                      rest the worker keeps SOCIALREC_RUN_WORKER_IDLE_CHILDREN
#                                      children and forks the others on demand
#   SOCIALREC_RUN_WORKER_IDLE_CHILDREN children kept at rest (default 0, at most the concurrency);
#                                      each kept one holds ~145 MiB RSS and saves the first run after
#                                      a quiet minute ~0.3 s of forking (docs/scaling.md)
#   SOCIALREC_RUN_WORKER_NAME          the worker's name (default runs-$SOCIALREC_ENV)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
: "${SOCIALREC_CELERY_RUN_QUEUE:?set SOCIALREC_CELERY_RUN_QUEUE (docs/configuration.md)}"
concurrency="${SOCIALREC_RUN_WORKER_CONCURRENCY:-2}"
case "$concurrency" in
  ''|*[!0-9]*|0) echo "SOCIALREC_RUN_WORKER_CONCURRENCY must be a positive integer: $concurrency" >&2; exit 2 ;;
esac
idle_children="${SOCIALREC_RUN_WORKER_IDLE_CHILDREN:-0}"
case "$idle_children" in
  ''|*[!0-9]*) echo "SOCIALREC_RUN_WORKER_IDLE_CHILDREN must be a non-negative integer: $idle_children" >&2; exit 2 ;;
esac
if [ "$idle_children" -gt "$concurrency" ]; then
  echo "SOCIALREC_RUN_WORKER_IDLE_CHILDREN ($idle_children) exceeds SOCIALREC_RUN_WORKER_CONCURRENCY ($concurrency)" >&2
  exit 2
fi
# --autoscale: a child is a fork of the already-warm parent (its run's imports done too), so one
# forked on demand starts its run in ~0.4 s; idle children beyond the kept ones are stopped again
# 30-60 s after the last run (~145 MiB RSS each once it has run).
# --without-gossip/--without-mingle: workers never talk to each other (nothing here needs it).
exec "$ROOT/.venv/bin/celery" -A socialrec_pipeline.defs.run_workers worker \
  -Q "$SOCIALREC_CELERY_RUN_QUEUE" --autoscale="$concurrency,$idle_children" --prefetch-multiplier=1 \
  -n "${SOCIALREC_RUN_WORKER_NAME:-runs-${SOCIALREC_ENV:-dev}}@%h" \
  --without-gossip --without-mingle -l "${SOCIALREC_RUN_WORKER_LOG_LEVEL:-WARNING}"
