"""Testkit room: what the tests and the benchmarks share, shipped so that ``bench/`` never
imports ``tests/``.

- ``testkit.fakes``: **fakes** of boundaries we cannot reach here, faithful at the protocol
  level (a Kubernetes API server with a simulated kubelet, a vLLM OpenAI-compatible server);
- ``testkit.redteam``: the sandbox attack suite (attacks, the canaries, the judge);
- ``testkit.tasks``: tiny hand-made task dirs the real runner scores;
- ``testkit.models``: a tiny random Llama and BPE tokenizer (fast, no download), and groups of
  rollouts sampled from a model as the local engine samples;
- ``testkit.calls``: hand-built recorded calls and rollout rows, and a word-level tokenizer.

Sits above ``training`` and ``environments`` (it drives them); no product room imports it.
"""
