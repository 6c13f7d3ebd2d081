"""The domain registry the runner asks instead of importing domains: who hosts a task's
services, with which launcher, and which SKILL.md files come with them; and the one
launcher (``python -m environments.serve``) that dispatches through it."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

from environments.domain import SERVE_MODULE
from environments.domain_registry import (
    DOMAINS,
    UnknownServices,
    domain_for,
    skill_files,
)
from environments.service_group import ServiceGroup

ROOT = Path(__file__).resolve().parents[2]


def test_each_service_belongs_to_one_domain_whose_launcher_exists() -> None:
    names = [d.name for d in DOMAINS]
    assert len(set(names)) == len(names)
    seen: dict[str, str] = {}
    for domain in DOMAINS:
        for service in domain.service_names:
            assert service not in seen, f"{service} hosted by {seen[service]} and {domain.name}"
            seen[service] = domain.name
        assert callable(importlib.import_module(domain.serve_module).main)
        assert domain_for(list(domain.service_names)) is domain


def test_a_group_no_one_domain_hosts_is_refused_by_name() -> None:
    with pytest.raises(UnknownServices, match="nope"):
        domain_for(["gmail", "nope"])
    with pytest.raises(UnknownServices, match="none"):
        domain_for([])


def test_skill_files_come_from_the_domain_that_ships_them() -> None:
    skills = skill_files(["gmail", "shop", "nope"])
    assert list(skills) == ["claw-gmail"]  # sites ship none; an unknown service gets none
    assert "name: claw-gmail" in skills["claw-gmail"]
    assert skill_files([]) == {}


def test_the_service_group_spawns_the_one_launcher() -> None:
    group = ServiceGroup(["shop"], None, python="py", env={}, cwd=Path("."), log_path=Path("x.log"))
    assert group.argv()[:5] == ["py", "-m", SERVE_MODULE, "--services", "shop"]


def test_the_launcher_refuses_unknown_services_in_one_line() -> None:
    out = subprocess.run([sys.executable, "-m", SERVE_MODULE, "--services", "shop,gmail", "--port", "0"],
                         cwd=ROOT, capture_output=True, text=True, timeout=60, check=False)
    assert out.returncode == 2
    assert out.stderr.startswith("error: no domain hosts all of the services shop, gmail")
    assert len(out.stderr.strip().splitlines()) == 1
