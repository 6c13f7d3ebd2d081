"""Typed flow parameters: pydantic models, so the Prefect UI renders each as a form."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field


class SynthesizeParams(BaseModel):
    domain: Literal["claw", "computer-use", "browser-use"] = Field("claw", description="Target domain.")
    n: int = Field(16, ge=1, description="Verified tasks wanted.")
    purpose: Literal["rl", "sft"] = Field("rl", description="rl: full test/refine; sft: may skip them.")
    backend: Literal["procedural", "claude", "openai"] = Field("procedural", description="Agent runtime.")
    parallelism: int = Field(2, ge=1, description="Concurrent build/test/refine workers.")
    seed: int | None = Field(None, description="Procedural seed of a new run.")
    run_id: str | None = Field(None, description="Resume this synthesis run.")
    model: str | None = Field(None, description="Agent model (claude: opus by default).")
    base_url: str | None = Field(None, description="Endpoint of the openai backend.")
    families: list[str] | None = Field(None, description="Procedural families to draw from (default: the pool's).")
    k_rollouts: int = Field(0, ge=0, description="Test-model rollouts per task (difficulty estimate; 0: none).")
    test_harness: str = Field("mini", description="Harness of the test-model rollouts.")
    test_engine: str | None = Field(None, description="Engine of the test-model rollouts: an OpenAI-compatible URL "
                                    "or 'local' (default: the local engine).")
    sandbox: Literal["local", "docker", "kubernetes"] = Field("local", description="Sandbox backend of the "
                                                              "test-model rollouts.")
    max_refine: int = Field(2, ge=0, description="Refine iterations per task before it is rejected.")
    tau: float | None = Field(None, gt=0, le=1, description="Dedup cosine threshold (default: the embedding model's).")
    pool: str | None = Field(None, description="User pool of seeds: a JSONL file or folder (default: the domain's "
                             "packaged pool).")
    judge: Literal["heuristic", "llm"] = Field("heuristic", description="Prune stage quality judge.")
    fresh: bool = Field(False, description="Run again instead of reusing the report cached by an earlier run with "
                        "the same seed and parameters (the new report replaces it).")


class DistillParams(BaseModel):
    preset: str = Field("local", description="Preset name (openforge/configs/) or path.")
    teacher: str = Field("oracle", description="'oracle', 'local' or an OpenAI-compatible URL.")
    n_per_task: int = Field(3, ge=1, description="Teacher rollouts per task.")
    domain: str | None = Field("claw", description="Tasks of this domain from the bank.")
    purpose: Literal["rl", "sft"] | None = Field("sft", description="Tasks of this purpose.")
    max_tasks: int | None = Field(None, ge=1, description="Use at most this many tasks.")
    overrides: dict[str, Any] = Field(default_factory=dict, description="Dotted preset overrides.")
    fresh: bool = Field(False, description="Run again instead of reusing the result cached in the data dir by an "
                        "earlier run with the same inputs (the new result replaces it).")


class SFTParams(BaseModel):
    preset: str = Field("local", description="Preset name or path.")
    data: str = Field(..., description="Parquet of SFT examples (from distill).")
    model_path: str | None = Field(None, description="Start checkpoint (default: the default policy).")
    overrides: dict[str, Any] = Field(default_factory=dict, description="Dotted preset overrides.")
    fresh: bool = Field(False, description="Run again instead of reusing the result cached in the data dir by an "
                        "earlier run with the same inputs (the new result replaces it).")


class RLParams(BaseModel):
    preset: str = Field("claw", description="Preset name or path (paper Table A1 for claw/computer-use/browser-use).")
    model_path: str | None = Field(None, description="Start checkpoint (usually the SFT one).")
    steps: int | None = Field(None, ge=1, description="GRPO steps (default: the preset's).")
    domain: str | None = Field(None, description="Train on tasks of this domain (default: the preset's).")
    purpose: Literal["rl", "sft"] | None = Field("rl", description="Tasks of this purpose.")
    max_tasks: int | None = Field(None, ge=1, description="Use at most this many tasks.")
    overrides: dict[str, Any] = Field(default_factory=dict, description="Dotted preset overrides, e.g. {'train.lr': 1e-6}.")
    fresh: bool = Field(False, description="Run again instead of reusing the result cached in the data dir by an "
                        "earlier run with the same inputs (the new result replaces it).")


class EvaluateParams(BaseModel):
    preset: str = Field("local", description="Preset name or path.")
    model_paths: list[str | None] = Field(default_factory=lambda: [None], description="Checkpoints (None: default model).")
    labels: list[str] | None = Field(None, description="Names of the checkpoints in tables.")
    harnesses: list[str] = Field(default_factory=lambda: ["react"], description="Harnesses to evaluate with.")
    k: int = Field(1, ge=1, description="pass@k / pass^k up to k.")
    domain: str | None = Field("claw", description="Tasks of this domain.")
    purpose: Literal["rl", "sft"] | None = Field("rl", description="Tasks of this purpose.")
    max_tasks: int | None = Field(None, ge=1, description="Use at most this many tasks.")
    overrides: dict[str, Any] = Field(default_factory=dict, description="Dotted preset overrides.")
    fresh: bool = Field(False, description="Run again instead of reusing the result cached in the data dir by an "
                        "earlier run with the same inputs (the new result replaces it).")


class PipelineParams(BaseModel):
    preset: str = Field("local", description="Preset for every stage.")
    family: str | None = Field("contact-lookup", description="Procedural claw family of every task (None: all).")
    n_rl_tasks: int = Field(24, ge=1, description="RL training tasks to synthesize.")
    n_sft_tasks: int = Field(8, ge=1, description="SFT tasks to synthesize (one teacher success each).")
    teacher: str = Field("oracle", description="Distillation teacher.")
    rl_steps: int | None = Field(None, ge=0, description="GRPO steps (None: the preset's train.steps; 0: skip).")
    eval_tasks: int = Field(32, ge=1, description="Held-out tasks evaluated before/after (32 x 2 rollouts: n = 64, "
                            "standard error ~0.035-0.045 on contact-lookup).")
    eval_samples: int = Field(2, ge=1, description="Rollouts per held-out task and checkpoint: 2, not 3, to fit the "
                              "main job in 15 min on slow 2-core boxes; the main-job RL gains measured so far "
                              "(+0.17 to +0.28) stay over 2 SE (~0.11) at n = 64 (docs/training-loop.md, session 20).")
    base_eval_samples: int = Field(1, ge=1, description="Rollouts per held-out task for the base policy (n = "
                                   "eval_tasks x this): it scores ~0.04 on contact-lookup, standard error ~0.01 "
                                   "at n = 32, far below its gap to SFT; the SFT and SFT+RL evaluations, whose "
                                   "difference is the RL gain, take eval_samples.")
    seed: int = Field(7, description="Procedural synthesis seed.")
    synth_parallelism: int = Field(4, ge=1, description="Concurrent build/test workers of both synthesis runs: "
                                   "each test is a sandboxed oracle rollout, CPU-bound; 56 tasks took 44 s with 2, "
                                   "31 s with 4, 35 s with 6 on 2 cores.")
    overrides: dict[str, Any] = Field(default_factory=dict, description="Dotted preset overrides.")
    fresh: bool = Field(False, description="Run every stage again instead of reusing results cached by an "
                        "earlier run with the same inputs (the new results replace them).")


class InitParams(BaseModel):
    limits: bool = Field(True, description="Create the paid-API concurrency and rate limits on the Prefect API "
                         "this run reports to.")


class TasksImportParams(BaseModel):
    paths: list[str] = Field(..., min_length=1, description="Harbor / Terminal-Bench task dirs, dataset folders "
                             "(or a Harbor download cache), or registry.json listings, on the machine that runs "
                             "the flow.")
    purpose: Literal["rl", "sft"] | None = Field(None, description="Set metadata.openforge.purpose of every "
                                                 "imported task (default: the task's own, else rl).")


class TasksVerifyParams(BaseModel):
    task_ids: list[str] | None = Field(None, description="Task ids (default: every imported task).")
    backend: Literal["local", "docker", "kubernetes"] = Field("local", description="Sandbox backend of the oracle "
                                                              "and no-op rollouts.")


class TasksExportParams(BaseModel):
    dest: str = Field(..., description="Folder to write the tasks to (one Harbor task dir per task).")
    task_ids: list[str] | None = Field(None, description="Task ids (default: every task with `status`).")
    status: str = Field("verified", description="Export every task with this status (when no ids are given).")


class RolloutParams(BaseModel):
    task_dir: str = Field(..., description="Task directory (Harbor layout).")
    harness: str = Field(..., description="oracle, noop, react, codex, claude-code, ...")
    backend: Literal["local", "docker", "kubernetes"] = Field("local", description="Sandbox backend.")
    engine: str | None = Field(None, description="Policy engine: an OpenAI-compatible URL or 'local'; a proxy is "
                               "started in front of it (None: harnesses without a model only).")
    timeout: float | None = Field(None, gt=0, description="Wall-clock seconds for the whole rollout (default: the "
                                  "task's budgets).")
    model: str = Field("policy", description="Model name the harness asks for.")
    harness_options: dict[str, Any] | None = Field(None, description="Adapter options.")
    preset: str = Field("local", description="Preset whose [rollout] caps bound generation.")
    max_tokens: int | None = Field(None, ge=1, description="Tokens per model call (default: the preset's "
                                   "rollout.max_tokens).")
    max_total_tokens: int | None = Field(None, ge=1, description="Generated tokens per rollout (default: the "
                                         "preset's rollout.max_total_tokens).")


class ExportAtifParams(BaseModel):
    rollout_ids: list[str] = Field(..., min_length=1, description="Recorded rollouts to export.")
    out: str = Field("atif", description="Folder for the <id>.trajectory.json files.")


class ModelPrepareParams(BaseModel):
    models_dir: str | None = Field(None, description="Where the converted model goes (default: "
                                   "OPENFORGE_HOME/models).")
    verify: Literal["none", "size", "sha256"] = Field("size", description="Check of an existing copy.")
