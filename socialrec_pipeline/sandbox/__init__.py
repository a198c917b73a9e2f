"""Local stand-ins for the upstream and platform APIs: used by tests and by the offline demo."""
