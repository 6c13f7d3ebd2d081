"""The default model store: one conversion, manifest checks, model resolution."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from training.engines.local.chat_template import CHATML_TOOLS_TEMPLATE
from training.engines.model_store import (
    DEFAULT_MODEL_NAME,
    MANIFEST_NAME,
    ModelStoreError,
    default_model_path,
    find_default_gguf,
    prepare_default_model_in_background,
    resolve_model,
    verify_model_dir,
    write_manifest,
)

REPO = Path(__file__).resolve().parents[3]


def test_default_model_is_a_plain_trainable_hf_folder(smollm_dir: Path) -> None:
    assert smollm_dir.name == DEFAULT_MODEL_NAME
    manifest = json.loads((smollm_dir / MANIFEST_NAME).read_text())
    assert manifest["source"]["file"] == find_default_gguf().name
    assert {"model.safetensors", "config.json", "tokenizer.json"} <= set(manifest["files"])
    assert verify_model_dir(smollm_dir, "sha256")
    config = json.loads((smollm_dir / "config.json").read_text())
    assert "quantization_config" not in config and config["model_type"] == "llama"
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(smollm_dir))
    assert tokenizer.chat_template == CHATML_TOOLS_TEMPLATE
    assert tokenizer.eos_token == "<|im_end|>"
    assert json.loads((smollm_dir / "generation_config.json").read_text())["eos_token_id"] == tokenizer.eos_token_id


def test_second_call_reuses_the_converted_folder(smollm_dir: Path) -> None:
    stamp = (smollm_dir / "model.safetensors").stat().st_mtime_ns
    started = time.monotonic()
    assert default_model_path(smollm_dir.parent) == smollm_dir
    assert time.monotonic() - started < 2.0
    assert (smollm_dir / "model.safetensors").stat().st_mtime_ns == stamp


def test_manifest_catches_missing_resized_and_altered_files(tiny_model_dir: Path, tmp_path: Path) -> None:
    folder = tmp_path / "m"
    shutil.copytree(tiny_model_dir, folder)
    assert not verify_model_dir(folder)  # no manifest yet
    write_manifest(folder, {"test": True}, name="m")
    assert verify_model_dir(folder, "sha256")
    config = folder / "config.json"
    original = config.read_bytes()
    config.write_bytes(original.replace(b"{", b"[", 1))  # same size, other bytes
    assert verify_model_dir(folder, "size") and not verify_model_dir(folder, "sha256")
    config.write_bytes(original + b" ")
    assert not verify_model_dir(folder, "size")
    config.unlink()
    assert verify_model_dir(folder, "none")  # "none" trusts the manifest alone
    assert not verify_model_dir(folder, "size")
    (folder / MANIFEST_NAME).write_text("{broken")
    assert not verify_model_dir(folder, "none")


def test_resolve_model_prefers_argument_then_env_then_default(
    tiny_model_dir: Path, smollm_dir: Path, openforge_home: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    assert resolve_model(tiny_model_dir) == str(tiny_model_dir.resolve())
    monkeypatch.setenv("OPENFORGE_MODEL", str(tiny_model_dir))
    assert resolve_model() == str(tiny_model_dir.resolve())
    monkeypatch.setenv("OPENFORGE_MODEL", "HuggingFaceTB/SmolLM2-360M-Instruct")
    assert resolve_model() == "HuggingFaceTB/SmolLM2-360M-Instruct"  # a hub id passes through
    with pytest.raises(ModelStoreError, match="no config.json"):
        resolve_model(tmp_path)
    monkeypatch.delenv("OPENFORGE_MODEL")
    # the default lives under OPENFORGE_HOME/models; link the shared copy there (no reconversion)
    (openforge_home / "models").mkdir(parents=True)
    os.symlink(smollm_dir, openforge_home / "models" / DEFAULT_MODEL_NAME)
    assert resolve_model() == str(openforge_home.resolve() / "models" / DEFAULT_MODEL_NAME)


@pytest.mark.slow
def test_concurrent_first_use_converts_once(tmp_path: Path) -> None:
    """Two processes ask for the default model in an empty models dir at the same time."""
    code = (
        "import logging, sys; logging.basicConfig(level=logging.WARNING, stream=sys.stderr)\n"
        "from pathlib import Path\nfrom training.engines.model_store import default_model_path\n"
        f"print(default_model_path(Path({str(tmp_path)!r})))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    procs = [subprocess.Popen([sys.executable, "-c", code], cwd=REPO, env=env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(2)]
    outs = [p.communicate(timeout=900) for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    assert {out.strip() for out, _ in outs} == {str(tmp_path.resolve() / DEFAULT_MODEL_NAME)}
    assert sum("converting the default model" in err for _, err in outs) == 1
    assert verify_model_dir(tmp_path / DEFAULT_MODEL_NAME, "sha256")
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(f".{DEFAULT_MODEL_NAME}.tmp")] == []


def test_background_preparation_starts_only_when_the_default_model_is_missing(
    smollm_dir: Path, tiny_model_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENFORGE_MODEL", raising=False)
    assert prepare_default_model_in_background(None, smollm_dir.parent) is None  # converted already
    assert prepare_default_model_in_background(str(tiny_model_dir), smollm_dir.parent) is None  # another model
    monkeypatch.setenv("OPENFORGE_MODEL", str(tiny_model_dir))
    assert prepare_default_model_in_background(None, smollm_dir.parent) is None


@pytest.mark.slow
def test_background_preparation_and_a_stage_that_loads_the_model_meanwhile_share_one_conversion(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pipeline starts the conversion before Prefect; its first stage may ask for the model
    while it runs: it waits on the lock and gets the finished folder."""
    monkeypatch.delenv("OPENFORGE_MODEL", raising=False)
    background = prepare_default_model_in_background(None, tmp_path)
    assert background is not None
    time.sleep(2)  # the stage asks while the background conversion runs (whichever holds the lock converts)
    code = ("from pathlib import Path\nfrom training.engines.model_store import default_model_path\n"
            f"print(default_model_path(Path({str(tmp_path)!r})))\n")
    stage = subprocess.run([sys.executable, "-c", code], cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)},
                           text=True, capture_output=True, timeout=900, check=False)
    assert background.wait(timeout=900) == 0
    assert stage.returncode == 0, stage.stderr
    assert stage.stdout.strip() == str(tmp_path.resolve() / DEFAULT_MODEL_NAME)
    assert verify_model_dir(tmp_path / DEFAULT_MODEL_NAME, "sha256")
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(f".{DEFAULT_MODEL_NAME}.tmp")] == []
    assert prepare_default_model_in_background(None, tmp_path) is None  # nothing left to do


def test_cli_model_prepare_prints_the_folder(smollm_dir: Path) -> None:
    from typer.testing import CliRunner

    from cli.app import app

    result = CliRunner().invoke(app, ["model", "prepare", "--models-dir", str(smollm_dir.parent), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout.strip().splitlines()[-1]) == {"path": str(smollm_dir)}
    bad = CliRunner().invoke(app, ["model", "prepare", "--verify", "bogus"])
    assert bad.exit_code != 0
