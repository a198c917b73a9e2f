"""Pure URL routing: normalize, classify by host and path, gate, apex domain. No IO."""

from socialrec_pipeline.routing.apex import apex_domain, domain_fingerprint
from socialrec_pipeline.routing.gate import GateDecision, GateSettings, GateSettingsError, gate
from socialrec_pipeline.routing.route import dedupe_routed, route, route_unique
from socialrec_pipeline.routing.source_types import SOURCE_TYPE_TABLE, SourceType, source_type_info
from socialrec_pipeline.routing.types import RoutedUrl

__all__ = [
    "SOURCE_TYPE_TABLE",
    "GateDecision",
    "GateSettings",
    "GateSettingsError",
    "RoutedUrl",
    "SourceType",
    "apex_domain",
    "domain_fingerprint",
    "dedupe_routed",
    "gate",
    "route",
    "route_unique",
    "source_type_info",
]
