"""Engine-test fixtures: a tiny random Llama with a tiny BPE tokenizer (fast, built per
session in a temp dir), and the real converted SmolLM2 shared through a fixed cache dir
(``OPENFORGE_MODEL_CACHE``, default ``~/.cache/openforge/models``) so that the 538 MB
conversion happens once per machine, not once per test."""

from __future__ import annotations

from pathlib import Path

import pytest

from testkit.models import build_tiny_model, build_tiny_tokenizer


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An HF folder holding the tiny random model and its tokenizer."""
    folder = tmp_path_factory.mktemp("tiny-llama")
    tokenizer = build_tiny_tokenizer()
    model = build_tiny_model(len(tokenizer))
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(scope="session")
def smollm_dir() -> Path:
    """The real default model, converted once per machine into the shared cache."""
    pytest.importorskip("gguf")
    from training.engines.model_store import (
        ModelStoreError,
        default_model_path,
        shared_cache_dir,
    )

    try:
        return default_model_path(shared_cache_dir())
    except ModelStoreError as exc:
        pytest.skip(f"default model unavailable: {exc}")
