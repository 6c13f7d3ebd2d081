"""Verifiers shared by task families: ``reward_files`` (the reward.json / reward.txt /
checks.json contract every verifier writes and the runner reads) and ``llm_judge`` (an LLM
grades open-ended results through any OpenAI-compatible endpoint). Programmatic verifiers
live in each task's tests/test.sh."""
