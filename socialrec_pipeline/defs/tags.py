"""Run tags operators filter on in the UI, and the tag the run queue limits by job family."""

from __future__ import annotations

TOKEN_TAG = "socialrec/token_address"
#: The tag Dagster gives a run launched by a `RunRequest` with a `run_key` (documented tag name; read
#: here instead of importing Dagster's internal constant).
RUN_KEY_TAG = "dagster/run_key"
SOURCE_TAG = "source"
SANDBOX_TAG = "sandbox"
#: `dagster.yaml` caps concurrent runs per value of this tag (reconcile / retry / metric_refresh).
JOB_FAMILY_TAG = "socialrec/job"
#: Set by `record_token_job` when it knows what happened to the token (recorded, locked,
#: already_recorded, unknown_token, upstream_failed): a green run that recorded nothing is findable.
OUTCOME_TAG = "socialrec/outcome"
#: The outcome of any job's run that failed because Redis or MongoDB could not be reached.
INFRA_FAILED = "infra_failed"
#: Problems an operator must fix although the run may be green (a provider refused our key, a
#: quota is spent, the upstream answers 404 for every token): comma-separated codes such as
#: `key_rejected:TWITTERAPI_API_KEY`, `quota_exceeded:YOUTUBE_API_KEY`, `upstream_all_404`.
WARNING_TAG = "socialrec/warning"
#: The warning code of "SolTracker answered 404 for every token in a row" (a wrong base URL?).
UPSTREAM_ALL_404 = "upstream_all_404"
#: Set to `true` on a `record_token_job` run that recorded a token below the AF threshold because
#: its config said `force_below_threshold: true`.
FORCED_TAG = "socialrec/forced_below_threshold"


def run_tags(token_address: str, *, source: str, sandbox: bool) -> dict[str, str]:
    tags = {TOKEN_TAG: token_address, SOURCE_TAG: source, JOB_FAMILY_TAG: "record_token"}
    if sandbox:
        tags[SANDBOX_TAG] = "true"
    return tags
