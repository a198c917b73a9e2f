"""Our own infrastructure failing is never a URL status (SPEC §4.1).

MongoDB or Redis failing while a URL is gated, fetched or its graph written says nothing about the
target: the error propagates, the run fails (tagged `infra_failed`) and the automatic relaunch
records the URL as the target deserves. Only a document MongoDB refuses for its content (a graph
too large to store: the target's answer) stays the URL's status.
"""

from __future__ import annotations

import redis
from pymongo.errors import PyMongoError

from socialrec_pipeline.store.errors import refuses_document


def is_infrastructure_fault(exc: BaseException) -> bool:
    """True for a MongoDB or Redis failure that is not a refusal of the document's content."""
    if isinstance(exc, redis.RedisError):
        return True
    return isinstance(exc, PyMongoError) and not refuses_document(exc)
