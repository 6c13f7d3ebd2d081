"""Evaluation: pass@k / pass^k per harness, and behaviour analysis of recorded trajectories."""
