#!/bin/sh
# ENTRYPOINT of the real openforge/claw-base image (environments/claw/docker.py): outside
# OpenForge's sandboxes (`harbor run`, a plain `docker run`) nothing else starts a claw task's
# services, so this starts them (CLAW_SERVICES, CLAW_FIXTURES, CLAW_PORT from the task's
# Dockerfile) in the background, waits until they listen, then runs the container's command.
# Inside our sandboxes (OPENFORGE_SANDBOX_ID set) the runner starts them itself, so it only
# runs the command.
if [ -n "${CLAW_SERVICES:-}" ] && [ -z "${OPENFORGE_SANDBOX_ID:-}" ]; then
  ready="${CLAW_READY_FILE:-/tmp/claw-services.ready}"
  log="${CLAW_LOG_FILE:-/tmp/claw-services.log}"
  rm -f "$ready"
  python3 -m environments.claw.serve --ready-file "$ready" >"$log" 2>&1 &
  i=0
  while [ ! -s "$ready" ] && [ "$i" -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
  if [ ! -s "$ready" ]; then
    echo "claw-base entrypoint: services $CLAW_SERVICES did not start within 60 s; $log:" >&2
    cat "$log" >&2
  fi
fi
[ "$#" -gt 0 ] || set -- /bin/bash
exec "$@"
