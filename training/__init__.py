"""Training room: proxy, orchestrator (sandbox backends + scheduler), policy engines,
trajectory reconstruction, and trainers (local, veRL). Never imports ``synthesis``."""
