# One image for the user-code gRPC server, the webserver and the daemon.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    DAGSTER_HOME=/opt/dagster/home

WORKDIR /opt/dagster/app
COPY pyproject.toml README.md ./
COPY socialrec_pipeline ./socialrec_pipeline
# k8s: the Helm chart runs the webserver and the daemon (K8sRunLauncher) from this image too.
RUN pip install --no-cache-dir ".[postgres,k8s]"

RUN mkdir -p "$DAGSTER_HOME"
COPY deploy/dagster.yaml deploy/workspace.yaml /opt/dagster/home/

RUN useradd --system --uid 10001 dagster && chown -R dagster /opt/dagster
USER dagster
