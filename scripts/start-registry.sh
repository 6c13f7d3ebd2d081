#!/usr/bin/env bash
# Start a local image registry (Debian's docker-registry, the CNCF distribution server) on
# loopback for the kubernetes backend's image push/pull tests; idempotent.
#
# Its own config (no auth, filesystem storage, deletes allowed) is written under the data
# root; /etc/docker/registry/config.yml is left alone. Docker treats 127.0.0.0/8 registries
# as insecure (plain HTTP) by default, so dockerd needs no --insecure-registry flag.
# Prints OPENFORGE_REGISTRY=<host:port> to export.
#
# Env: OPENFORGE_REGISTRY_ROOT (default /var/lib/openforge-registry),
#      OPENFORGE_REGISTRY_ADDR (default 127.0.0.1:5000).
set -euo pipefail

ROOT="${OPENFORGE_REGISTRY_ROOT:-/var/lib/openforge-registry}"
ADDR="${OPENFORGE_REGISTRY_ADDR:-127.0.0.1:5000}"
LOG="$ROOT/registry.log"
BIN="$(command -v docker-registry || true)"

up() { curl -fsS -o /dev/null --max-time 2 "http://$ADDR/v2/" 2>/dev/null; }

if up; then
  echo "OPENFORGE_REGISTRY=$ADDR"
  exit 0
fi
if [ -z "$BIN" ]; then
  echo "start-registry: docker-registry not found; install it with: apt-get install -y docker-registry" >&2
  exit 1
fi

mkdir -p "$ROOT/data"
cat >"$ROOT/config.yml" <<YAML
version: 0.1
log:
  level: warn
  fields:
    service: registry
storage:
  filesystem:
    rootdirectory: $ROOT/data
  delete:
    enabled: true
http:
  addr: $ADDR
  headers:
    X-Content-Type-Options: [nosniff]
YAML

nohup "$BIN" serve "$ROOT/config.yml" >"$LOG" 2>&1 &
echo $! >"$ROOT/registry.pid"

for _ in $(seq 1 40); do
  if up; then
    echo "OPENFORGE_REGISTRY=$ADDR"
    exit 0
  fi
  sleep 0.25
done
echo "start-registry: docker-registry did not answer on http://$ADDR/v2/ within 10 s; see $LOG" >&2
tail -n 20 "$LOG" >&2 || true
exit 1
