"""Fixtures shared by the training tests that run the real loop on a tiny policy."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import torch


@pytest.fixture
def one_torch_thread() -> Iterator[None]:
    """torch on one thread for the test (polite on shared 2-core machines)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture
def tiny_policy_dir(tmp_path: Path) -> Path:
    """A tiny random Llama and its tokenizer saved as an HF model folder."""
    from testkit.models import build_tiny_model, build_tiny_tokenizer

    folder = tmp_path / "tiny-policy"
    tokenizer = build_tiny_tokenizer()
    build_tiny_model(len(tokenizer)).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder
