#!/usr/bin/env bash
# Oracle of claw task claw-web-release-todo: performs the task through the claw tool-call CLI.
set -euo pipefail
claw() { python3 -m environments.claw.call "$@"; }
claw web_search '{"query": "Acme DB 4.2 release general availability"}'
claw web_fetch '{"url": "https://acmedb.example.test/releases/4.2.0"}'
claw notes_add_todo '{"title": "Upgrade staging to Acme DB 4.2", "due": "2026-02-24"}'
printf "2026-02-10\n" > "${WORKSPACE:-/app}/answer.txt"
