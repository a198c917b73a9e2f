# syntax=docker/dockerfile:1
# One image for the user-code gRPC server, the webserver and the daemon: production dependencies only,
# installed exactly as uv.lock pins them, run as a non-root user. The embedded test database
# (the `local` extra), the sandbox stand-ins, tests and benchmarks are not in it (.dockerignore).
# k8s: the Helm chart runs the webserver and the daemon (K8sRunLauncher) from this image too.
# Celery run workers add their integration: docker build --build-arg EXTRAS="postgres k8s celery" .

FROM python:3.11-slim AS build
ARG EXTRAS="postgres k8s"
ENV UV_COMPILE_BYTECODE=1 UV_LINK_MODE=copy UV_PYTHON_DOWNLOADS=never \
    UV_PROJECT_ENVIRONMENT=/opt/venv
RUN pip install --no-cache-dir uv==0.13.9
WORKDIR /opt/dagster/app
# Dependencies first, in a layer of their own that survives code changes.
COPY pyproject.toml uv.lock README.md ./
RUN uv sync --frozen --no-install-project --no-editable $(printf -- '--extra %s ' $EXTRAS)
COPY socialrec_pipeline ./socialrec_pipeline
RUN uv sync --frozen --no-editable $(printf -- '--extra %s ' $EXTRAS)

FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    DAGSTER_HOME=/opt/dagster/home \
    PATH=/opt/venv/bin:$PATH
RUN useradd --system --uid 10001 --home-dir /opt/dagster dagster \
    && mkdir -p /opt/dagster/home && chown dagster /opt/dagster/home
COPY --from=build /opt/venv /opt/venv
COPY --chown=dagster deploy/dagster.yaml deploy/workspace.yaml /opt/dagster/home/
WORKDIR /opt/dagster/home
USER dagster
