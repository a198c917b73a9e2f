"""A run worker for tests/defs/test_slot_after_crash.py: claims a slot of the paid pool and waits to
be killed. `python crash_worker.py pooled|paid_call` with DAGSTER_HOME set."""

import sys
import time

import dagster as dg

from socialrec_pipeline.defs.paid_pool import PAID_POOL, PoolPaidSlots


@dg.op(pool=PAID_POOL)
def pooled_step(context: dg.OpExecutionContext) -> None:
    print("CLAIMED", flush=True)  # the executor claimed the step's slot before running it
    time.sleep(600)


@dg.op
def paid_call(context: dg.OpExecutionContext) -> None:
    with PoolPaidSlots(context).slot("a paid call"):
        print("CLAIMED", flush=True)
        time.sleep(600)


@dg.job(executor_def=dg.in_process_executor)
def pooled_job() -> None:
    pooled_step()


@dg.job(executor_def=dg.in_process_executor)
def paid_call_job() -> None:
    paid_call()


if __name__ == "__main__":
    job = {"pooled": pooled_job, "paid_call": paid_call_job}[sys.argv[1]]
    with dg.DagsterInstance.get() as instance:
        job.execute_in_process(instance=instance)
