"""Run tags operators filter on in the UI, and the tag the run queue limits by job family."""

from __future__ import annotations

import re

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


#: One key per token, `socialrec/token.<address>`, set to `true` on every run that worked on the token:
#: its record_token_job run and each retry / reconcile run that held its lock to write for it. A run has
#: one value per key, and those runs touch many tokens, so the address is in the key (docs/decisions.md,
#: "The run history of one token"). Filter the Runs page by `socialrec/token.<address>` = `true`.
TOKEN_TOUCHED_PREFIX = "socialrec/token."
TOKEN_TOUCHED_VALUE = "true"
#: Dagster's tag key rule: one `namespace/` then a name of at most 63 of `[A-Za-z0-9_.-]`.
_TAG_NAME = re.compile(r"[A-Za-z0-9_.-]{1,63}")


def token_touched_tag(token_address: str) -> dict[str, str]:
    """The per-token run tag of `token_address`; empty when the address cannot form a tag key
    (a base58 mint address always can: 32-44 alphanumeric characters)."""
    key = TOKEN_TOUCHED_PREFIX + token_address
    if not _TAG_NAME.fullmatch(key.partition("/")[2]):
        return {}
    return {key: TOKEN_TOUCHED_VALUE}


def run_tags(token_address: str, *, source: str, sandbox: bool) -> dict[str, str]:
    tags = {TOKEN_TAG: token_address, SOURCE_TAG: source, JOB_FAMILY_TAG: "record_token"}
    tags.update(token_touched_tag(token_address))
    if sandbox:
        tags[SANDBOX_TAG] = "true"
    return tags
