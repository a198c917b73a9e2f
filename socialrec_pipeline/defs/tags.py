"""Run tags operators filter on in the UI, and the tag the run queue limits by job family."""

from __future__ import annotations

TOKEN_TAG = "socialrec/token_address"
SOURCE_TAG = "source"
SANDBOX_TAG = "sandbox"
#: `dagster.yaml` caps concurrent runs per value of this tag (reconcile / retry / metric_refresh).
JOB_FAMILY_TAG = "socialrec/job"
#: Set by `record_token_job` when it knows what happened to the token (recorded, locked,
#: already_recorded, unknown_token, upstream_failed): a green run that recorded nothing is findable.
OUTCOME_TAG = "socialrec/outcome"
#: Set to `true` on a `record_token_job` run that recorded a token below the AF threshold because
#: its config said `force_below_threshold: true`.
FORCED_TAG = "socialrec/forced_below_threshold"


def run_tags(token_address: str, *, source: str, sandbox: bool) -> dict[str, str]:
    tags = {TOKEN_TAG: token_address, SOURCE_TAG: source, JOB_FAMILY_TAG: "record_token"}
    if sandbox:
        tags[SANDBOX_TAG] = "true"
    return tags
