"""The token.flow stream without Dagster: queue topology, the durable record inbox, and one tick's
drain + launch planning. `defs/token_flow.py` is the thin Dagster shell over this package."""
