"""Task synthesis (DESIGN §8): propose → prune → build → test → refine over the task DB.

- ``pipeline.synthesize`` runs or resumes a run; ``stages/`` holds the five stages;
- ``runtime/`` the agent backends (``claude`` via the Claude Agent SDK, ``openai`` via our
  tool-calling loop) behind one protocol; ``procedural/`` the offline generators;
- ``pools/`` reference pools, ``dedup`` greedy embedding dedup, ``quality`` the heuristic
  judge, ``checker`` the one seam to rollouts (``TaskChecker``), ``store`` the DB helpers.
Synthesis never imports ``training/``: the flows layer injects rollouts through the checker.
"""
