"""Verifiers shared by task families: ``llm_judge`` (an LLM grades open-ended results through
any OpenAI-compatible endpoint). Programmatic verifiers live in each task's tests/test.sh."""
