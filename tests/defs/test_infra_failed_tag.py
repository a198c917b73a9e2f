"""SPEC §4.1: a MongoDB or Redis failure fails the run tagged `infra_failed`, whether or not waiting
could fix it (a transient one after the step's retries, any other at once). The errors are the
ones the drivers raise; the op stands for any step that writes a URL's graph or the marker."""

import dagster as dg
import pytest
import redis
from pymongo.errors import OperationFailure, WriteConcernError

from socialrec_pipeline.defs.services import transient_only
from socialrec_pipeline.defs.tags import INFRA_FAILED, OUTCOME_TAG


def _job_raising(exc: BaseException) -> dg.JobDefinition:
    @dg.op
    def write_step(context: dg.OpExecutionContext) -> None:
        with transient_only(context):
            raise exc

    @dg.job
    def one_step():
        write_step()

    return one_step


@pytest.mark.parametrize(
    "exc",
    [
        WriteConcernError("waiting for replication timed out", 64, {"code": 64}),
        OperationFailure("not primary and secondaryOk=false", 13435),
        redis.ResponseError("MISCONF Redis is configured to save RDB snapshots, but it's unable to persist"),
    ],
    ids=["mongo_write_concern", "mongo_not_primary", "redis_misconf"],
)
def test_a_database_failure_waiting_cannot_fix_fails_the_step_at_once_tagged_infra_failed(instance, exc):
    result = _job_raising(exc).execute_in_process(instance=instance, raise_on_error=False)
    assert not result.success
    assert instance.get_run_by_id(result.run_id).tags.get(OUTCOME_TAG) == INFRA_FAILED
    failure = next(e for e in result.all_events if e.event_type_value == "STEP_FAILURE")
    description = failure.event_specific_data.user_failure_data.description
    assert description.split(" unavailable:")[0] in {"MongoDB", "Redis"}


def test_a_bug_is_not_blamed_on_the_infrastructure(instance):
    result = _job_raising(KeyError("a bug")).execute_in_process(instance=instance, raise_on_error=False)
    assert not result.success
    assert instance.get_run_by_id(result.run_id).tags.get(OUTCOME_TAG) is None
