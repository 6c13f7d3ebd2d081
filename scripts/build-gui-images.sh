#!/usr/bin/env bash
# Build the GUI sandbox images the computer-use and browser-use task Dockerfiles name
# (environments/computer/taskgen.py, environments/browser/taskgen.py), layered on the
# debootstrap base image (scripts/build-base-image.sh), because no public registry is
# reachable here:
#   openforge/computer-base:bookworm  Xvfb, openbox, xdotool, scrot, x11-utils, Mousepad,
#                                     PCManFM, LibreOffice Calc, fonts, gsettings
#   openforge/browser-base:bookworm   Debian Chromium + fonts + libatomic1 (Playwright's node
#                                     driver needs it; Playwright's Python package
#                                     comes from the virtualenv the docker backend mounts)
#
# How: `docker run` the base image with the host's apt cache mounted read-only (debs already
# downloaded are copied in, the rest come from the Debian mirror over the host network),
# `apt-get install --no-install-recommends`, clean, `docker commit`. Content-tagged and
# idempotent: the image carries the label openforge.content = sha256(base image id + package
# list + this recipe) and is also tagged <name>:<first 12 hex>; an image whose label matches
# is left alone (FORCE=1 rebuilds). Prints one line per image: "NAME (cached|built in Ns)".
#
# Env: OPENFORGE_BASE_IMAGE (default openforge/base:bookworm), OPENFORGE_APT_CACHE (host
#      debs, default /var/cache/apt/archives), DEBIAN_MIRROR, ONLY=computer|browser.
set -euo pipefail

BASE="${OPENFORGE_BASE_IMAGE:-openforge/base:bookworm}"
APT_CACHE="${OPENFORGE_APT_CACHE:-/var/cache/apt/archives}"
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
SECURITY="${DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}"

COMPUTER_PACKAGES="xvfb openbox xdotool scrot x11-utils mousepad pcmanfm xterm libreoffice-calc libreoffice-writer fonts-dejavu-core libglib2.0-bin"
BROWSER_PACKAGES="chromium fonts-dejavu-core fonts-liberation libatomic1"

docker image inspect "$BASE" >/dev/null 2>&1 || {
  echo "build-gui-images: base image $BASE missing; run scripts/build-base-image.sh first" >&2; exit 1; }
BASE_ID="$(docker image inspect --format '{{.Id}}' "$BASE")"

# The recipe run inside the build container (its text is part of the content hash).
read -r -d '' RECIPE <<'EOF' || true
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
printf 'deb %s bookworm main\ndeb %s bookworm-updates main\ndeb %s bookworm-security main\n' \
  "$MIRROR" "$MIRROR" "$SECURITY" > /etc/apt/sources.list
apt-get update -qq
if [ -d /host-apt-cache ]; then cp -n /host-apt-cache/*.deb /var/cache/apt/archives/ 2>/dev/null || true; fi
apt-get install -y -qq --no-install-recommends $PACKAGES >/dev/null
apt-get clean
rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /tmp/* /var/tmp/*
EOF

prune_stale() {  # prune_stale NAME HASH — untag content tags of earlier package lists / base images
  docker image ls --format '{{.Repository}}:{{.Tag}}' "${1%%:*}" | grep -E ':[0-9a-f]{12}$' \
    | grep -v ":${2:0:12}\$" | xargs -r docker rmi >/dev/null 2>&1 || true
}

build() {  # build NAME PACKAGES
  local name="$1" packages="$2" hash cid t0 mounts=()
  hash="$(printf '%s\n%s\n%s\n' "$BASE_ID" "$packages" "$RECIPE" | sha256sum | cut -c1-64)"
  if [ "${FORCE:-0}" != "1" ] && \
     [ "$(docker image inspect --format '{{index .Config.Labels "openforge.content"}}' "$name" 2>/dev/null)" = "$hash" ]; then
    prune_stale "$name" "$hash"
    echo "$name (cached)"
    return 0
  fi
  t0=$(date +%s)
  [ -d "$APT_CACHE" ] && mounts=(-v "$APT_CACHE:/host-apt-cache:ro")
  cid="$(docker create --network host "${mounts[@]}" -e PACKAGES="$packages" -e MIRROR="$MIRROR" \
         -e SECURITY="$SECURITY" "$BASE" bash -c "$RECIPE")"
  if ! docker start -a "$cid" >&2; then
    docker rm -f "$cid" >/dev/null 2>&1 || true
    echo "build-gui-images: $name: apt-get install failed (see above)" >&2
    return 1
  fi
  docker commit \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV LANG=C.UTF-8' \
    --change "LABEL openforge.content=$hash" \
    --change "LABEL openforge.packages=\"$packages\"" \
    --change 'CMD ["/bin/bash"]' \
    "$cid" "$name" >/dev/null
  docker rm "$cid" >/dev/null
  docker tag "$name" "${name%%:*}:${hash:0:12}"
  prune_stale "$name" "$hash"
  echo "$name (built in $(( $(date +%s) - t0 ))s)"
}

case "${ONLY:-all}" in
  computer) build openforge/computer-base:bookworm "$COMPUTER_PACKAGES" ;;
  browser) build openforge/browser-base:bookworm "$BROWSER_PACKAGES" ;;
  all)
    build openforge/computer-base:bookworm "$COMPUTER_PACKAGES"
    build openforge/browser-base:bookworm "$BROWSER_PACKAGES" ;;
  *) echo "build-gui-images: ONLY must be computer or browser" >&2; exit 2 ;;
esac
