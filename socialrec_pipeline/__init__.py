"""socialrec_pipeline: records the social footprint of Solana tokens into MongoDB, run by Dagster."""
