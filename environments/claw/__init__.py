"""Claw environment family: mock tool services (gmail, calendar, contacts, helpdesk, crm,
kb, web, files, notes), their tool schemas, SKILL.md files, a Dockerfile template and
example tasks. See README.md in this folder for the contract other rooms build on.

Kept import-light: ``python -m environments.claw.call`` must start fast.
"""
