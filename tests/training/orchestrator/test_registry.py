"""Task images to a registry: push with the Docker SDK, existence checks over the registry
HTTP API v2 — against Debian's real docker-registry on loopback (scripts/start-registry.sh)
and a real Docker engine (scripts/start-dockerd.sh); skipped, with the reason printed, when
either is missing. Bearer-token auth is checked against a small fake token registry."""

from __future__ import annotations

import contextlib
import io
import json
import tarfile
import threading
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from tests.training.orchestrator.conftest import REGISTRY, registry_reason
from training.orchestrator.images import ImagePushError, push_task_image, remote_ref
from training.orchestrator.registry import (
    ImageRef,
    RegistryError,
    parse_ref,
    registry_has_image,
)


@pytest.fixture
def registry() -> str:
    reason = registry_reason()
    if reason:
        print(f"registry tests skipped: {reason}")
        pytest.skip(reason)
    return REGISTRY


@pytest.fixture
def docker_client() -> Iterator[Any]:
    import docker

    try:
        client = docker.from_env(timeout=60)
        client.ping()
    except Exception as exc:  # noqa: BLE001 - any failure means "no engine"
        reason = f"no Docker engine: {exc} (start one with scripts/start-dockerd.sh)"
        print(f"docker registry tests skipped: {reason}")
        pytest.skip(reason)
    yield client
    client.close()


def _remove(client: Any, *names: str) -> None:
    from docker.errors import ImageNotFound

    for name in names:
        with contextlib.suppress(ImageNotFound):
            client.images.remove(name, force=True)


def tiny_image(client: Any, tag: str) -> None:
    """A one-file image made with ``docker import`` (no base image or network needed)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        data = f"{tag}\n".encode()
        info = tarfile.TarInfo("hello.txt")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    repo, _, version = tag.rpartition(":")
    client.api.import_image_from_data(buf.getvalue(), repository=repo, tag=version)


def test_parse_ref() -> None:
    assert parse_ref("127.0.0.1:5000/openforge-task:abc") == ImageRef("127.0.0.1:5000", "openforge-task", "abc")
    assert parse_ref("localhost:5000/a/b") == ImageRef("localhost:5000", "a/b", "latest")
    assert parse_ref("ghcr.io/o/r@sha256:00ff") == ImageRef("ghcr.io", "o/r", "sha256:00ff")
    assert str(parse_ref("ghcr.io/o/r@sha256:00ff")) == "ghcr.io/o/r@sha256:00ff"
    with pytest.raises(ValueError, match="does not name a registry"):
        parse_ref("openforge-task:abc")
    assert remote_ref("openforge-task:abc", "127.0.0.1:5000/") == "127.0.0.1:5000/openforge-task:abc"


def test_unknown_tag_and_unreachable_registry(registry: str) -> None:
    assert registry_has_image(f"{registry}/openforge-task:never-pushed-{uuid.uuid4().hex[:8]}") is False
    with pytest.raises(RegistryError, match="registry 127.0.0.1:9"):
        registry_has_image("127.0.0.1:9/openforge-task:x", timeout=2)


@pytest.mark.docker
@pytest.mark.slow
def test_push_then_registry_has_it_and_it_pulls_back(registry: str, docker_client: Any) -> None:
    tag = f"openforge-task:test-{uuid.uuid4().hex[:12]}"
    tiny_image(docker_client, tag)
    remote = push_task_image(docker_client, tag, registry)
    try:
        assert remote == f"{registry}/{tag}"
        assert registry_has_image(remote) is True
        # Pull it back from the registry alone: drop both local names first.
        docker_client.images.remove(remote, force=True)
        docker_client.images.remove(tag, force=True)
        pulled = docker_client.images.pull(remote)
        assert remote in pulled.tags
        repo, _, version = tag.rpartition(":")
        pulled.tag(repo, tag=version)
        assert push_task_image(docker_client, tag, registry) == remote  # pushing again is harmless
    finally:
        _remove(docker_client, remote, tag)


@pytest.mark.docker
@pytest.mark.slow
def test_push_errors_are_one_line(docker_client: Any) -> None:
    with pytest.raises(ImagePushError, match=r"^push 127\.0\.0\.1:5000/openforge-task:missing-.*: no local image"):
        push_task_image(docker_client, f"openforge-task:missing-{uuid.uuid4().hex[:8]}", "127.0.0.1:5000")
    tag = f"openforge-task:nowhere-{uuid.uuid4().hex[:8]}"
    tiny_image(docker_client, tag)
    try:
        with pytest.raises(ImagePushError) as err:
            push_task_image(docker_client, tag, "127.0.0.1:9")  # nothing listens there
        assert str(err.value).startswith("push 127.0.0.1:9/openforge-task:nowhere-") and "\n" not in str(err.value)
    finally:
        _remove(docker_client, tag, f"127.0.0.1:9/{tag}")


class _TokenRegistry(BaseHTTPRequestHandler):
    """A fake registry that demands a bearer token (as Docker Hub / GHCR do)."""

    known: frozenset[str] = frozenset({"/v2/team/app/manifests/v1"})

    def log_message(self, *_args: Any) -> None:
        pass

    def do_GET(self) -> None:  # the token endpoint
        if self.path.startswith("/token?"):
            body = json.dumps({"token": "good-token"}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        else:
            self.send_response(404)
            self.end_headers()

    def do_HEAD(self) -> None:
        if self.headers.get("Authorization") != "Bearer good-token":
            port = self.server.server_address[1]
            self.send_response(401)
            self.send_header("WWW-Authenticate", f'Bearer realm="http://127.0.0.1:{port}/token",'
                             f'service="fake",scope="repository:team/app:pull"')
            self.end_headers()
            return
        self.send_response(200 if self.path in self.known else 404)
        self.end_headers()


def test_bearer_token_challenge_is_followed() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _TokenRegistry)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        host = f"127.0.0.1:{server.server_address[1]}"
        assert registry_has_image(f"{host}/team/app:v1") is True
        assert registry_has_image(f"{host}/team/app:v2") is False
    finally:
        server.shutdown()
        server.server_close()
