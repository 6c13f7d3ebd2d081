"""Dockerfile reading for the local backend: what is honoured, what is named as not."""

from __future__ import annotations

from pathlib import Path

from training.orchestrator.dockerfile import expand, parse_dockerfile
from training.orchestrator.images import (
    resolve_from,
    rewrite_froms,
    unbuilt_local_image,
)


def test_parse_workdir_env_copy_and_unhonoured(tmp_path: Path) -> None:
    df = tmp_path / "Dockerfile"
    df.write_text(
        "# comment\n"
        "FROM python:3.11-slim\n"
        "ARG APP=/srv\n"
        "ENV A=1 B=\"two words\"\n"
        "ENV PATH=/opt/bin:$PATH\n"
        "WORKDIR ${APP}\n"
        "WORKDIR app\n"
        "COPY data.txt /opt/data/\n"
        "COPY [\"cfg.json\", \"conf/cfg.json\"]\n"
        "COPY --from=builder /x /y\n"
        "RUN apt-get update && \\\n    apt-get install -y jq\n"
        "USER nobody\n"
        "CMD [\"bash\"]\n",
        encoding="utf-8",
    )
    info = parse_dockerfile(df)
    assert info.from_image == "python:3.11-slim"
    assert info.workdir == "/srv/app" and info.workdir_set
    assert info.env["A"] == "1" and info.env["B"] == "two words"
    assert info.env["PATH"] == "/opt/bin:"  # $PATH unknown at parse time expands empty
    assert [(c.sources, c.dest) for c in info.copies] == [(["data.txt"], "/opt/data/"), (["cfg.json"], "/srv/app/conf/cfg.json")]
    joined = "\n".join(info.unhonoured)
    assert "COPY --from=builder" in joined
    assert "RUN apt-get update" in joined and "apt-get install -y jq" in joined
    assert "USER nobody" in joined
    assert "CMD" not in joined


def test_expand_defaults() -> None:
    assert expand("${X:-dflt}/$Y", {"Y": "y"}) == "dflt/y"


def test_from_aliases_map_unpullable_images() -> None:
    local = {"openforge/base:bookworm", "mytool:1"}
    aliases = {"debian*": "{base}", "python:*slim*": "{base}"}
    res = lambda ref: resolve_from(ref, exists=local.__contains__, aliases=aliases, base="openforge/base:bookworm")
    assert res("debian:bookworm-slim") == "openforge/base:bookworm"
    assert res("docker.io/library/python:3.12-slim") == "openforge/base:bookworm"
    assert res("mytool:1") == "mytool:1"
    assert res("alpine:3") == "alpine:3"  # no alias: left for the build to fail loudly
    text, mapping = rewrite_froms("FROM debian:12 AS build\nRUN x\nFROM build\n", res)
    assert text.splitlines()[0] == "FROM openforge/base:bookworm AS build"
    assert text.splitlines()[2] == "FROM build"
    assert mapping == {"debian:12": "openforge/base:bookworm"}


def test_copy_from_a_missing_harness_image_is_dropped_when_mounted_at_run_time() -> None:
    text = (
        "FROM openforge/claw-base:bookworm\n"
        "COPY --from=openforge/harnesses:bookworm /opt/openforge-tools/node_modules /opt/openforge-tools/node_modules\n"
        "COPY --from=other:1 /usr/bin/x /usr/bin/x\n"
    )
    mounted = ("/opt/openforge-tools",)
    out, _ = rewrite_froms(
        text, lambda ref: "openforge/base:bookworm",
        provided=lambda image, src: any(src.startswith(m) for m in mounted),
    )
    lines = out.splitlines()
    assert lines[0] == "FROM openforge/base:bookworm"
    assert lines[1].startswith("# provided by a runtime mount: COPY --from=openforge/harnesses")
    assert lines[2] == "COPY --from=other:1 /usr/bin/x /usr/bin/x"  # not ours: left for the build to judge


def test_absent_gui_base_image_names_the_script_that_builds_it() -> None:
    mapping = {"openforge/computer-base:bookworm": "openforge/computer-base:bookworm",
               "debian:bookworm": "openforge/base:bookworm", "COPY --from=x /opt": "runtime mount"}
    present = {"openforge/base:bookworm"}
    line = unbuilt_local_image(mapping, lambda ref: ref in present)
    assert line == "FROM openforge/computer-base:bookworm: image not built here (run scripts/build-gui-images.sh)"
    present.add("openforge/computer-base:bookworm")
    assert unbuilt_local_image(mapping, lambda ref: ref in present) is None
    assert unbuilt_local_image({"ghcr.io/x/y": "ghcr.io/x/y"}, lambda ref: False) is None
