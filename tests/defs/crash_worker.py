"""A run worker for tests/defs/test_slot_after_crash.py: a step of the paid pool that holds its
slot and waits to be killed. `python crash_worker.py pooled` with DAGSTER_HOME set."""

import sys
import time

import dagster as dg

from socialrec_pipeline.defs.paid_pool import PAID_POOL


@dg.op(pool=PAID_POOL)
def pooled_step(context: dg.OpExecutionContext) -> None:
    print("CLAIMED", flush=True)  # the executor claimed the step's slot before running it
    time.sleep(600)


@dg.job(executor_def=dg.in_process_executor)
def pooled_job() -> None:
    pooled_step()


if __name__ == "__main__":
    job = {"pooled": pooled_job}[sys.argv[1]]
    with dg.DagsterInstance.get() as instance:
        job.execute_in_process(instance=instance)
