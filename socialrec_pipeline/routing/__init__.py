"""Pure URL routing: normalize, classify by host and path, gate, apex domain. No IO."""
