# syntax=docker/dockerfile:1
# PgBouncer (session mode) in front of Dagster's PostgreSQL: Debian's package, the config written
# from the environment by scripts/pgbouncer.sh at start (the same script the topology tests run).
FROM debian:bookworm-slim
RUN apt-get update \
    && apt-get install -y --no-install-recommends pgbouncer postgresql-client \
    && rm -rf /var/lib/apt/lists/* \
    && install -d -o postgres -m 0700 /var/lib/pgbouncer
COPY scripts/pgbouncer.sh /usr/local/bin/socialrec-pgbouncer
USER postgres
EXPOSE 6432
ENTRYPOINT ["bash", "/usr/local/bin/socialrec-pgbouncer", "serve"]
