"""Derived signals (SPEC §11): plain services over the stored graph, computed as of a cutoff.

Between `store` and `defs`: they read through `store/signals.py` (every read bounded by the cutoff
and served by an index) and the Dagster assets in `defs/signals.py` only call them.

- `window.py`: a UTC day → its (start, cutoff); the one place the no-look-ahead bound is made.
- `link_stats.py`: `contents.link_stats` for contents linked during the day.
- `token_signals.py`: one `token_signals` document per token discovered during the day.
- `clusters.py`: `token_clusters`, the connected components of all tokens up to the cutoff.
- `checks.py`: the three checks of the layer (recount, coverage, exactly-one-cluster).
"""
