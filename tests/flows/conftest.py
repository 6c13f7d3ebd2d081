"""Flow-test fixtures: one Prefect test harness per session (PREFECT_HOME in a temp dir)."""

from __future__ import annotations

import os
import tempfile

import pytest


@pytest.fixture(scope="session")
def prefect_harness():
    home = tempfile.mkdtemp(prefix="openforge-prefect-")
    os.environ["PREFECT_HOME"] = home
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=180):
        yield


@pytest.fixture
def tiny_policy(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch):
    """A tiny random Llama + ChatML tokenizer as the policy (OPENFORGE_MODEL), long context."""
    from testkit.models import build_tiny_model, build_tiny_tokenizer

    folder = tmp_path_factory.mktemp("tiny-policy")
    tokenizer = build_tiny_tokenizer()
    build_tiny_model(len(tokenizer), max_len=16384).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    monkeypatch.setenv("OPENFORGE_MODEL", str(folder))
    return folder
