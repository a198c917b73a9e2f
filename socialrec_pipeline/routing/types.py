"""The result of routing one URL."""

from __future__ import annotations

from dataclasses import dataclass

from socialrec_pipeline.domain.enums import ObjectKind, Platform
from socialrec_pipeline.routing.source_types import SourceType


@dataclass(frozen=True, slots=True)
class RoutedUrl:
    #: The text exactly as it arrived (after nothing but type coercion).
    input: str
    #: The dedup key: every spelling of one target maps to one canonical URL.
    canonical_url: str
    source_type: SourceType
    #: What the URL identifies inside its platform (tweet id, handle, `owner/name`, query, ...).
    source_key: str | None
    object: ObjectKind
    platform: Platform
    #: Content or venue subtype from the source-type table; None for accounts.
    subtype: str | None

    def as_json(self) -> dict[str, str | None]:
        return {
            "input": self.input,
            "canonical_url": self.canonical_url,
            "source_type": self.source_type.value,
            "source_key": self.source_key,
            "object": self.object.value,
            "platform": self.platform.value,
            "subtype": self.subtype,
        }
