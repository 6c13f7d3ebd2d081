"""The veRL backend: GRPO with veRL 0.9 as the training engine, fed by OpenForge rollouts.

**Hook choice: a custom agent loop + a registered advantage estimator, not a trainer
subclass.** veRL 0.9's ``RayPPOTrainer.fit`` is one long method that changes between
releases; subclassing it (as Agent Lightning v1 does) means copying it. The agent-loop seam
(``verl.experimental.agent_loop``) is veRL's supported extension point for multi-turn
agents: veRL keeps everything it is good at — FSDP actor and reference, its vLLM replicas,
weight sync to the replicas between steps, checkpoints, the dataloader that picks task
groups (``rollout.n`` = G) — and asks our :class:`~.agent_loop.OpenForgeAgentLoop` for one
trajectory per (task, sample). The loop hands the task to OpenForge's scheduler (a callable,
see :mod:`.agent_loop`), the harness runs in its sandbox against the proxy, and the
recorded calls come back as one veRL row: prompt, response with ``response_mask`` 0 on
tool/observation tokens, engine logprobs and the verifier reward.

What this costs: veRL takes exactly one output per (task, sample), so a trajectory must be
one token sequence. Calls that extend each other (most harnesses resend history verbatim)
merge exactly (:mod:`training.trajectory.merge`). A trajectory whose calls do not extend
each other (OpenClaw rewrites its history) yields its last segment only and the loss of the
others is logged (``openforge/dropped_segments``). :mod:`.rows` builds the full
one-row-per-call batch (response mask, advantage broadcast per trajectory) for a trainer
that feeds rows directly, and the ``openforge_grpo`` estimator (:mod:`.advantage`) computes
trajectory-level GRPO over such rows as well as over one-row trajectories, leaving out
dropped (infra_error/timeout) rollouts, which the agent loop returns with an empty mask.

:mod:`.config` turns an OpenForge preset into veRL's hydra config (checked against veRL's
own generated ``ppo_trainer`` defaults so a renamed key fails loudly).
"""
