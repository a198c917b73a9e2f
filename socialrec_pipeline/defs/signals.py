"""The derived signals (SPEC §11) as daily-partitioned assets of the group `socialrec_signals`.

Thin shells over `signals/`: each asset computes one UTC day (cutoff = the day's last millisecond),
writes, attaches its figures (plotted by Dagster across partitions) and runs its check in the same
step. `signals_job` materializes the three for one day; `signals_schedule` runs it for the day that
just closed; any past range is a backfill from an asset's partition bar (Materialize → range).
"""

import os
from datetime import date

import dagster as dg
from pydantic import Field

from socialrec_pipeline.defs.assets import OWNERS
from socialrec_pipeline.defs.integrity import ERROR, check_result
from socialrec_pipeline.defs.resources import MongoResource, deploy_only
from socialrec_pipeline.defs.tags import JOB_FAMILY_TAG
from socialrec_pipeline.recording.settings import SettingError
from socialrec_pipeline.signals import checks
from socialrec_pipeline.signals.clusters import compute_clusters, largest_table
from socialrec_pipeline.signals.link_stats import compute_link_stats
from socialrec_pipeline.signals.settings import (
    DEFAULT_HUB_LIMIT,
    DEFAULT_RETENTION_DAYS,
    HUB_LIMIT_VARIABLE,
    RETENTION_VARIABLE,
    SignalSettings,
)
from socialrec_pipeline.signals.token_signals import compute_token_signals
from socialrec_pipeline.signals.window import DayWindow
from socialrec_pipeline.store.signals import SignalStore

SIGNALS_GROUP = "socialrec_signals"
START_VARIABLE = "SOCIALREC_SIGNALS_START"
DEFAULT_START = "2026-01-01"


def signals_start(environ=os.environ) -> str:
    """The first day of the signal partitions (UTC, YYYY-MM-DD; SOCIALREC_SIGNALS_START).

    Read when the code location loads (it shapes the partition set). Earlier days simply have no
    partition; lower it and backfill to compute them."""
    raw = (environ.get(START_VARIABLE) or DEFAULT_START).strip()
    try:
        return date.fromisoformat(raw).isoformat()
    except ValueError:
        raise SettingError(
            f"{START_VARIABLE}={raw!r} is not a day in the form YYYY-MM-DD (UTC); fix or unset it and reload."
        ) from None


signal_partitions = dg.DailyPartitionsDefinition(start_date=signals_start(), timezone="UTC")


class SignalSettingsResource(dg.ConfigurableResource):
    """Deploy-time settings of the signal layer (SOCIALREC_CLUSTER_HUB_LIMIT,
    SOCIALREC_CLUSTER_RETENTION_DAYS)."""

    cluster_hub_limit: int = Field(
        default=DEFAULT_HUB_LIMIT,
        description="An object linked by more tokens than this is a hub and joins no cluster.",
    )
    cluster_retention_days: int = Field(
        default=DEFAULT_RETENTION_DAYS,
        description="A clustering run deletes the cluster sets more than this many days older than its cutoff.",
    )

    def settings(self) -> SignalSettings:
        return SignalSettings(
            cluster_hub_limit=self.cluster_hub_limit, cluster_retention_days=self.cluster_retention_days
        )


def _figures(values: dict) -> dict:
    return {
        k: dg.MetadataValue.float(v) if isinstance(v, float) else dg.MetadataValue.int(v) for k, v in values.items()
    }


def _spec(asset: str, name: str, description: str) -> dg.AssetCheckSpec:
    return dg.AssetCheckSpec(name, asset=asset, description=description)


@dg.asset(
    name="content_link_stats",
    group_name=SIGNALS_GROUP,
    owners=OWNERS,
    kinds={"mongodb"},
    partitions_def=signal_partitions,
    deps=["token_links", "contents"],
    check_specs=[
        _spec(
            "content_link_stats",
            "link_stats_recount",
            f"On a random sample ({checks.RECOUNT_SAMPLE}) of the contents linked that day, contents.link_stats "
            "agrees with a recount of the links.",
        )
    ],
    description="contents.link_stats {link_count, first_linked_at, computed_at, input_cutoff} for every content "
    "linked during the day: distinct tokens that linked it by the end of the day (SPEC §11, docs/signals.md).",
)
def content_link_stats(context: dg.AssetExecutionContext, mongo: MongoResource):
    window = DayWindow.of(context.partition_key)
    reads = SignalStore(mongo.db())
    result = compute_link_stats(reads, window)
    context.log.info(f"link_stats {window.day}: {len(result.stats)} contents, {result.written} written")
    yield dg.MaterializeResult(
        metadata={
            "contents_linked": dg.MetadataValue.int(len(result.stats)),
            "written": dg.MetadataValue.int(result.written),
            "input_cutoff": dg.MetadataValue.text(window.cutoff.isoformat()),
        }
    )
    yield check_result(checks.check_link_stats_recount(reads, window), ERROR, "link_stats_recount")


@dg.asset(
    name="token_signals",
    group_name=SIGNALS_GROUP,
    owners=OWNERS,
    kinds={"mongodb"},
    partitions_def=signal_partitions,
    deps=["tokens", "token_links", "contents", "accounts", "venues", "metric_series"],
    check_specs=[
        _spec(
            "token_signals",
            "signals_cover_day",
            "Every token discovered during the day has its token_signals document as of that day.",
        )
    ],
    description="One token_signals document per token discovered during the day, as of the day's end: "
    "account ages, reused contents, prior tokens with the same domain / accounts, wallet accounts, CA "
    "exposures, velocity (SPEC §11, docs/signals.md). Plots: tokens with reused content, median minimum "
    "account age.",
)
def token_signals(context: dg.AssetExecutionContext, mongo: MongoResource):
    window = DayWindow.of(context.partition_key)
    reads = SignalStore(mongo.db())
    result = compute_token_signals(reads, window)
    figures = result.figures()
    context.log.info(f"token_signals {window.day}: " + " ".join(f"{k}={v}" for k, v in figures.items()))
    yield dg.MaterializeResult(
        metadata={**_figures(figures), "input_cutoff": dg.MetadataValue.text(window.cutoff.isoformat())}
    )
    yield check_result(checks.check_signals_cover_day(reads, window), ERROR, "signals_cover_day")


_CLUSTER_TABLE = dg.TableSchema(
    columns=[
        dg.TableColumn("cluster_id", "string", description="smallest member address"),
        dg.TableColumn("size", "int"),
        dg.TableColumn("joined_by", "string", description="joining objects per kind"),
        dg.TableColumn("examples", "string", description="the first joining objects"),
        dg.TableColumn("members", "string", description="the first members"),
    ]
)


@dg.asset(
    name="token_clusters",
    group_name=SIGNALS_GROUP,
    owners=OWNERS,
    kinds={"mongodb"},
    partitions_def=signal_partitions,
    deps=["tokens", "token_links", "contents"],
    check_specs=[
        _spec(
            "token_clusters",
            "one_cluster_per_token",
            "Every token discovered up to the cutoff is in exactly one cluster of that cutoff.",
        )
    ],
    description="token_clusters as of the day's end: connected components of all tokens discovered so far over "
    "shared accounts, venues and domain: fingerprints; hubs (more than cluster_hub_limit tokens) join nothing "
    "(SPEC §11, docs/signals.md). Plot: clusters by size; table: the 20 largest.",
)
def token_clusters(context: dg.AssetExecutionContext, mongo: MongoResource, signals: SignalSettingsResource):
    window = DayWindow.of(context.partition_key)
    reads = SignalStore(mongo.db())
    settings = signals.settings()
    result = compute_clusters(
        reads, window, hub_limit=settings.cluster_hub_limit, retention_days=settings.cluster_retention_days
    )
    figures = result.figures()
    context.log.info(f"token_clusters {window.day}: " + " ".join(f"{k}={v}" for k, v in figures.items()))
    rows = largest_table(result.docs)
    yield dg.MaterializeResult(
        metadata={
            **_figures(figures),
            "largest_clusters": dg.MetadataValue.table(
                records=[dg.TableRecord(row) for row in rows], schema=_CLUSTER_TABLE
            ),
            "input_cutoff": dg.MetadataValue.text(window.cutoff.isoformat()),
            "older_cluster_documents_deleted": dg.MetadataValue.int(result.pruned),
        }
    )
    yield check_result(checks.check_one_cluster_per_token(reads, window), ERROR, "one_cluster_per_token")


SIGNAL_ASSETS = [content_link_stats, token_signals, token_clusters]

signals_job = dg.define_asset_job(
    "signals_job",
    selection=dg.AssetSelection.groups(SIGNALS_GROUP),
    executor_def=dg.in_process_executor,
    tags={JOB_FAMILY_TAG: "signals"},
    description="Compute the derived signals of one UTC day (link stats, token signals, clusters) and check them.",
)

signals_schedule = dg.build_schedule_from_partitioned_job(
    signals_job,
    name="signals_schedule",
    hour_of_day=0,
    minute_of_hour=20,
    description="Daily at 00:20 UTC: the signals of the day that just closed (one signals_job partition).",
    default_status=dg.DefaultScheduleStatus.RUNNING,
)


def signals_settings_from_env() -> dg.ResourceDefinition:
    """The `signals` resource: SOCIALREC_CLUSTER_HUB_LIMIT and SOCIALREC_CLUSTER_RETENTION_DAYS when set
    (a malformed value fails the run), deployment-only like every resource (`deploy_only`: a launch
    cannot set it)."""
    limit = dg.EnvVar.int(HUB_LIMIT_VARIABLE) if HUB_LIMIT_VARIABLE in os.environ else DEFAULT_HUB_LIMIT
    keep = dg.EnvVar.int(RETENTION_VARIABLE) if RETENTION_VARIABLE in os.environ else DEFAULT_RETENTION_DAYS
    return deploy_only(
        "signals", SignalSettingsResource(cluster_hub_limit=limit, cluster_retention_days=keep)
    )
