#!/usr/bin/env bash
# Build OpenForge's local Docker base image (Debian bookworm minbase + python3) with
# debootstrap + `docker import`, because no public image registry is reachable here
# (FEASIBILITY.md). Cached: does nothing when the image already exists (FORCE=1 rebuilds).
#
# Task Dockerfiles whose FROM cannot be pulled (debian, ubuntu, python:*-slim ...) are
# mapped onto this image by the docker sandbox backend's alias table
# (training/orchestrator/images.py).
#
# Env: OPENFORGE_BASE_IMAGE (default openforge/base:bookworm), DEBIAN_MIRROR,
#      OPENFORGE_BASE_CACHE (rootfs tarball cache, default /var/cache/openforge/base-bookworm.tar)
set -euo pipefail

IMAGE="${OPENFORGE_BASE_IMAGE:-openforge/base:bookworm}"
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
CACHE="${OPENFORGE_BASE_CACHE:-/var/cache/openforge/base-bookworm.tar}"
PACKAGES="python3,python3-venv,python3-pip,ca-certificates,curl,bash,procps"

if [ "${FORCE:-0}" != "1" ] && docker image inspect "$IMAGE" >/dev/null 2>&1; then
  echo "$IMAGE (cached)"
  exit 0
fi

if [ "${FORCE:-0}" = "1" ] || [ ! -s "$CACHE" ]; then
  command -v debootstrap >/dev/null 2>&1 || {
    echo "build-base-image: debootstrap not found; apt-get install -y debootstrap" >&2; exit 1; }
  ROOTFS="$(mktemp -d /var/tmp/openforge-rootfs.XXXXXX)"
  trap 'rm -rf "$ROOTFS"' EXIT
  debootstrap --variant=minbase --include="$PACKAGES" bookworm "$ROOTFS" "$MIRROR" >&2
  # python images call it `python`; keep that name working on the mapped base.
  ln -sf /usr/bin/python3 "$ROOTFS/usr/local/bin/python"
  rm -rf "$ROOTFS"/var/cache/apt/archives/*.deb "$ROOTFS"/var/lib/apt/lists/*
  mkdir -p "$(dirname "$CACHE")"
  tar -C "$ROOTFS" -cf "$CACHE.tmp" .
  mv "$CACHE.tmp" "$CACHE"
fi

docker import \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'ENV LANG=C.UTF-8' \
  --change 'CMD ["/bin/bash"]' \
  "$CACHE" "$IMAGE" >/dev/null
echo "$IMAGE"
