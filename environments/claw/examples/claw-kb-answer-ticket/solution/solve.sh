#!/usr/bin/env bash
# Oracle of claw task claw-kb-answer-ticket: performs the task through the claw tool-call CLI.
set -euo pipefail
claw() { python3 -m environments.claw.call "$@"; }
claw helpdesk_get_ticket '{"id": "T-2207"}'
claw kb_search '{"query": "password reset link expired valid"}'
claw kb_get_article '{"id": "KB-118"}'
claw helpdesk_comment '{"id": "T-2207", "public": true, "body": "Hi Marco, password reset links are valid for 2 hours after they are sent, so yesterday'"'"'s link has expired. To get a new one, open the sign-in page, click '"'"'Forgot password'"'"' and enter your email again (see KB-118)."}'
claw helpdesk_update_ticket '{"id": "T-2207", "status": "pending"}'
