#!/usr/bin/env bash
# Oracle of claw task claw-ticket-meeting-crm: performs the task through the claw tool-call CLI.
set -euo pipefail
claw() { python3 -m environments.claw.call "$@"; }
claw helpdesk_get_ticket '{"id": "T-1042"}'
claw contacts_search '{"query": "priya.raman@quillworks.test"}'
claw calendar_find_free_slots '{"date": "2026-03-04", "duration_minutes": 30}'
claw calendar_create_event '{"title": "T-1042 follow-up", "start": "2026-03-04T10:30:00Z", "end": "2026-03-04T11:00:00Z", "attendees": ["priya.raman@quillworks.test"], "description": "Follow-up on helpdesk ticket T-1042 (billing sync failures)."}'
claw crm_search_accounts '{"query": "Quillworks"}'
claw crm_log_activity '{"account_id": "ACC-7", "type": "meeting", "subject": "T-1042 follow-up meeting", "body": "30-minute call on 2026-03-04 10:30 UTC about billing sync failures.", "contact_email": "priya.raman@quillworks.test", "date": "2026-03-04T10:30:00Z"}'
