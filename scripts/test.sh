#!/usr/bin/env bash
# Installs everything the tests need and runs the whole suite (what .ci/run calls).
# Starts the services tests use: PostgreSQL on loopback, a Docker engine and a local image
# registry when it can.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh --dev
if [ -z "${OPENFORGE_TEST_PG_URL:-}" ]; then
  if PG_URL="$(bash scripts/start-postgres.sh)"; then
    export OPENFORGE_TEST_PG_URL="$(printf '%s\n' "$PG_URL" | tail -n 1)"
  else
    echo "[test] PostgreSQL could not start: its tests will skip" >&2
  fi
fi
# Docker engine + the locally built base image (no public registry is reachable here).
if DOCKER_LINE="$(bash scripts/start-dockerd.sh)"; then
  export "${DOCKER_LINE}"
  bash scripts/build-base-image.sh >/dev/null || echo "[test] base image build failed: docker tests will skip" >&2
  bash scripts/build-gui-images.sh >/dev/null || echo "[test] GUI image build failed: the docker GUI tests will fail" >&2
else
  echo "[test] Docker engine could not start: docker tests will skip" >&2
fi
# Local image registry on 127.0.0.1:5000 (kubernetes backend: push, then pull-check).
if REGISTRY_LINE="$(bash scripts/start-registry.sh)"; then
  export "${REGISTRY_LINE}"
else
  echo "[test] local registry could not start: registry tests will skip" >&2
fi
export PREFECT_SERVER_ANALYTICS_ENABLED=false PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS=120
exec .venv/bin/python -m pytest "$@"
