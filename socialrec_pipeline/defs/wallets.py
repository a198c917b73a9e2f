"""`wallets_backfill_job`: fill `accounts.known_wallets` from stored bios (launched from the UI)."""

import dagster as dg
from bson import ObjectId
from pydantic import Field

from socialrec_pipeline.defs.launch_gate import LaunchRefused, refuse_op_config
from socialrec_pipeline.defs.resources import MongoResource
from socialrec_pipeline.defs.tags import JOB_FAMILY_TAG
from socialrec_pipeline.recording.wallets_backfill import backfill_wallets


class WalletsBackfillConfig(dg.Config):
    batch_size: int = Field(
        default=500, description="Accounts read and updated per batch (1 to SOCIALREC_CAP_WALLETS_BATCH_SIZE)."
    )
    max_batches: int | None = Field(
        default=None,
        description="Stop after this many batches (1 to SOCIALREC_CAP_WALLETS_MAX_BATCHES; "
        "null = the whole collection).",
    )
    after_id: str | None = Field(
        default=None, description="Resume after this account _id (the `last_id` a stopped run reported)."
    )


@dg.op(description="Walk accounts by _id in bounded batches and add the wallets found in each stored bio.")
def backfill_known_wallets(
    context: dg.OpExecutionContext, config: WalletsBackfillConfig, mongo: MongoResource
) -> dg.Output:
    try:
        refuse_op_config("backfill_known_wallets", config.model_dump())  # the launch gate's checks, in process too
    except LaunchRefused as exc:
        raise dg.Failure(description=str(exc)) from None
    if config.after_id is not None and not ObjectId.is_valid(config.after_id):
        raise dg.Failure(f"after_id {config.after_id!r} is not an ObjectId")
    after = ObjectId(config.after_id) if config.after_id else None
    result = backfill_wallets(
        mongo.store(), batch_size=config.batch_size, max_batches=config.max_batches, after_id=after
    )
    summary: dict[str, int | bool | str] = {
        "scanned": result.scanned,
        "with_wallets": result.with_wallets,
        "updated": result.updated,
        "batches": result.batches,
        "complete": result.complete,
        "last_id": str(result.last_id) if result.last_id else "",
    }
    context.log.info("wallets backfill " + " ".join(f"{k}={v}" for k, v in summary.items()))
    return dg.Output(summary, metadata=summary)


@dg.job(
    executor_def=dg.in_process_executor,
    tags={JOB_FAMILY_TAG: "wallets_backfill"},
    description="Fill accounts.known_wallets from the bios already stored "
    "(after deploying the wallet rule or a fix to it).",
)
def wallets_backfill_job():
    backfill_known_wallets()
