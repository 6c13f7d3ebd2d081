"""Named presets: loading, validation, overrides, extra sections."""

from __future__ import annotations

from pathlib import Path

import pytest

from openforge.presets import PresetError, list_presets, load_preset


def test_all_named_presets_load_and_validate() -> None:
    assert {"local", "claw", "computer-use", "browser-use"} <= set(list_presets())
    for name in ("local", "claw", "computer-use", "browser-use"):
        preset = load_preset(name)
        assert preset.name == name
        assert preset.rollout.group_size == preset.train.group_size
        assert preset.train.algorithm == "grpo"
        assert preset.train.clip_eps_high >= preset.train.clip_eps_low


def test_local_preset_is_cpu_sized() -> None:
    local, claw = load_preset("local"), load_preset("claw")
    assert local.engine.kind == "local" and local.engine.device == "cpu"
    assert local.rollout.max_tokens <= 64 and local.train.train_batch_size * local.train.group_size <= 16
    assert claw.engine.kind == "vllm" and claw.train.max_prompt_length > local.train.max_prompt_length


def test_overrides_dotted_and_nested() -> None:
    preset = load_preset("local", {"train.lr": 3e-5, "engine": {"max_batch": 2}, "train.group_size": 2})
    assert preset.train.lr == 3e-5 and preset.engine.max_batch == 2
    assert preset.engine.kind == "local"  # nested override merges, does not replace the section
    assert preset.rollout.group_size == 2


def test_unknown_key_in_a_known_section_names_file_and_field() -> None:
    with pytest.raises(PresetError, match=r"local\.toml: train\.learning_rate"):
        load_preset("local", {"train.learning_rate": 1.0})
    with pytest.raises(PresetError, match="train.loss_norm"):
        load_preset("local", {"train.loss_norm": "per_call"})


def test_unknown_preset_and_bad_toml(tmp_path: Path) -> None:
    with pytest.raises(PresetError, match="unknown preset 'nope'"):
        load_preset("nope")
    bad = tmp_path / "bad.toml"
    bad.write_text("[train\nlr = 1")
    with pytest.raises(PresetError, match="invalid TOML"):
        load_preset(bad)


def test_unknown_sections_and_keys_fail_with_the_file_and_key_named(tmp_path: Path) -> None:
    path = tmp_path / "mine.toml"
    path.write_text('[train]\nlr = 1e-4\ngroup_size = 2\n[tasks]\ndomain = "browser-use"\n[harness_options]\nmax_steps = 4\n')
    preset = load_preset(path)
    assert preset.name == "mine" and preset.train.lr == 1e-4 and preset.rollout.group_size == 2
    assert preset.tasks.domain == "browser-use" and preset.harness_options == {"max_steps": 4}
    path.write_text('[train]\nlr = 1e-4\n[synthesis]\nbackend = "procedural"\n')
    with pytest.raises(PresetError, match=r"mine\.toml: synthesis: unknown key"):
        load_preset(path)
    for key in ("grad_accum_steps", "entropy", "adv_epsilon"):
        with pytest.raises(PresetError, match=rf"local\.toml: train\.{key}: unknown key"):
            load_preset("local", {f"train.{key}": 1})
    with pytest.raises(PresetError, match="gpu_memory_utilization: not read by engine.kind = 'local'"):
        load_preset("local", {"engine.gpu_memory_utilization": 0.5})
    path.write_text("[train]\ngroup_size = 2\n[rollout]\ngroup_size = 4\n")
    with pytest.raises(PresetError, match="group_size"):
        load_preset(path)


def test_paper_presets_carry_table_a1() -> None:
    expected = {  # lr, task groups, G, KL, entropy, s per step, steps, pod CPUs, pod MiB
        "claw": (1e-6, 8, 8, 0.001, 0.0, 900, 100, 2, 2048),
        "computer-use": (5e-7, 8, 8, 0.01, 0.0, 600, 80, 4, 4096),
        "browser-use": (1e-6, 12, 5, 0.0, 0.001, 900, 100, 2, 6144),
    }
    for name, row in expected.items():
        p = load_preset(name)
        got = (p.train.lr, p.train.train_batch_size, p.train.group_size, p.train.kl_coef, p.train.entropy_coef,
               p.rollout.timeout_sec, p.train.steps, p.rollout.cpus, p.rollout.memory_mb)
        assert got == row, name
        assert "Table A1" in (p.source or "") and "not found" not in (p.source or "")


def test_local_engine_threads_and_context_are_local_engine_keys() -> None:
    local = load_preset("local")
    assert local.engine.context_length == 8192  # the react main job: the model's own window
    assert load_preset("local", {"engine.threads": 1}).engine.threads == 1
    with pytest.raises(PresetError, match=r"threads: read by engine.kind = 'local' only"):
        load_preset("local", {"engine.kind": "url", "engine.url": "http://x:1/v1", "engine.threads": 2})
    with pytest.raises(PresetError, match=r"engine\.threads"):
        load_preset("local", {"engine.threads": 0})
