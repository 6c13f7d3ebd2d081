"""Environments room: the task-directory format, domain families (claw mock services,
GUI bases), harness adapters and the in-sandbox rollout runner. Never imports ``training``."""
