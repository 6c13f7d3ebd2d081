#!/usr/bin/env bash
# Installs the real Harbor (harbor==0.26.0, Python >= 3.12) into its own ./.venv-harbor, for
# the Harbor interop tests (tests/environments/taskdir/test_harbor_parity.py, ...). OpenForge's
# .venv is never touched. Interpreter: $HARBOR_PYTHON, else python3.13/python3.12 on PATH,
# else the newest 3.12+/3.13 under pyenv. Also the Docker Compose v2 plugin that `harbor run
# -e docker` drives (scripts/install-docker-compose.sh; tests/test_harbor_run.py).
set -euo pipefail
cd "$(dirname "$0")/.."
HARBOR_VERSION="0.26.0"
log() { printf '\033[1m[install-harbor]\033[0m %s\n' "$*" >&2; }

bash scripts/install-docker-compose.sh || log "no docker compose v2 plugin: the harbor run test will skip with the reason"

ok() { "$1" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) else 1)' 2>/dev/null; }
PY="${HARBOR_PYTHON:-}"
if [ -z "$PY" ]; then
  for cand in python3.13 python3.12 "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.1[23]*/bin/python; do
    if [ -n "$cand" ] && command -v "$cand" >/dev/null 2>&1 && ok "$cand"; then PY="$cand"; break; fi
  done
fi
if [ -z "$PY" ] || ! ok "$PY"; then
  log "no Python >= 3.12 found (set HARBOR_PYTHON); the Harbor interop tests will skip"
  exit 1
fi
if [ ! -x .venv-harbor/bin/python ]; then
  log "creating .venv-harbor with $("$PY" --version)"
  "$PY" -m venv .venv-harbor
fi
if .venv-harbor/bin/python -c "import importlib.metadata as m, sys; sys.exit(m.version('harbor') != '$HARBOR_VERSION')" 2>/dev/null; then
  log "harbor $HARBOR_VERSION already installed"
  exit 0
fi
log "harbor==$HARBOR_VERSION"
source scripts/lib/packages.sh
packages_setup .venv-harbor/bin/python
packages_install .venv-harbor/bin/python "harbor==$HARBOR_VERSION"
