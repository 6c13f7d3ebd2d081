# Python package installs for the install scripts (sourced, not run): uv when it can be had,
# pip otherwise.
#
#   source scripts/lib/packages.sh
#   packages_setup .venv/bin/python      # fetch uv into that venv (once); pip is the fallback
#   packages_install VENV_PYTHON ARGS... # `pip install ARGS` into VENV_PYTHON's environment,
#                                        # under constraints.txt
#
# Why uv: on a 2-core box with cold caches it installed the core .venv (torch CPU wheel +
# openforge[claude] + the model packages) in ~13 s where pip took ~115 s (measured
# 2026-12-04, docs/install.md), and the main job's wall time includes its install.
#
# uv does not read pip's configuration, so the index URL, extra index URLs, find-links,
# constraint files and CA bundle pip is configured with (pip.conf or PIP_* variables) are
# handed to it, and it takes the best version across all of those indexes as pip does
# (index strategy unsafe-best-match; uv's own default prefers the first index that has the
# package). OPENFORGE_INSTALLER=pip skips uv. A uv install that fails is retried with pip.

PACKAGES_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
PACKAGES_UV=""
PACKAGES_UV_ARGS=()

_packages_log() { printf '\033[1m[packages]\033[0m %s\n' "$*" >&2; }

# _pip_setting LISTING KEY: the value for KEY in LISTING (the output of `pip config list`):
# the environment's, then the [install] section's, then [global]'s; empty when unset.
_pip_setting() {
  local scope value
  for scope in ":env:" install global; do
    value="$(printf '%s\n' "$1" | awk -v p="$scope.$2=" 'index($0, p) == 1 { print substr($0, length(p) + 1); exit }')"
    if [ -n "$value" ]; then
      value="${value#\'}"; printf '%s' "${value%\'}"; return 0
    fi
  done
}

# packages_setup PYTHON: find uv (PYTHON's environment, then the core .venv) or install it
# into PYTHON's environment with pip (the version constraints.txt pins), and translate the
# settings of PYTHON's pip into uv's arguments. Leaves PACKAGES_UV empty (pip for every
# install) when uv cannot be installed.
packages_setup() {
  local py="$1" value item listing
  PACKAGES_UV=""
  [ "${OPENFORGE_INSTALLER:-uv}" = pip ] && return 0
  local uv="$(dirname "$py")/uv"
  if [ ! -x "$uv" ] && [ -x "$PACKAGES_ROOT/.venv/bin/uv" ]; then
    uv="$PACKAGES_ROOT/.venv/bin/uv"  # the core venv's, for the other venvs
  elif [ ! -x "$uv" ] && ! "$py" -m pip install --disable-pip-version-check -q -c "$PACKAGES_ROOT/constraints.txt" uv >&2; then
    _packages_log "uv could not be installed: pip installs everything"
    return 0
  fi
  [ -x "$uv" ] || return 0
  PACKAGES_UV="$uv"
  PACKAGES_UV_ARGS=(--index-strategy unsafe-best-match -c "$PACKAGES_ROOT/constraints.txt")
  listing="$("$py" -m pip config list 2>/dev/null)" || listing=""  # read once: each pip start costs ~0.4 s
  value="$(_pip_setting "$listing" index-url)"
  [ -n "$value" ] && PACKAGES_UV_ARGS+=(--index-url "$value")
  for item in $(_pip_setting "$listing" extra-index-url); do PACKAGES_UV_ARGS+=(--extra-index-url "$item"); done
  for item in $(_pip_setting "$listing" find-links); do PACKAGES_UV_ARGS+=(--find-links "$item"); done
  for item in $(_pip_setting "$listing" constraint); do PACKAGES_UV_ARGS+=(-c "$item"); done
  value="$(_pip_setting "$listing" cert)"
  if [ -n "$value" ] && [ -z "${SSL_CERT_FILE:-}" ]; then export SSL_CERT_FILE="$value"; fi
  value="$(_pip_setting "$listing" default-timeout)"; [ -n "$value" ] || value="$(_pip_setting "$listing" timeout)"
  if [ -n "$value" ] && [ -z "${UV_HTTP_TIMEOUT:-}" ]; then export UV_HTTP_TIMEOUT="${value%.*}"; fi
}

# packages_install PYTHON ARGS...: install ARGS into PYTHON's environment (uv, else pip).
packages_install() {
  local py="$1"; shift
  if [ -n "$PACKAGES_UV" ]; then
    "$PACKAGES_UV" pip install -q --python "$py" "${PACKAGES_UV_ARGS[@]}" "$@" && return 0
    _packages_log "uv could not install $*: retrying with pip"
  fi
  "$py" -m pip install --disable-pip-version-check -q -c "$PACKAGES_ROOT/constraints.txt" "$@"
}
