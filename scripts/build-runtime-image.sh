#!/usr/bin/env bash
# Build the kubernetes backend's runtime image (/opt/openforge: python/, repo/, tools/) from
# this checkout with the Docker SDK; optionally push it. Prints one JSON line (files, sizes,
# build seconds). See training/orchestrator/runtime_image.py.
#
#   scripts/build-runtime-image.sh --slim --no-tools --push 127.0.0.1:5000   # ~340 MB image, 20-35 s build here
#   scripts/build-runtime-image.sh --dry-run                                 # full tree: ~5 GB (venv + tools)
#
# Then: OPENFORGE_K8S_RUNTIME_IMAGE=<registry>/openforge-runtime:latest
set -euo pipefail
cd "$(dirname "$0")/.."
exec .venv/bin/python -m training.orchestrator.runtime_image "$@"
