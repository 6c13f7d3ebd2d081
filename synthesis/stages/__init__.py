"""The five synthesis stages as plain functions over the task DB (DESIGN §8):
propose → prune → build → test → refine. Each is idempotent and safe with many workers."""
