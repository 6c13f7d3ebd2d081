#!/usr/bin/env bash
# Start a Docker engine for OpenForge's docker sandbox backend (FEASIBILITY.md), idempotent.
#
# No systemd here: dockerd runs in the background with its own data/exec roots, no bridge
# and no iptables (sandboxes run with --network none and reach the proxy through a unix
# socket relay; builds use --network host). Prints the DOCKER_HOST to export.
#
# Env: OPENFORGE_DOCKER_ROOT (default /var/lib/openforge-docker),
#      OPENFORGE_DOCKER_SOCK (default /var/run/docker.sock).
set -euo pipefail

ROOT="${OPENFORGE_DOCKER_ROOT:-/var/lib/openforge-docker}"
SOCK="${OPENFORGE_DOCKER_SOCK:-/var/run/docker.sock}"
LOG="$ROOT/dockerd.log"

if ! command -v dockerd >/dev/null 2>&1; then
  echo "start-dockerd: dockerd not found; install it with: apt-get install -y docker.io" >&2
  exit 1
fi

export DOCKER_HOST="unix://$SOCK"
if docker version --format '{{.Server.Version}}' >/dev/null 2>&1; then
  echo "DOCKER_HOST=$DOCKER_HOST"
  exit 0
fi

mkdir -p "$ROOT/data" "$ROOT/exec"
rm -f "$SOCK" "$ROOT/dockerd.pid"
nohup dockerd \
  --data-root "$ROOT/data" \
  --exec-root "$ROOT/exec" \
  --pidfile "$ROOT/dockerd.pid" \
  -H "unix://$SOCK" \
  --bridge=none --iptables=false --ip-masq=false \
  >"$LOG" 2>&1 &

for _ in $(seq 1 60); do
  if docker version --format '{{.Server.Version}}' >/dev/null 2>&1; then
    echo "DOCKER_HOST=$DOCKER_HOST"
    exit 0
  fi
  sleep 0.5
done
echo "start-dockerd: dockerd did not come up within 30 s; see $LOG" >&2
tail -n 20 "$LOG" >&2 || true
exit 1
