#!/usr/bin/env bash
# Installs everything the tests need and runs the whole suite (what .ci/run calls).
# Starts the services tests use: PostgreSQL on loopback, a Docker engine when it can.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh --dev
export OPENFORGE_TEST_PG_URL="${OPENFORGE_TEST_PG_URL:-$(bash scripts/start-postgres.sh | tail -n 1)}" \
  || echo "[test] PostgreSQL could not start: its tests will skip" >&2
if [ -x scripts/start-dockerd.sh ]; then
  eval "$(bash scripts/start-dockerd.sh 2>/dev/null | grep '^export ' || true)"
fi
export PREFECT_SERVER_ANALYTICS_ENABLED=false PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS=120
exec .venv/bin/python -m pytest "$@"
