#!/usr/bin/env bash
# Oracle of claw task claw-gmail-invoice-reply: performs the task through the claw tool-call CLI.
set -euo pipefail
claw() { python3 -m environments.claw.call "$@"; }
claw gmail_search '{"query": "INV-2041"}'
claw gmail_read '{"id": "m-102"}'
claw gmail_reply '{"id": "m-101", "body": "Hi Dana,\n\nInvoice INV-2041 totals USD 4,350.00 and payment is due on 2026-03-15 (March 15, 2026).\n\nBest regards,\nAlex"}'
claw gmail_label '{"id": "m-101", "add": ["Billing"]}'
