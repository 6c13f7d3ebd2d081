#!/usr/bin/env bash
# Starts a throwaway PostgreSQL server on loopback for the storage tests and benches.
# Installs Debian's postgresql when no server binaries exist. Idempotent.
# Prints the URL to use: postgresql+psycopg://postgres@127.0.0.1:$PORT/openforge_test
set -euo pipefail
PORT="${OPENFORGE_PG_PORT:-55432}"
PGDATA="${OPENFORGE_PG_DIR:-/tmp/openforge-pg}"
find_bin() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1; }
PGBIN="$(find_bin)"
if [ -z "$PGBIN" ] || [ ! -x "$PGBIN/initdb" ]; then
  echo "installing postgresql (Debian package)" >&2
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null) >&2
  PGBIN="$(find_bin)"
fi
as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
if [ ! -f "$PGDATA/PG_VERSION" ]; then
  mkdir -p "$PGDATA"
  [ "$(id -u)" = 0 ] && chown postgres "$PGDATA"
  as_pg "$PGBIN/initdb" -D "$PGDATA" -A trust -U postgres >/dev/null
fi
if ! as_pg "$PGBIN/pg_ctl" -D "$PGDATA" status >/dev/null 2>&1; then
  as_pg "$PGBIN/pg_ctl" -D "$PGDATA" -w -l "$PGDATA/server.log" \
    -o "-p $PORT -k /tmp -c listen_addresses=127.0.0.1 -c max_connections=300 -c fsync=off" start >&2
fi
as_pg "$PGBIN/psql" -h 127.0.0.1 -p "$PORT" -U postgres -tAc \
  "SELECT 1 FROM pg_database WHERE datname='openforge_test'" | grep -q 1 \
  || as_pg "$PGBIN/createdb" -h 127.0.0.1 -p "$PORT" -U postgres openforge_test
echo "postgresql+psycopg://postgres@127.0.0.1:$PORT/openforge_test"
