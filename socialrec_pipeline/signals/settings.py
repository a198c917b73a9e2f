"""Deploy-time settings of the signal layer (read from the environment by `defs`)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, StrictInt

#: Environment variable of `cluster_hub_limit`.
HUB_LIMIT_VARIABLE = "SOCIALREC_CLUSTER_HUB_LIMIT"
DEFAULT_HUB_LIMIT = 50
#: Environment variable of `cluster_retention_days`.
RETENTION_VARIABLE = "SOCIALREC_CLUSTER_RETENTION_DAYS"
DEFAULT_RETENTION_DAYS = 7


class SignalSettings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    #: An object linked by more tokens than this is a hub (an exchange's account, a big channel, a
    #: shared host) and joins nothing in the clustering.
    cluster_hub_limit: StrictInt = Field(default=DEFAULT_HUB_LIMIT, ge=1, le=1_000_000)
    #: A clustering run deletes the cluster sets whose cutoff is more than this many days before
    #: its own (each day stores every token, so the sets cannot all be kept; an older day is
    #: recomputed exactly by a backfill).
    cluster_retention_days: StrictInt = Field(default=DEFAULT_RETENTION_DAYS, ge=1, le=3650)
