"""Tiny randomly initialised Llama models (no downloads) for trainer tests."""

from __future__ import annotations

import pytest
import torch

from testkit.models import tiny_llama as make_tiny_llama


@pytest.fixture
def tiny_llama():  # noqa: ANN201
    return make_tiny_llama()


@pytest.fixture(autouse=True)
def _few_threads():  # noqa: ANN202
    """Stay polite on shared 2-core machines."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
