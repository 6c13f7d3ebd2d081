"""tools.json generation, SKILL.md generation and the Dockerfile template."""

from __future__ import annotations

import json

import pytest

from environments.claw.docker import base_dockerfile, dockerfile_for, harness_layers
from environments.claw.examples.build import EXAMPLES
from environments.claw.services import SERVICE_NAMES, UnknownServiceError, get_spec
from environments.claw.skills import skill_md, write_skills
from environments.claw.tools import main as tools_main
from environments.claw.tools import tools_document, tools_for, write_tools_json
from environments.taskdir import validate_task


def test_tools_json_is_valid_for_the_task_validator(tmp_path):
    task = tmp_path / "t"
    (task / "environment").mkdir(parents=True)
    (task / "tests").mkdir()
    (task / "task.toml").write_text('schema_version = "1.1"\n[task]\nname = "t"\n')
    (task / "instruction.md").write_text("do it\n")
    (task / "environment" / "Dockerfile").write_text("FROM x\n")
    (task / "tests" / "test.sh").write_text("#!/bin/sh\n")
    (task / "tests" / "test.sh").chmod(0o755)
    write_tools_json("all", task / "environment" / "tools.json")
    assert validate_task(task) == []
    doc = json.loads((task / "environment" / "tools.json").read_text())
    assert doc["base_url_env"] == "CLAW_URL" and doc["services"] == list(SERVICE_NAMES)
    assert len(doc["tools"]) == sum(len(get_spec(s).actions) for s in SERVICE_NAMES)


def test_schemas_are_valid_json_schema_and_strict():
    jsonschema = pytest.importorskip("jsonschema")
    tools = tools_for("all")
    assert len({t["name"] for t in tools}) == len(tools)
    for tool in tools:
        schema = tool["input_schema"]
        jsonschema.Draft202012Validator.check_schema(schema)
        assert schema["type"] == "object" and schema["additionalProperties"] is False
        assert tool["description"] and all(p.get("description") for p in schema["properties"].values())
        assert "anyOf" not in json.dumps(schema)
        assert "title" not in schema and all("title" not in p for p in schema["properties"].values())
        validator = jsonschema.Draft202012Validator(schema)
        assert list(validator.iter_errors({"definitely_not_an_arg": 1})), tool["name"]


def test_example_oracle_calls_match_the_schemas():
    jsonschema = pytest.importorskip("jsonschema")
    by_name = {t["name"]: t for t in tools_for("all")}
    for ex in EXAMPLES:
        for tool, args in ex.oracle:
            assert tool in by_name, tool
            assert tool.split("_", 1)[0] in ex.services
            jsonschema.validate(args, by_name[tool]["input_schema"])


def test_tools_subset_and_cli(tmp_path, capsys):
    doc = tools_document("kb,web")
    assert doc["services"] == ["kb", "web"]
    assert [t["name"] for t in doc["tools"]] == ["kb_search", "kb_get_article", "kb_create_article", "web_search", "web_fetch"]
    with pytest.raises(UnknownServiceError):
        tools_for("kb,slack")
    assert tools_main(["--services", "web"]) == 0
    assert json.loads(capsys.readouterr().out)["tools"][1]["name"] == "web_fetch"
    assert tools_main(["--services", "nope"]) == 2


def test_skill_md_documents_every_tool(tmp_path):
    for name in SERVICE_NAMES:
        text = skill_md(name)
        assert text.startswith(f"---\nname: claw-{name}\ndescription: ")
        for action in get_spec(name).actions:
            assert f"## {name}_{action}" in text
            assert f"\nclaw-call {name}_{action} '" in text  # the command on every harness's PATH
    paths = write_skills("gmail,kb", tmp_path)
    assert [p.relative_to(tmp_path).as_posix() for p in paths] == ["claw-gmail/SKILL.md", "claw-kb/SKILL.md"]


def test_dockerfile_template():
    text = dockerfile_for(["gmail", "kb"], ["codex", "claude-code", "oracle"])
    lines = text.splitlines()
    assert lines[1] == "FROM openforge/claw-base:bookworm"
    assert sum("node_modules" in line for line in lines) == 1  # shared layer de-duplicated
    assert "ENV CLAW_SERVICES=gmail,kb CLAW_FIXTURES=/opt/claw/fixtures CLAW_PORT=8790 CLAW_URL=http://127.0.0.1:8790" in lines
    assert lines[-1] == "WORKDIR /app" and "COPY fixtures/ /opt/claw/fixtures/" in lines
    plain = dockerfile_for("notes")
    assert "OPENFORGE_TOOLS_DIR" not in plain and "--from" not in plain
    with pytest.raises(ValueError, match="unknown harness 'vim'"):
        harness_layers(["vim"])
    assert harness_layers(["mini"]) == harness_layers(["mini-swe-agent"])
    base = base_dockerfile()
    assert base.splitlines()[2] == "FROM openforge/base:bookworm" and "COPY environments/" in base and "uvicorn" in base
    # the skill CLI on the default PATH: resolves in shells that strip PYTHONPATH (OpenClaw's exec)
    assert ("RUN chmod 0755 /opt/openforge/src/environments/claw/bin/claw-call && ln -sf "
            "/opt/openforge/src/environments/claw/bin/claw-call /usr/local/bin/claw-call") in base.splitlines()
