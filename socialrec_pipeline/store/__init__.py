"""MongoDB: collection names, indexes and repositories (data access only, no business rules)."""
