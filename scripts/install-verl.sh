#!/usr/bin/env bash
# Install veRL into the project's virtualenv without letting it move torch/transformers.
#
# A plain `pip install verl` downgrades transformers (FEASIBILITY.md), so veRL itself goes
# in with --no-deps and its runtime needs are installed separately under constraints.txt.
# Idempotent: re-running skips what is already importable.
#
# Usage: scripts/install-verl.sh [PYTHON]   (default: .venv/bin/python from the repo root)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${1:-$ROOT/.venv/bin/python}"
VERL_VERSION="${VERL_VERSION:-0.9.1}"
# `datasets` is not in FEASIBILITY.md's list but verl.experimental.agent_loop imports it (seen 2026-11-29).
# TransferQueue: veRL 0.9's default (v1) trainer imports `transfer_queue` (verl's "verl-core"
# extra); it goes in --no-deps (its `ray[default]` would add the dashboard stack), with the two
# deps it needs beyond ray/tensordict/hydra.
DEPS=(ray tensordict torchdata hydra-core codetiming pylatexenc peft cachetools datasets msgspec pyzmq)
TQ_VERSION="${TRANSFER_QUEUE_VERSION:-0.1.11}"

source "$ROOT/scripts/lib/packages.sh"
packages_setup "$PY"
pip_install() {
  packages_install "$PY" "$@"
}

missing=()
for mod in ray tensordict torchdata hydra codetiming pylatexenc peft cachetools datasets msgspec zmq; do
  "$PY" -c "import $mod" >/dev/null 2>&1 || missing+=("$mod")
done
if ((${#missing[@]})); then
  echo "install-verl: installing deps (missing: ${missing[*]})"
  pip_install "${DEPS[@]}"
else
  echo "install-verl: deps already present"
fi

if "$PY" -c "import verl, sys; sys.exit(0 if verl.__version__ == '$VERL_VERSION' else 1)" >/dev/null 2>&1; then
  echo "install-verl: verl $VERL_VERSION already installed"
else
  echo "install-verl: installing verl==$VERL_VERSION (--no-deps)"
  pip_install --no-deps "verl==$VERL_VERSION"
fi

if "$PY" -c "import transfer_queue" >/dev/null 2>&1; then
  echo "install-verl: transfer_queue already installed"
else
  echo "install-verl: installing TransferQueue==$TQ_VERSION (--no-deps)"
  pip_install --no-deps "TransferQueue==$TQ_VERSION"
fi

"$PY" - <<'PY'
import transfer_queue  # noqa: F401  (veRL's default v1 trainer imports it)
import torch, transformers, verl
from verl.trainer.ppo import core_algos  # noqa: F401
from verl.experimental.agent_loop import AgentLoopBase  # noqa: F401
print(f"install-verl: ok verl={verl.__version__} torch={torch.__version__} transformers={transformers.__version__}")
PY
