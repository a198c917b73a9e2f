"""A run process for tests/defs/test_cost_control.py: records one token with paid on, against the
stand-ins at the given URL, on the instance in DAGSTER_HOME. Prints READY once imported, starts the
run when a line arrives on stdin, then prints the run id.

`python paid_run_worker.py SERVER_URL MONGO_URI DATABASE REDIS_URL TOKEN_ADDRESS`
"""

import sys

import dagster as dg

from socialrec_pipeline.defs.record_token import record_token_job
from socialrec_pipeline.defs.resources import RecordingSettingsResource
from socialrec_pipeline.sandbox.shortlinks import short_links_resolved_by
from tests.defs.jobs_fixtures import job_resources


def main(server_url: str, mongo_uri: str, database: str, redis_url: str, address: str) -> None:
    resources = job_resources(server_url, mongo_uri, database, redis_url)
    resources["generators"] = short_links_resolved_by(resources["generators"], server_url)
    resources["recording"] = RecordingSettingsResource(enable_paid="true", retry_min_interval_minutes="0")
    print("READY", flush=True)
    sys.stdin.readline()
    with dg.DagsterInstance.get() as instance:
        result = record_token_job.execute_in_process(
            run_config={"ops": {"prepare": {"config": {"token_address": address}}}},
            resources=resources,
            instance=instance,
        )
    print(result.run_id if result.success else "FAILED", flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:6])
