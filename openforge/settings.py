"""Typed settings: one ``OPENFORGE_*`` environment variable per field.

Everything that depends on where data lives (the task DB, task directories, models,
rollout logs) asks :func:`get_settings` rather than reading the environment itself.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    """Process-wide settings; each field is read from ``OPENFORGE_<FIELD>``."""

    model_config = SettingsConfigDict(env_prefix="OPENFORGE_", extra="ignore")

    home: Path = Field(default=Path(".openforge"), description="Data dir: DB, tasks, models, logs.")
    db: str | None = Field(default=None, description="SQLAlchemy URL; default SQLite under home.")
    admin_key: str | None = Field(default=None, description="Proxy admin bearer key.")
    log_level: str = Field(default="WARNING", description="Library log level (quiet by default).")
    log_json: bool = Field(default=False, description="Emit logs as JSON lines.")
    vllm_python: Path | None = Field(default=None, description="Interpreter with vllm (default: .venv-vllm, else this one).")
    proxy_host: str = Field(default="127.0.0.1", description="Bind address of a run's in-process proxy ('0.0.0.0' "
                            "where sandboxes run on other machines: Kubernetes pods).")
    proxy_advertise_host: str | None = Field(default=None, description="Address sandboxes reach a run's proxy at "
                                             "(default: the bind address; with 0.0.0.0, this host's own IP).")
    proxy_ports: str | None = Field(default=None, description="Port range 'LOW-HIGH' a run's proxy binds the first "
                                    "free port of (static NetworkPolicies name it); default any free port.")

    @property
    def home_dir(self) -> Path:
        return self.home.expanduser().resolve()

    @property
    def db_url(self) -> str:
        if self.db:
            return self.db
        return f"sqlite:///{self.home_dir / 'openforge.db'}"

    @property
    def tasks_dir(self) -> Path:
        return self.home_dir / "tasks"

    @property
    def models_dir(self) -> Path:
        return self.home_dir / "models"

    @property
    def rollouts_dir(self) -> Path:
        return self.home_dir / "rollouts"

    @property
    def runs_dir(self) -> Path:
        return self.home_dir / "runs"


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The settings of this process (cached; call ``get_settings.cache_clear()`` in tests)."""
    return Settings()
