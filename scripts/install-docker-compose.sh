#!/usr/bin/env bash
# Installs the Docker Compose v2 CLI plugin (`docker compose`) that Harbor's docker
# environment drives (`harbor run -e docker`; tests/test_harbor_run.py). Debian bookworm only
# packages Compose v1 (docker-compose 1.29, no `up --wait`, no `cp`), so this takes the
# `docker-compose` package (v2) of the next Debian release from the same Debian mirror the
# system's apt sources name, with a private apt state (the system's sources and dpkg database
# are left alone), and copies its plugin binary (needs libc6 >= 2.34) to
# /usr/libexec/docker/cli-plugins/. Idempotent; a no-op when `docker compose` already works.
# Env: DEBIAN_MIRROR (default: the first Debian URI in /etc/apt/sources*), COMPOSE_SUITE (trixie).
set -euo pipefail
log() { printf '\033[1m[install-docker-compose]\033[0m %s\n' "$*" >&2; }
PLUGIN_DIR=/usr/libexec/docker/cli-plugins
SUITE="${COMPOSE_SUITE:-trixie}"

if docker compose version >/dev/null 2>&1; then
  log "$(docker compose version) already installed"
  exit 0
fi
if [ "$(id -u)" != 0 ]; then log "not root: cannot install the docker compose plugin"; exit 1; fi
for tool in apt-get dpkg-deb; do
  command -v "$tool" >/dev/null 2>&1 || { log "$tool not found (not a Debian system?)"; exit 1; }
done

MIRROR="${DEBIAN_MIRROR:-}"
if [ -z "$MIRROR" ]; then
  MIRROR="$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '/^URIs:/ {print $2}' | grep -v -- '-security' | grep '/debian/\?$' | head -n 1 || true)"
fi
if [ -z "$MIRROR" ]; then
  MIRROR="$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null | awk '$1 == "deb" {for (i = 2; i <= NF; i++) if ($i ~ /^https?:/) {print $i; exit}}' | grep -v -- '-security' | head -n 1 || true)"
fi
[ -n "$MIRROR" ] || { log "no Debian mirror found in /etc/apt/sources*; set DEBIAN_MIRROR"; exit 1; }

WORK="$(mktemp -d /var/tmp/openforge-compose.XXXXXX)"
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/lists/partial" "$WORK/cache/archives/partial" "$WORK/x"
echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $MIRROR $SUITE main" >"$WORK/sources.list"
APT=(-o "Dir::Etc::SourceList=$WORK/sources.list" -o Dir::Etc::SourceParts=/nonexistent
     -o "Dir::State::Lists=$WORK/lists" -o "Dir::Cache=$WORK/cache" -o APT::Sandbox::User=root)
log "docker-compose (v2) from Debian $SUITE"
apt-get "${APT[@]}" update -qq >&2
(cd "$WORK" && apt-get "${APT[@]}" download docker-compose >&2)
dpkg-deb -x "$WORK"/docker-compose_*.deb "$WORK/x"
install -D -m 0755 "$WORK/x/usr/libexec/docker/cli-plugins/docker-compose" "$PLUGIN_DIR/docker-compose"
docker compose version >&2
