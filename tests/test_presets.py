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
    assert local.train.max_response_length <= 512 and local.train.group_size <= 4
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


def test_file_path_with_extra_sections_and_conflicting_group_sizes(tmp_path: Path) -> None:
    path = tmp_path / "mine.toml"
    path.write_text('[train]\nlr = 1e-4\ngroup_size = 2\n[synthesis]\nbackend = "procedural"\n')
    preset = load_preset(path)
    assert preset.name == "mine" and preset.train.lr == 1e-4 and preset.rollout.group_size == 2
    assert preset.section("synthesis") == {"backend": "procedural"} and preset.section("eval") == {}
    path.write_text("[train]\ngroup_size = 2\n[rollout]\ngroup_size = 4\n")
    with pytest.raises(PresetError, match="group_size"):
        load_preset(path)
